"""The offer snapshot and the name rule: pure, no server and no ``mcp`` package needed."""

from __future__ import annotations

import re

import pytest

from helix_stream.errors import InvalidRequestError
from helix_stream.mcp import SEPARATOR, MCPOffer, MCPToolSpec
from helix_stream.mcp._names import check_server_name, offered_names
from helix_stream.mcp._offer import make_offer

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI's (and Anthropic's) rule
LISTED = [
    {
        "name": "search_issues",
        "description": "Search issues.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    },
    {"name": "repo.get", "inputSchema": {"type": "object", "properties": {}}},
]


def test_offered_names_join_prefix_and_tool_with_a_separator_every_provider_accepts() -> None:
    names = offered_names("github", ["search_issues", "repo.get", "a/b c", "x" * 80])
    assert names["search_issues"] == f"github{SEPARATOR}search_issues" == "github__search_issues"
    assert names["repo.get"] == "github__repo_get"
    assert names["a/b c"] == "github__a_b_c"
    long = names["x" * 80]
    assert len(long) == 64 and long.startswith("github__xxx")
    assert all(PROVIDER_NAME.match(name) for name in names.values())


def test_names_that_would_collide_both_get_a_digest_whatever_the_order() -> None:
    first = offered_names("s", ["a.b", "a/b", "c"])
    assert first == offered_names("s", ["c", "a/b", "a.b"])
    assert first["c"] == "s__c"
    assert first["a.b"] != first["a/b"]
    assert first["a.b"].startswith("s__a_b_") and first["a/b"].startswith("s__a_b_")


def test_without_a_prefix_a_name_starts_with_a_letter_or_underscore() -> None:
    assert offered_names("", ["9lives", "ok"]) == {"9lives": "_9lives", "ok": "ok"}


@pytest.mark.parametrize("name", ["", "9x", "a__b", "a.b", "x" * 33, None, "gh hub"])
def test_a_server_name_that_cannot_prefix_tools_is_refused(name: object) -> None:
    with pytest.raises(InvalidRequestError, match="must start with a letter"):
        check_server_name(name)


def test_an_offer_is_sorted_by_offered_name_and_keeps_both_names() -> None:
    offer = make_offer("github", "github", LISTED)
    assert offer.names() == ("github__repo_get", "github__search_issues")
    spec = offer.tools[1]
    assert (spec.remote_name, spec.description) == ("search_issues", "Search issues.")
    assert spec.input_schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert spec.annotations == {"readOnlyHint": True}
    assert offer.tools[0].description == "" and offer.tools[0].annotations == {}


def test_a_tool_listed_twice_is_offered_once() -> None:
    offer = make_offer("s", "s", [LISTED[0], {**LISTED[0], "description": "second"}])
    assert [(t.name, t.description) for t in offer.tools] == [
        ("s__search_issues", "Search issues.")
    ]


def test_encode_then_decode_gives_the_same_offer_and_the_same_bytes() -> None:
    offer = make_offer("github", "gh", LISTED)
    text = offer.encode()
    again = MCPOffer.decode(text)
    assert again == offer
    assert again.encode() == text
    assert MCPOffer.decode(text.encode()) == offer


def test_the_schema_keeps_the_servers_key_order_through_the_snapshot() -> None:
    schema = {"type": "object", "required": ["b"], "properties": {"b": {}, "a": {}}}
    offer = make_offer("s", "s", [{"name": "t", "inputSchema": schema}])
    decoded = MCPOffer.decode(offer.encode()).tools[0]
    assert list(decoded.input_schema) == ["type", "required", "properties"]
    assert list(decoded.input_schema["properties"]) == ["b", "a"]
    assert decoded.schema_json == offer.tools[0].schema_json


def test_unavailable_names_the_offered_tools_the_server_no_longer_lists() -> None:
    offer = make_offer("github", "github", LISTED)
    assert offer.unavailable(["search_issues", "repo.get", "new_tool"]) == frozenset()
    assert offer.unavailable(["search_issues"]) == {"github__repo_get"}
    assert offer.unavailable([]) == set(offer.names())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not an encoded MCP offer"),
        ('{"format": "helix.mcp.offer/1", "server": "s"}', "tools: Field required"),
        ('{"format": "other/9", "server": "s", "tools": []}', "format 'other/9'"),
        ('{"format": "helix.mcp.offer/1", "server": "s", "tools": [], "extra": 1}', "extra"),
        (
            '{"format": "helix.mcp.offer/1", "server": "9s", "tools": []}',
            "must start with a letter",
        ),
    ],
)
def test_decoding_what_is_not_an_offer_is_a_clear_error(text: str, problem: str) -> None:
    with pytest.raises(InvalidRequestError, match=problem):
        MCPOffer.decode(text)


def test_an_offer_refuses_duplicate_or_unsorted_tools() -> None:
    spec = MCPToolSpec(name="s__a", remote_name="a", description="", schema_json="{}")
    other = MCPToolSpec(name="s__b", remote_name="b", description="", schema_json="{}")
    with pytest.raises(InvalidRequestError, match="distinct names, in order"):
        MCPOffer(server="s", tools=(spec, spec))
    with pytest.raises(InvalidRequestError, match="distinct names, in order"):
        MCPOffer(server="s", tools=(other, spec))
