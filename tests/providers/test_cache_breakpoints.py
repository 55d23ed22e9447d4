"""Automatic cache breakpoints on the wire (``prompt_cache="auto"``, the default).

On Anthropic's wire format: every request marks its tools, its system prompt, the end of the
previous request and its own last block — at most 4 markers — and, markers removed, every
request is still a prefix of the next. The loopback server simulates Anthropic's cache, so the
test also checks what the markers are for: each request reads all of the previous one.
``prompt_cache=False`` sends no marker; a ``prepare_step`` override wins for its step. Bedrock
gets the same markers as ``cachePoint`` blocks; OpenAI, Gemini and Mistral get none.
"""

from __future__ import annotations

from typing import Any

import pytest

import helix_stream as hs
from helix_stream.errors import InvalidRequestError
from tests.providers._read import assert_prefix_chain, prefix_form, strip_markers
from tests.providers._session import RowSession, row
from tests.providers._wire import Say
from tests.providers.anthropic_server import AnthropicServer, cache_blocks, rough_tokens
from tests.providers.conftest import Provider
from tests.providers.test_rows_on_the_wire import lookup_tool, run_session

MARK = {"type": "ephemeral"}


def marked_places(body: dict[str, Any]) -> list[str]:
    """Where an Anthropic body carries ``cache_control``: tool/system/message block names."""
    places = [f"tool {i}" for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    places += [
        f"system {i}" for i, b in enumerate(body.get("system") or []) if "cache_control" in b
    ]
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        for b, block in enumerate(content if isinstance(content, list) else []):
            assert "cache_control" not in str(strip_markers(block))
            if "cache_control" in block:
                places.append(f"message {m} block {b}")
    return places


def last_block(body: dict[str, Any]) -> str:
    messages = body["messages"]
    return f"message {len(messages) - 1} block {len(messages[-1]['content']) - 1}"


def end_of_previous(body: dict[str, Any]) -> str | None:
    messages = body["messages"]
    last_assistant = max(
        (i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None
    )
    if last_assistant is None:
        return None
    before = messages[last_assistant - 1]
    return f"message {last_assistant - 1} block {len(before['content']) - 1}"


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
async def test_auto_marks_tools_system_previous_end_and_last_block(provider: Provider) -> None:
    await run_session(provider)
    bodies = provider.server.bodies()
    assert len(bodies) == 6
    for body in bodies:
        places = marked_places(body)
        assert len(places) <= 4
        assert body["tools"][-1]["cache_control"] == MARK
        assert body["system"][-1]["cache_control"] == MARK
        expected = {"tool 0", f"system {len(body['system']) - 1}", last_block(body)}
        if (previous := end_of_previous(body)) is not None:
            expected.add(previous)
        assert set(places) == expected
    assert [len(marked_places(b)) for b in bodies] == [3, 4, 4, 4, 4, 4]
    # Markers removed, the chain holds: earlier blocks are otherwise unchanged.
    assert_prefix_chain("anthropic", bodies)


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
async def test_each_request_reads_all_of_the_previous_one_from_the_simulated_cache(
    provider: Provider,
) -> None:
    await run_session(provider)
    server = provider.server
    assert isinstance(server, AnthropicServer)
    bodies = server.bodies()
    assert server.usage[0].cache_read_input_tokens == 0
    assert server.usage[0].cache_creation_input_tokens == server.usage[0].total
    for n in range(1, len(bodies)):
        previous = sum(rough_tokens(data) for data, _ in cache_blocks(bodies[n - 1]))
        usage = server.usage[n]
        assert usage.cache_read_input_tokens == previous
        assert usage.input_tokens == 0  # the last block is marked: all the rest is written


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
async def test_prompt_cache_false_sends_no_marker_and_reads_nothing(provider: Provider) -> None:
    session = RowSession(
        llm=provider.llm, family="anthropic", system="You are a test bot.", prompt_cache=False
    )
    session.tools = [lookup_tool(session)]
    provider.server.script(Say(calls=[("lookup", {"query": "x"})]), Say(text="a"), Say(text="b"))
    await session.turn("one")
    session.add_context(row("instruction", "app", "Be brief."))
    await session.turn("two")
    bodies = provider.server.bodies()
    assert len(bodies) == 3
    assert all(b == strip_markers(b) for b in bodies)
    server = provider.server
    assert isinstance(server, AnthropicServer)
    assert [u.cache_read_input_tokens for u in server.usage] == [0, 0, 0]
    assert_prefix_chain("anthropic", bodies)


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
async def test_a_prepare_step_override_wins_for_its_step(provider: Provider) -> None:
    def off_for_step_one(step: Any) -> dict[str, Any] | None:
        return {"prompt_cache": False} if step.step_number == 1 else None

    session = RowSession(
        llm=provider.llm,
        family="anthropic",
        system="You are a test bot.",
        prepare_step=[off_for_step_one],
    )
    session.tools = [lookup_tool(session)]
    provider.server.script(Say(calls=[("lookup", {"query": "x"})]), Say(text="a"))
    await session.turn("one")
    first, second = provider.server.bodies()
    assert marked_places(first) and not marked_places(second)
    assert "prompt_cache" not in first and "prompt_cache" not in second  # not sent to litellm


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
async def test_a_default_off_is_turned_on_by_a_prepare_step_override(provider: Provider) -> None:
    session = RowSession(
        llm=provider.llm,
        family="anthropic",
        system="You are a test bot.",
        prompt_cache=False,
        prepare_step=[lambda step: {"prompt_cache": "auto"}],
    )
    provider.server.script(Say(text="a"))
    await session.turn("one")
    (body,) = provider.server.bodies()
    assert marked_places(body) == ["system 0", "message 0 block 0"]


@pytest.mark.parametrize("provider", ["bedrock"], indirect=True)
async def test_bedrock_gets_cache_points_at_the_same_places(provider: Provider) -> None:
    await run_session(provider)
    bodies = provider.server.bodies()
    for body in bodies:
        points = [b for b in body["system"] if "cachePoint" in b]
        points += [t for t in body["toolConfig"]["tools"] if "cachePoint" in t]
        messages = body["messages"]
        points += [b for m in messages for b in m["content"] if "cachePoint" in b]
        assert 3 <= len(points) <= 4
        assert "cachePoint" in messages[-1]["content"][-1]
        assert (
            "cachePoint" in body["system"][-1] and "cachePoint" in body["toolConfig"]["tools"][-1]
        )
    assert_prefix_chain("bedrock", bodies)


@pytest.mark.parametrize("provider", ["openai", "gemini", "mistral"], indirect=True)
async def test_implicit_caching_providers_get_no_markers(provider: Provider) -> None:
    await run_session(provider)
    bodies = provider.server.bodies()
    assert bodies and all(b == strip_markers(b) for b in bodies)
    assert all("cachedContent" not in b and "cached_content" not in b for b in bodies)
    heads = {prefix_form(provider.family, b)[0] for b in bodies}
    assert len(heads) == 1


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
async def test_a_step_longer_than_the_lookback_still_reads_the_previous_request(
    provider: Provider,
) -> None:
    # 12 parallel calls add 24 blocks in one step: more than the 20 blocks Anthropic looks
    # back from a marker. The marker on the previous request's end is what still finds it.
    session = RowSession(llm=provider.llm, family="anthropic", system="You are a test bot.")
    session.tools = [lookup_tool(session)]
    calls = [("lookup", {"query": f"q{i}"}) for i in range(12)]
    provider.server.script(Say(calls=calls), Say(text="done"))
    await session.turn("look up twelve things")
    server = provider.server
    assert isinstance(server, AnthropicServer)
    first, second = server.bodies()
    new_blocks = len(cache_blocks(second)) - len(cache_blocks(first))
    assert new_blocks > server.cache.lookback
    previous = sum(rough_tokens(data) for data, _ in cache_blocks(first))
    assert server.usage[1].cache_read_input_tokens == previous


async def test_generate_text_takes_prompt_cache_and_bad_values_are_refused_before_any_call(
    anthropic: AnthropicServer,
) -> None:
    anthropic.script(Say(text="a"), Say(text="b"))
    await hs.generate_text(**anthropic.llm(), system="S", prompt="x")
    await hs.generate_text(**anthropic.llm(), system="S", prompt="x", prompt_cache=False)
    marked, unmarked = anthropic.bodies()
    assert marked != strip_markers(marked) and unmarked == strip_markers(unmarked)
    with pytest.raises(InvalidRequestError):
        hs.stream_text(**anthropic.llm(), prompt="x", prompt_cache="always")
    with pytest.raises(InvalidRequestError):
        hs.Agent(name="a", prompt_cache="always")  # type: ignore[arg-type]
    bad = hs.stream_text(
        **anthropic.llm(), prompt="x", prepare_step=lambda step: {"prompt_cache": "yes"}
    )
    with pytest.raises(InvalidRequestError):
        await bad.text()
    assert len(anthropic.requests) == 2
