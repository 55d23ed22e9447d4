"""What a lifecycle hook receives: the data of ``action.result`` and ``message.completed``, and
``HookContext``'s ``agent``, ``channel``, ``get_sandbox()`` and ``get_skill()``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, text, tool_calls


class City(BaseModel):
    city: str


class Weather(BaseModel):
    city: str
    temperature: int


def get_weather(input: City) -> Weather:
    if input.city == "Atlantis":
        raise LookupError("no such city")
    return Weather(city=input.city, temperature=21)


WEATHER = hs.tool(name="get_weather", input_schema=City, execute=get_weather)
OTHER = hs.tool(name="other", input_schema=City, execute=lambda i: {"temperature": 99})


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name=kw.pop("name", "observed"),
        system="System.",
        model="openai/loopback",
        tools=kw.pop("tools", [WEATHER, OTHER]),
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
        **kw,
    )


async def test_action_result_carries_the_output_or_the_error(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    events: list[dict[str, Any]] = []
    picked: list[Any] = []

    def on_result(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        events.append(dict(event.data))
        picked.append(hs.tool_result_from(event.data["result"], WEATHER))

    hook = hs.define_hook(events={"action.result": on_result})
    loopback.script(
        tool_calls(
            ("get_weather", {"city": "Paris"}),
            ("get_weather", {"city": "Atlantis"}),
            ("other", {"city": "Oslo"}),
        ),
        text("done"),
    )
    await executor.run(agent(loopback, hooks=[hook]), "s", "weather").consume()
    ok, failed, other = events
    assert (ok["status"], ok["output"], ok["error"]) == (
        "output",
        {"city": "Paris", "temperature": 21},
        None,
    )
    assert failed["status"] == "error" and failed["output"] is None
    assert "LookupError: no such city" in failed["error"]
    assert other["tool_name"] == "other" and other["output"] == {"temperature": 99}
    assert (
        isinstance(ok["result"], hs.ToolResult) and ok["result"].tool_call_id == ok["tool_call_id"]
    )
    assert picked == [{"city": "Paris", "temperature": 21}, None, None]
    assert Weather.model_validate(picked[0]) == Weather(city="Paris", temperature=21)


async def test_message_completed_carries_the_models_message(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    events: list[dict[str, Any]] = []
    hook = hs.define_hook(events={"message.completed": lambda e, c: events.append(dict(e.data))})
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("Sunny, 21."))
    await executor.run(agent(loopback, hooks=[hook]), "s", "weather").consume()
    calls, answer = events
    assert calls["text"] == "" and calls["message"]["role"] == "assistant"
    [call] = calls["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert answer["text"] == "Sunny, 21."
    assert answer["message"] == {"role": "assistant", "content": "Sunny, 21."}
    assert answer["step"] == 1


async def test_hook_context_has_the_agent_and_the_channel(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[tuple[str, str, str]] = []

    def started(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        seen.append((ctx.agent.name, ctx.channel.kind, ctx.session.id))

    hook = hs.define_hook(events={"turn.started": started})
    child = agent(loopback, name="helper", tools=[], hooks=[hook])
    parent = agent(loopback, tools=[child.as_tool()], hooks=[hook])
    loopback.script(
        tool_calls(("helper", {"prompt": "help"}), call_ids=["c1"]), text("child"), text("ok")
    )
    await executor.run(parent, "s", "go").consume()
    loopback.script(text("over http"))
    app = create_app(executor, parent)
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post("/api/chat", json={"id": "web", "messages": [message]})
    assert response.status_code == 200 and '"finishReason":"stop"' in response.text
    assert seen == [
        ("observed", "python", "s"),
        ("helper", "subagent", "s/c1"),
        ("observed", "http", "web"),
    ]


async def test_hook_context_reaches_the_sandbox_and_the_skills(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    seen: list[Any] = []

    async def completed(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        sandbox = await ctx.get_sandbox()
        listing = await sandbox.run("ls skills/notes")
        skill = await ctx.get_skill("notes").file("SKILL.md").text()
        seen.append((listing.stdout.split(), skill.splitlines()[-1]))

    notes = hs.Skill("notes", "How to take notes.", "Write short lines.")
    hook = hs.define_hook(events={"turn.completed": completed})
    a = agent(loopback, hooks=[hook], skills=[notes], sandbox=hs.LocalSandbox(tmp_path / "sb"))
    loopback.script(text("ok"))
    await executor.run(a, "s", "go").consume()
    assert seen == [(["SKILL.md"], "Write short lines.")]


async def test_node_id_and_continuation_token_are_none_where_they_do_not_apply(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[tuple[Any, Any]] = []

    def started(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        seen.append((ctx.agent.node_id, ctx.channel.continuation_token))

    loopback.script(text("ok"))
    hook = hs.define_hook(events={"turn.started": started})
    await executor.run(agent(loopback, hooks=[hook]), "s", "go").consume()
    assert seen == [(None, None)]


async def test_a_raising_handler_never_stops_the_others_of_the_same_event(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[tuple[str, str]] = []

    def boom(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        seen.append(("boom", event.type))
        raise RuntimeError("hook bug")

    def typed(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        seen.append(("typed", event.type))

    def audit(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        seen.append(("*", event.type))

    hooks = [
        hs.define_hook(events={"step.completed": boom}),
        hs.define_hook(events={"step.completed": typed}),
        hs.define_hook(events={"*": audit}),
    ]
    loopback.script(text("ok"))
    result = executor.run(agent(loopback, hooks=hooks), "s", "go")
    await result.consume()
    # The raising handler is reported: it fails the turn (the session model's policy) ...
    assert isinstance(result.error, hs.errors.HookError)
    assert result.error.event == "step.completed"
    assert (await executor.session("s")).status == "failed"
    # ... but the later handlers of the same event, the "*" audit hook too, all saw it.
    at = seen.index(("boom", "step.completed"))
    assert seen[at : at + 3] == [
        ("boom", "step.completed"),
        ("typed", "step.completed"),
        ("*", "step.completed"),
    ]
    assert ("*", "turn.failed") in seen


async def test_settled_calls_fire_action_result_and_the_turn_is_bracketed_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[tuple[str, Any]] = []

    def on_event(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        data = event.data
        if event.type == "action.result":
            seen.append((event.type, (data["tool_name"], data["status"], data["output"])))
        elif event.type in ("turn.started", "turn.completed", "session.waiting"):
            seen.append((event.type, ctx.session.turn.sequence))

    hook = hs.define_hook(events={"*": on_event})
    deploy = hs.tool(
        name="deploy",
        input_schema=City,
        execute=lambda i: f"deployed {i.city}",
        needs_approval=True,
    )
    a = agent(loopback, tools=[deploy], hooks=[hook])
    loopback.script(tool_calls(("deploy", {"city": "Paris"}), ("deploy", {"city": "Oslo"})))
    await executor.run(a, "s", "deploy both").consume()
    await executor.respond_to_approval("s", "approval-call_0_deploy", approved=True)
    await executor.respond_to_approval("s", "approval-call_1_deploy", approved=False, reason="no")
    loopback.script(text("done"))
    assert await executor.run(a, "s", None).text() == "done"
    assert seen == [
        ("turn.started", 1),
        ("session.waiting", 1),
        # The resumed run carries the same turn on: no second turn.started; the approved call
        # that ran and the denied one both reach an audit hook on action.result.
        ("action.result", ("deploy", "output", "deployed Paris")),
        ("action.result", ("deploy", "denied", None)),
        ("turn.completed", 1),
    ]
    loopback.script(text("next"))
    await executor.run(a, "s", "and now?").consume()
    assert seen[-2:] == [("turn.started", 2), ("turn.completed", 2)]
