# ruff: noqa: E501  (the advice strings read best on one line each)
"""MkDocs hook: the API reference pages and the errors page, generated from the package.

Each public module (``PUBLIC_MODULES``) gets a page with one entry per name of its ``__all__``
(mkdocstrings renders the signature and the docstring); ``helix_stream`` itself is split by the
subpackage that defines each name. The errors page is a table built from the error classes'
``code``, ``http_status`` and ``retryable``, with the advice in ``ADVICE``: a class without
advice fails the build, so the page cannot drift from ``helix_stream/errors/``.
tests/docs/test_reference.py checks the same lists against the package.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from collections import defaultdict
from typing import Any

from mkdocs.structure.files import File, Files

INDEX_PAGE = "api/index.md"
ERRORS_PAGE = "api/errors.md"

# Public modules and the page each one gets (the top-level package is split, below).
PUBLIC_MODULES: dict[str, str] = {
    "helix_stream.server": "Server: routes, app, FastAPI",
    "helix_stream.transformers": "Transformers: the UI message stream",
    "helix_stream.telemetry": "Telemetry",
    "helix_stream.testing": "Testing kit",
    "helix_stream.models": "Models: loading litellm",
    "helix_stream.models.demo": "The demo model",
    "helix_stream.store": "Stores",
    "helix_stream.auth": "Tool authorization",
    "helix_stream.sandbox": "Sandboxes and skills",
    "helix_stream.mcp": "MCP servers",
    "helix_stream.context": "Context items and rows",
    "helix_stream.chunks": "Chunks: the loop's stream",
    "helix_stream.steps": "Steps and tool results",
    "helix_stream.tools": "Tools",
    "helix_stream.prepare_step": "prepare_step",
    "helix_stream.middleware": "Model middleware",
    "helix_stream.hooks": "Hooks",
    "helix_stream.state": "State and the current session",
}

# Titles of the top-level package's groups (by the subpackage or module that defines a name).
GROUPS: dict[str, str] = {
    "loop": "The loop: stream_text, generate_text",
    "agent": "Agents",
    "session": "Sessions: the Executor",
    "tools": "Tools",
    "context": "Context items and rows",
    "store": "Stores",
    "auth": "Tool authorization",
    "sandbox": "Sandboxes and skills",
    "mcp": "MCP servers",
    "models": "Model middleware",
    "middleware": "Model middleware",
    "steps": "Steps and results",
    "chunks": "Steps and results",
    "state": "State and hooks",
    "hooks": "State and hooks",
    "telemetry": "Telemetry",
    "prepare_step": "The loop: stream_text, generate_text",
    "_options": "The loop: stream_text, generate_text",
    # The vocabulary layer's modules (docs/architecture.md, "The layers"): by what they serve.
    "_token": "Tool authorization",
    "_auth_strategy": "Tool authorization",
    "_sandbox_protocol": "Sandboxes and skills",
    "_tool_context": "Tools",
    "_tool_source": "Tools",
    "_step_parts": "Steps and results",
    "_cache_ledger": "Steps and results",
}

# What to do about each error (the rest of the errors table comes from the class itself).
ADVICE: dict[str, str] = {
    "HelixError": "The root: catch it to handle every error of the package.",
    "ContextValidationError": "Fix the context item (kind, size at most 32 KiB); nothing was queued.",
    "ToolContextError": "Pass the tool's entry in `tools_context`, valid for its `context_schema`.",
    "InvalidRequestError": "Fix the argument the message names; nothing was sent or written.",
    "PayloadTooLargeError": "Send a smaller body or file (the limit is in the message).",
    "AuthorizationStateError": "Start the sign-in again: the callback's `state` is unknown, used or expired.",
    "AuthenticationError": "Send the credentials your `authenticate` expects.",
    "AuthorizationRequiredError": "Send the user to the sign-in URL on the stream; the turn goes on after it.",
    "TokenRejectedError": "The service refused the token: sign in again (or give a new static token).",
    "AuthorizationFailedError": "The token endpoint refused the exchange or refresh: check client id, secret and redirect URI (`.error`).",
    "PermissionDeniedError": "The caller may not use this session: your `authorize` refused it.",
    "SessionNotFoundError": "Check the session id; a session is created by its first message.",
    "ContextKeyConflictError": "Use a new key, or send the same items the key was first used with.",
    "SessionBusyError": "A turn is running: wait for it (or stop it), then try again.",
    "StateError": "The session is not in a state for this call (the message says which); resume or retry it.",
    "SessionLeaseLostError": "Another process took the session over; this process's writes are refused. Nothing to do.",
    "CallNotFoundError": "Check the call id: only a `side_effects=True` tool's call of that session can be resolved.",
    "CallNotInFlightError": "The call has its result: nothing to resolve (resolve only an `outcome_unknown` call).",
    "CallAlreadySettledError": "The call was resolved already; a call is settled once. Nothing was written.",
    "UsageLimitExceededError": "A usage limit stopped the run before a model call: raise the limit (`usage_limits=`, `session_limits=`) to go on.",
    "NoActiveContextError": "Call it inside a tool, hook or step of a running session.",
    "ToolFailedError": "A tool raised; the model saw an error result. Look at the tool's logs.",
    "ToolProviderError": "The tool server (MCP) is unreachable: retry later or check the server.",
    "ToolProviderAuthError": "The tool server refused the credentials: fix the headers or sign-in.",
    "HookError": "A hook raised: fix the hook (its exception is the cause).",
    "FrameworkNotSupportedError": "The store or runtime cannot do this: pick one that can (the message says which).",
    "SandboxError": "The sandbox failed: see the message and the sandbox's logs.",
    "SandboxPathError": "Use a path inside `/workspace` (no `..`, no symlink out).",
    "SandboxNotFoundError": "The sandbox is gone: start a new session or sandbox.",
    "SandboxFileNotFoundError": "Check the file path in the sandbox.",
    "SandboxTimeoutError": "The command ran too long: raise its timeout or make it faster.",
    "SkillError": "The skill failed to load: see the message.",
    "SkillFormatError": "Fix the skill's SKILL.md front matter (name, description).",
    "SkillNotFoundError": "Use a skill name the agent has (`skills=`).",
    "StoreUnavailableError": "The database is unreachable or full: retry when it is back.",
    "StoreCommitUnknownError": "A commit may or may not have applied: read the session before retrying.",
    "ModelError": "The provider failed: see the message (the litellm exception is the cause).",
    "ModelAuthError": "Fix the provider API key.",
    "ModelBadRequestError": "Fix the request (parameters, context length) the provider refused.",
    "ModelRateLimitError": "Retried by `max_retries`; slow down or raise your quota.",
    "ModelTimeoutError": "Retried where safe; raise the `timeout=` limit in `.limit`, or use a faster model.",
    "ModelUnavailableError": "Retried by `max_retries`; the provider is down: try later or a fallback.",
    "OutputValidationError": "The structured answer did not validate: `.text` holds it; retry or loosen the schema.",
}


def _top_level_groups() -> dict[str, list[str]]:
    import helix_stream

    groups: dict[str, list[str]] = defaultdict(list)
    errors = set(importlib.import_module("helix_stream.errors").__all__)
    for name in helix_stream.__all__:
        if name in errors or name == "errors":
            continue
        obj = getattr(helix_stream, name)
        module = getattr(obj, "__module__", "helix_stream") or "helix_stream"
        part = module.split(".")[1] if module.count(".") else "loop"
        if name == "__version__" or part not in GROUPS:
            part = "loop"
        groups[GROUPS[part]].append(name)
    return groups


def _slug(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.split(":")[0].lower()).strip("-")


# Docstrings completed at import: the run options (helix_stream/loop/_options.py, LoopOptions) and the
# server options (helix_stream/server/_options.py, ServerOptions) are described once and written
# where "{run options}" / "{server options}" stands. The reference reads docstrings from the source,
# so such an entry gets the options listed after it, from the same single description.
_FILLED = {
    "{run options}": "helix_stream.loop._options.LoopOptions",
    "{server options}": "helix_stream.server._options.ServerOptions",
}


def _markers(obj: Any) -> list[str]:
    """The markers in ``obj``'s definition (read as text: no parsing, which CPython 3.11 does
    not do safely while another thread parses)."""
    try:
        source = inspect.getsourcefile(obj)
    except TypeError:
        return []
    name = getattr(obj, "__name__", "")
    if source is None or not name:
        return []
    with open(source, encoding="utf-8") as file:
        text = file.read()
    start = re.search(rf"^(?:async def|def|class) {re.escape(name)}\b", text, re.M)
    if start is None:
        return []
    end = re.search(r"^(?:async def|def|class|@)", text[start.end() :], re.M)
    body = text[start.start() : start.end() + end.start()] if end else text[start.start() :]
    return [marker for marker in _FILLED if marker in body]


def _options_list(dotted: str) -> str:
    module, _, name = dotted.rpartition(".")
    doc = getattr(importlib.import_module(module), name).__doc__ or ""
    section = doc.split("Attributes:\n", 1)[1].split("\n\n", 1)[0]
    items: list[str] = []
    for line in section.splitlines():
        if line.startswith("        ") and not line.startswith("         ") and ":" in line:
            names, _, text = line.strip().partition(":")
            items.append(f"- `{names}`:{text}")
        elif line.strip() and items:
            items[-1] += " " + line.strip()
    return "\n".join(items)


def _composed(obj: Any) -> bool:
    """The executor, made of one mixin per concern (``helix_stream/session/``): those bases are
    not exported, so their methods, the executor's API, belong on its entry."""
    if not inspect.isclass(obj):
        return False
    package = importlib.import_module("helix_stream")
    return obj.__module__.startswith("helix_stream.session.") and any(
        base.__module__.startswith("helix_stream.") and base.__name__ not in package.__all__
        for base in obj.__bases__
    )


