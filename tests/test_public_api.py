"""The front door: ``__all__`` matches what is importable, and importing stays cheap."""

from __future__ import annotations

import subprocess
import sys

import helix_stream as hs


def test_every_public_name_resolves_and_all_is_exact() -> None:
    for name in hs.__all__:
        assert getattr(hs, name) is not None, name
    assert sorted(set(hs.__all__)) == hs.__all__
    assert set(dir(hs)) == set(hs.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        hs.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_pinned_names_of_the_design_are_public() -> None:
    pinned = {
        "instruction",
        "notice",
        "disable_tools",
        "enable_tools",
        "ContextItem",
        "ContextRow",
        "tool",
        "ToolContext",
        "stream_text",
        "generate_text",
        "step_count_is",
        "has_tool_call",
        "TelemetrySettings",
        "Agent",
        "StepContextLimits",
        "Executor",
        "SQLiteStore",
        "MemoryStore",
        "define_state",
        "define_hook",
        "current_session",
        "wrap_model",
        "default_settings",
        "wrap_acompletion",
        # the errors a caller catches by name: bad arguments, a structured answer, the store
        "InvalidRequestError",
        "OutputValidationError",
        "StoreUnavailableError",
        "StoreCommitUnknownError",
        # tool authorization
        "token_auth",
        "oauth_auth",
        "Token",
        "TokenRequest",
        "AuthorizationRequiredError",
        "TokenRejectedError",
    }
    assert pinned <= set(hs.__all__)


def test_importing_the_package_imports_neither_litellm_nor_the_server() -> None:
    code = "import sys, helix_stream as hs; hs.stream_text; hs.Executor; hs.oauth_auth; hs.EncryptedTokenStore; print(sorted(m for m in ('litellm', 'starlette', 'opentelemetry.sdk', 'httpx', 'cryptography') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
