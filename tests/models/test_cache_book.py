"""The cache ledger's book (``models/_cache_book.py``): which requests ask Anthropic for its
cache diagnostics, how the beta header is merged, and what the book remembers."""

from __future__ import annotations

import pytest

from helix_stream.models._cache_book import DIAGNOSTICS_BETA, CacheBook, asks_diagnostics
from helix_stream.models._litellm import load_litellm


@pytest.fixture(scope="module", autouse=True)
def _litellm() -> None:
    load_litellm()


@pytest.mark.parametrize(
    ("model", "extra", "wanted", "asks"),
    [
        pytest.param("anthropic/claude-sonnet-4-5", {}, None, True, id="anthropic-own-address"),
        pytest.param(
            "anthropic/claude-sonnet-4-5", {"api_base": "http://gw"}, None, False, id="gateway"
        ),
        pytest.param(
            "anthropic/claude-sonnet-4-5", {"api_base": "http://gw"}, True, True, id="gateway-asked"
        ),
        pytest.param("anthropic/claude-sonnet-4-5", {}, False, False, id="never"),
        pytest.param("vertex_ai/claude-3-5-sonnet@20240620", {}, True, False, id="vertex"),
        pytest.param(
            "bedrock/anthropic.claude-3-sonnet-20240229-v1:0", {}, True, False, id="bedrock"
        ),
        pytest.param(
            "bedrock/invoke/anthropic.claude-3-sonnet-20240229-v1:0",
            {},
            True,
            False,
            id="bedrock-invoke",
        ),
        pytest.param("azure_ai/claude-sonnet-4-5", {}, True, False, id="azure"),
        pytest.param("gpt-4o", {}, True, False, id="openai"),
        pytest.param("gemini/gemini-2.0-flash", {}, True, False, id="gemini"),
        pytest.param("helix/demo", {}, True, False, id="demo"),
        pytest.param("my-router-group", {}, True, False, id="unplaceable"),
    ],
)
def test_only_anthropics_own_api_is_asked_for_diagnostics(
    model: str, extra: dict[str, str], wanted: bool | None, asks: bool
) -> None:
    assert asks_diagnostics({"model": model, **extra}, wanted) is asks


def test_the_beta_joins_the_callers_own_betas_and_their_own_diagnostics_win() -> None:
    book = CacheBook()
    params = {
        "model": "anthropic/claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "Hi"}],
        "extra_headers": {"anthropic-beta": "context-1m-2025-08-07", "x-app": "1"},
    }
    _, sent = book.entry("s1", params, diagnostics=None)
    assert sent["diagnostics"] == {"previous_message_id": None}
    assert sent["extra_headers"] == {
        "anthropic-beta": f"context-1m-2025-08-07,{DIAGNOSTICS_BETA}",
        "x-app": "1",
    }
    assert params["extra_headers"]["anthropic-beta"] == "context-1m-2025-08-07"  # not changed
    own = {**params, "diagnostics": {"previous_message_id": "msg_mine"}}
    _, sent = book.entry("s1", own, diagnostics=None)
    assert sent["diagnostics"] == {"previous_message_id": "msg_mine"}


def test_the_next_request_names_the_last_answer_and_a_failed_attempt_passes_it_on() -> None:
    book = CacheBook()
    params = {
        "model": "anthropic/claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    entry, _ = book.entry("s1", params, diagnostics=None)
    entry.book.answered(entry.key, "msg_1")
    _, sent = book.entry("s1", params, diagnostics=None)  # an attempt that got no answer
    assert sent["diagnostics"] == {"previous_message_id": "msg_1"}
    _, sent = book.entry("s1", params, diagnostics=None)  # its retry
    assert sent["diagnostics"] == {"previous_message_id": "msg_1"}


def test_the_book_is_per_session_and_model_and_bounded() -> None:
    book = CacheBook(limit=2)
    base = {"messages": [{"role": "user", "content": "Hi"}]}
    first, _ = book.entry("s1", {**base, "model": "gpt-4o"}, diagnostics=False)
    again, _ = book.entry("s1", {**base, "model": "gpt-4o"}, diagnostics=False)
    other_model, _ = book.entry("s1", {**base, "model": "gpt-4o-mini"}, diagnostics=False)
    other_session, _ = book.entry("s2", {**base, "model": "gpt-4o"}, diagnostics=False)
    assert [e.compared for e in (first, again, other_model, other_session)] == [
        False,
        True,
        False,
        False,
    ]
    forgotten, _ = book.entry("s1", {**base, "model": "gpt-4o"}, diagnostics=False)
    assert forgotten.compared is False  # the least recently used pair went first