def _entries(module: str, names: list[str]) -> str:
    mod = importlib.import_module(module)
    out = []
    for name in names:
        entry = f"::: {module}.{name}\n"
        if _composed(getattr(mod, name)):
            entry += "    options:\n      inherited_members: true\n"
        for marker in _markers(getattr(mod, name)):
            what = "run" if "run" in marker else "server"
            entry += (
                f"\n**The {what} options** `{name}` takes (described once, in "
                f"`{_FILLED[marker]}`):\n\n{_options_list(_FILLED[marker])}\n"
            )
        out.append(entry)
    return "\n".join(out)


class _PlaceholderFilter(logging.Filter):
    """griffe reads "{run options}" as an Args entry it cannot parse: the options are listed
    after the entry instead (above)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(marker in record.getMessage() for marker in _FILLED)


def error_rows() -> list[tuple[str, str, int, bool, str, str]]:
    """(class, code, HTTP status, retryable, meaning, what to do) for every error class."""
    errors = importlib.import_module("helix_stream.errors")
    rows = []
    for name in errors.__all__:
        cls = getattr(errors, name)
        if not (inspect.isclass(cls) and issubclass(cls, errors.HelixError)):
            continue
        if name not in ADVICE:
            raise ValueError(f"docs/_hooks/reference.py: no advice for {name} in ADVICE")
        meaning = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        rows.append((name, cls.code, cls.http_status, cls.retryable, meaning, ADVICE[name]))
    return rows


def _errors_page() -> str:
    lines = [
        "# Errors",
        "",
        "Every error the package raises is an `hs.HelixError` with a `code`, an `http_status` and",
        "`retryable`. The chat server answers with that status and the body",
        '`{"error": {"code": ..., "message": ...}}`. This table is generated from',
        "`helix_stream/errors/`; see also [Errors](../guides/wrapping-litellm.md#errors) in the",
        "wrapping guide (litellm's `except` clauses keep working).",
        "",
        "| class | code | HTTP | retryable | what it means | what to do |",
        "|---|---|---|---|---|---|",
    ]
    for name, code, status, retryable, meaning, advice in error_rows():
        lines.append(
            f"| [`{name}`](#helix_stream.errors.{name}) | `{code}` | {status} | "
            f"{'yes' if retryable else 'no'} | {meaning} | {advice} |"
        )
    errors = importlib.import_module("helix_stream.errors")
    lines += ["", "## The classes", "", _entries("helix_stream.errors", list(errors.__all__))]
    return "\n".join(lines)


def reference_pages() -> dict[str, str]:
    """Every generated page: its path under docs/ and its Markdown."""
    pages: dict[str, str] = {}
    index = [
        "# API reference",
        "",
        "Generated from the docstrings. `import helix_stream as hs` gives every name of the first",
        "list; the subpackages below hold the rest.",
        "",
        "## `helix_stream`",
        "",
    ]
    for title, names in sorted(_top_level_groups().items()):
        path = f"api/hs-{_slug(title)}.md"
        pages[path] = f"# {title}\n\nFrom `import helix_stream as hs`.\n\n" + _entries(
            "helix_stream", sorted(names)
        )
        index.append(f"- [{title}]({path.removeprefix('api/')})")
    index += [f"- [Errors]({ERRORS_PAGE.removeprefix('api/')})", "", "## Subpackages", ""]
    for module, title in PUBLIC_MODULES.items():
        path = f"api/{module.removeprefix('helix_stream.').replace('.', '-')}.md"
        names = list(importlib.import_module(module).__all__)
        pages[path] = (
            f"# {title}\n\n`{module}`\n\n::: {module}\n    options:\n      members: false\n      show_root_heading: false\n\n"
            + _entries(module, names)
        )
        index.append(f"- [`{module}`]({path.removeprefix('api/')}): {title}")
    pages[INDEX_PAGE] = "\n".join(index) + "\n"
    pages[ERRORS_PAGE] = _errors_page()
    return pages


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages to the site."""
    for path, text in reference_pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def on_config(config: Any) -> Any:
    """Put the generated reference pages into the navigation, after the index."""
    for logger in ("griffe", "mkdocs.plugins.griffe", "mkdocs.plugins.mkdocstrings_handlers"):
        logging.getLogger(logger).addFilter(_PlaceholderFilter())
    pages = reference_pages()
    for section in config["nav"]:
        if isinstance(section, dict) and "API reference" in section:
            extra = [p for p in pages if p not in (INDEX_PAGE, ERRORS_PAGE)]
            section["API reference"] += [{_title(pages[p]): p} for p in extra]
    return config


def _title(text: str) -> str:
    return text.splitlines()[0].lstrip("# ").strip()
