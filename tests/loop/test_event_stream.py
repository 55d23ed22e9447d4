"""The run's one event stream: each moment is emitted once, and telemetry, hooks and the
callbacks are its subscribers (real HTTP through litellm to the loopback model)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import helix_stream as hs
from helix_stream._event_stream import EventStream, RunEvent
from tests.loopback import LoopbackServer, text, tool_calls


class City(BaseModel):
    city: str


WEATHER = hs.tool(name="weather", input_schema=City, execute=lambda i: {"temp": 21})


@pytest.fixture
def emitted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, list[str]]]]:
    """Every emission of every run: the event's kind and the subscribers it reached."""
    seen: list[tuple[str, list[str]]] = []
    emit = EventStream.emit

    async def counting(self: EventStream, event: RunEvent) -> None:
        reached = [type(s).__name__ for s in self._by_kind.get(event.kind, ())]
        seen.append((event.kind, reached))
        await emit(self, event)

    monkeypatch.setattr(EventStream, "emit", counting)
    yield seen


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="observed",
        system="System.",
        model="openai/loopback",
        tools=[WEATHER],
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
        **kw,
    )


async def test_a_step_end_reaches_hooks_and_callbacks_through_one_emission(
    loopback: LoopbackServer, emitted: list[tuple[str, list[str]]]
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: Counter[str] = Counter()

    def count(name: str) -> Any:
        return lambda *args: seen.update([name])

    hook = hs.define_hook(events={"step.completed": count("hook"), "*": count("*")})
    bot = agent(
        loopback,
        hooks=[hook],
        telemetry=hs.TelemetrySettings(tracer_provider=provider),
    )
    loopback.script(tool_calls(("weather", {"city": "Paris"})), text("Sunny."))
    executor = hs.Executor(hs.MemoryStore())
    run = executor.run(
        bot,
        "s",
        "weather?",
        on_step_end=count("on_step_end"),
        on_step_finish=count("on_step_finish"),
        on_model_call_end=count("on_model_call_end"),
    )
    assert await run.text() == "Sunny."
    kinds = Counter(kind for kind, _ in emitted)
    # Two steps: each step end is emitted once, and that one emission reached telemetry (the
    # step's time on its chat span), the hooks (the session's subscriber), the older callback
    # and the lifecycle callback.
    assert kinds["step-ended"] == 2
    step_ends = [reached for kind, reached in emitted if kind == "step-ended"]
    reached = ["RecorderSubscriber", "FunctionSubscriber", "AliasSubscriber", "LifecycleSubscriber"]
    assert step_ends == [reached] * 2
    assert (seen["hook"], seen["on_step_end"], seen["on_step_finish"]) == (2, 2, 2)
    # Telemetry's step span is the model call's: it ends on the model call's one emission,
    # which the lifecycle callback shares.
    model_ends = [reached for kind, reached in emitted if kind == "model-call-ended"]
    assert model_ends == [["RecorderSubscriber", "LifecycleSubscriber"]] * 2
    assert seen["on_model_call_end"] == 2
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(chats) == 2
    assert kinds["run-started"] == kinds["run-finished"] == 1
    provider.shutdown()


async def test_a_run_without_observers_reaches_no_subscriber(
    loopback: LoopbackServer, emitted: list[tuple[str, list[str]]]
) -> None:
    loopback.script(tool_calls(("weather", {"city": "Paris"})), text("Sunny."))
    result = hs.stream_text(**loopback.llm(), prompt="weather?", tools=[WEATHER])
    assert await result.text() == "Sunny."
    # Every moment is still offered once, but nobody subscribed: no subscriber is reached and
    # no event is built for the kinds asked with wants() (steps, model and tool calls).
    assert {kind for kind, _ in emitted} == {"run-started", "run-finished"}
    assert all(reached == [] for _, reached in emitted)


async def test_a_raising_subscriber_never_keeps_the_event_from_the_others(
    loopback: LoopbackServer,
) -> None:
    ends: list[int] = []

    def bad_hook(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        raise RuntimeError("hook bug")

    def broken_callback(event: hs.StepEndEvent) -> None:
        raise RuntimeError("callback bug")

    hook = hs.define_hook(events={"step.completed": bad_hook})
    loopback.script(text("Sunny."))
    executor = hs.Executor(hs.MemoryStore())
    run = executor.run(
        agent(loopback, hooks=[hook]),
        "s",
        "weather?",
        on_step_end=lambda event: ends.append(event.step.step_number),
        on_step_start=broken_callback,
    )
    await run.consume()
    # The hook's policy fails the turn; the observe-only callback still saw the step end, and
    # the raising observe-only callback changed nothing.
    assert isinstance(run.error, hs.errors.HookError)
    assert ends == [0]
