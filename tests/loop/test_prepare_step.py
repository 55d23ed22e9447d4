"""prepare_step (the step middleware chain) and runtime context, on the request bytes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from tests.loopback import LoopbackServer, text, tool_calls


class CityInput(BaseModel):
    city: str


def weather() -> hs.Tool:
    return hs.tool(name="get_weather", input_schema=CityInput, execute=lambda i: "sunny")


def other() -> hs.Tool:
    return hs.tool(name="other", input_schema=CityInput, execute=lambda i: "other")


@pytest.mark.parametrize(
    ("override", "check"),
    [
        pytest.param({"temperature": 0.1}, lambda b: b["temperature"] == 0.1, id="litellm-param"),
        pytest.param(
            {"tool_choice": "required"}, lambda b: b["tool_choice"] == "required", id="tool_choice"
        ),
        pytest.param(
            {"active_tools": ["other"]},
            lambda b: [t["function"]["name"] for t in b["tools"]] == ["other"],
            id="active_tools",
        ),
        pytest.param(
            {"system": "New system."},
            lambda b: b["messages"][0] == {"role": "system", "content": "New system."},
            id="system",
        ),
        pytest.param(
            {"messages": [{"role": "user", "content": "replaced"}]},
            lambda b: b["messages"][1:] == [{"role": "user", "content": "replaced"}],
            id="messages",
        ),
        pytest.param(
            {"model": "openai/other-model"}, lambda b: b["model"] == "other-model", id="model"
        ),
    ],
)
async def test_each_prepare_step_field_reaches_the_request(
    loopback: LoopbackServer, override: dict[str, Any], check: Any
) -> None:
    loopback.script(text("ok"))
    await hs.generate_text(
        **loopback.llm(),
        system="Sys.",
        prompt="hi",
        tools=[weather(), other()],
        prepare_step=lambda step: override,
    )
    body = loopback.bodies()[0]
    assert check(body), body


async def test_step_only_overrides_do_not_carry_to_the_next_step(loopback: LoopbackServer) -> None:
    loopback.script(tool_calls(("get_weather", {"city": "P"})), text("ok"))

    def prepare(step: hs.StepInput) -> dict[str, Any] | None:
        return {"temperature": 0.9, "system": "First step only."} if step.step_number == 0 else None

    await hs.generate_text(
        **loopback.llm(), system="Sys.", prompt="hi", tools=[weather()], prepare_step=prepare
    )
    first, second = loopback.bodies()
    assert first["temperature"] == 0.9 and first["messages"][0]["content"] == "First step only."
    assert "temperature" not in second and second["messages"][0]["content"] == "Sys."


async def test_prepare_step_sees_step_number_steps_messages_and_model(
    loopback: LoopbackServer,
) -> None:
    seen: list[tuple[int, int, int, str]] = []

    async def prepare(step: hs.StepInput) -> None:
        seen.append((step.step_number, len(step.steps), len(step.messages), str(step.model)))

    loopback.script(tool_calls(("get_weather", {"city": "P"})), text("ok"))
    await hs.generate_text(**loopback.llm(), prompt="hi", tools=[weather()], prepare_step=prepare)
    assert seen == [(0, 0, 1, "openai/loopback"), (1, 1, 3, "openai/loopback")]


async def test_runtime_context_from_prepare_step_carries_forward(loopback: LoopbackServer) -> None:
    seen: list[dict[str, Any]] = []

    def prepare(step: hs.StepInput) -> dict[str, Any]:
        seen.append(dict(step.runtime_context))
        return {
            "runtime_context": {**step.runtime_context, "count": step.runtime_context["count"] + 1}
        }

    steps: list[Any] = []
    loopback.script(
        tool_calls(("get_weather", {"city": "P"})),
        tool_calls(("get_weather", {"city": "Q"})),
        text("ok"),
    )
    await hs.generate_text(
        **loopback.llm(),
        prompt="hi",
        tools=[weather()],
        runtime_context={"count": 0},
        prepare_step=prepare,
        on_step_finish=lambda s: steps.append(s.runtime_context),
    )
    assert seen == [{"count": 0}, {"count": 1}, {"count": 2}]
    assert steps == [{"count": 1}, {"count": 2}, {"count": 3}]


async def test_a_chain_of_step_middleware_sees_earlier_overrides(loopback: LoopbackServer) -> None:
    order: list[str] = []

    def first(step: hs.StepInput) -> dict[str, Any]:
        order.append("first")
        return {
            "messages": [*step.messages, {"role": "user", "content": "added by first"}],
            "temperature": 0.5,
        }

    def second(step: hs.StepInput) -> dict[str, Any]:
        order.append("second:" + step.messages[-1]["content"])
        return {"temperature": 0.7}

    loopback.script(text("ok"))
    await hs.generate_text(**loopback.llm(), prompt="hi", prepare_step=[first, second])
    body = loopback.bodies()[0]
    assert order == ["first", "second:added by first"]
    assert body["temperature"] == 0.7
    assert body["messages"][-1] == {"role": "user", "content": "added by first"}


async def test_runtime_context_is_never_sent(loopback: LoopbackServer) -> None:
    secret = "RUNTIME-SECRET-7f1c"

    class Ctx(BaseModel):
        key: str

    seen: list[Any] = []
    t = hs.tool(
        name="get_weather",
        input_schema=CityInput,
        context_schema=Ctx,
        execute=lambda i, ctx: seen.append(ctx.context) or "ok",
    )
    loopback.script(tool_calls(("get_weather", {"city": "P"})), text("ok"))
    await hs.generate_text(
        **loopback.llm(),
        prompt="hi",
        tools=[t],
        tools_context={"get_weather": {"key": "k"}},
        runtime_context={"token": secret, "nested": {"deep": secret}},
        prepare_step=lambda step: {"runtime_context": {**step.runtime_context, "more": secret}},
    )
    assert len(loopback.requests) == 2
    assert all(secret.encode() not in raw for raw in loopback.requests)
    # ...and a tool sees only its own context, never the runtime context.
    assert seen[0].model_dump() == {"key": "k"}
