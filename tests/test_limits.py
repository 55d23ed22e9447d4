"""The input rules of ``helix_stream._limits``, one function at a time (the routes, the stores
and the executor use them; their own tests show the refusals end to end)."""

from __future__ import annotations

import json

import pytest

from helix_stream._limits import (
    MAX_JSON_DEPTH,
    check_json,
    check_key,
    check_session_id,
    check_text,
    show,
)
from helix_stream.errors import InvalidRequestError


@pytest.mark.parametrize("value", ["s", "parent/call_1", "é 🙂", "x" * 512, "a b"])
def test_valid_session_ids_come_back_unchanged(value: str) -> None:
    assert check_session_id(value) == value


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "is empty"),
        ("x" * 513, "longer than 512 characters"),
        ("a\x00b", "control character (U+0000 at position 1)"),
        ("a\tb", "control character (U+0009 at position 1)"),
        ("a\x9fb", "control character (U+009F at position 1)"),
        ("a\ud800", "lone surrogate (U+D800 at position 1)"),
        (42, "must be a string, not int"),
    ],
    ids=["empty", "too-long", "nul", "tab", "c1", "surrogate", "not-a-string"],
)
def test_invalid_session_ids_are_refused_with_what_is_wrong(value: object, says: str) -> None:
    with pytest.raises(InvalidRequestError, match="session id") as raised:
        check_session_id(value)
    assert says in raised.value.message
    assert raised.value.http_status == 400


def test_a_long_id_is_shown_cut_with_its_length() -> None:
    huge = "h" * 1_000_000
    with pytest.raises(InvalidRequestError) as raised:
        check_session_id(huge)
    assert len(raised.value.message) < 200
    assert "(1000000 characters)" in raised.value.message
    assert show("short") == "'short'"
    assert show("\ud800") == "'\\ud800'"  # escaped: a response can always encode it


def test_keys_follow_the_id_rules_up_to_256_characters() -> None:
    assert check_key(None) is None
    assert check_key("k" * 256) == "k" * 256
    for bad in ("", "k" * 257, "k\x00"):
        with pytest.raises(InvalidRequestError, match="key"):
            check_key(bad)


def test_text_may_hold_nul_but_not_a_lone_surrogate() -> None:
    assert check_text("a\x00b 🙂") == "a\x00b 🙂"
    with pytest.raises(InvalidRequestError, match="lone surrogate"):
        check_text("hi \udfff", what="the user's message")


def nested(levels: int) -> object:
    """``levels`` arrays, one inside the other."""
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


def test_check_json_counts_levels_and_names_where_a_surrogate_is() -> None:
    check_json(nested(MAX_JSON_DEPTH))
    with pytest.raises(InvalidRequestError, match=f"more than {MAX_JSON_DEPTH} levels"):
        check_json(nested(MAX_JSON_DEPTH + 1))
    with pytest.raises(InvalidRequestError, match=r"at messages\.0\.parts\.1\.text contains"):
        check_json({"messages": [{"parts": [{"text": "ok"}, {"text": "x\ud800"}]}]})
    with pytest.raises(InvalidRequestError) as raised:
        check_json(json.loads('{"items": [{"\\udc00": 1}]}'))
    assert "at items.0.'\\udc00' contains a lone surrogate" in raised.value.message
    raised.value.message.encode()  # the message itself is valid UTF-8


def test_check_json_walks_a_deep_value_without_recursion() -> None:
    # Far deeper than the interpreter's recursion limit: refused, never a RecursionError.
    with pytest.raises(InvalidRequestError, match="levels deep"):
        check_json(nested(100_000))
