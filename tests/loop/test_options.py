"""Run options have one home (``LoopOptions``): every entry point takes each, a run's wins.

``stream_text`` spells each option in its typed signature; ``generate_text``, ``Agent`` (a
``LoopOptions``), ``Executor.run`` and the misplaced-keyword check take them from the class.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import errors
from helix_stream._options import OPTION_NAMES, LoopOptions
from helix_stream.loop._params import check_params
from tests.loopback import LoopbackServer, text, tool_calls

# stream_text's arguments that are the call's own, not run options.
_CALL = {"model", "messages", "prompt", "system", "tools", "output"}


def test_stream_text_names_every_run_option_and_nothing_else() -> None:
    parameters = inspect.signature(hs.stream_text).parameters
    named = {n for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert named - _CALL == OPTION_NAMES
    for field in dataclasses.fields(LoopOptions):
        if field.name in OPTION_NAMES and field.name != "middleware":  # None there, () here
            assert parameters[field.name].default == field.default, field.name


def test_an_agent_is_a_set_of_run_options() -> None:
    agent = hs.Agent(name="a", stop_when=hs.step_count_is(2), max_retries=0, runtime_context={})
    assert isinstance(agent, LoopOptions)
    assert {f.name for f in dataclasses.fields(LoopOptions)} <= {
        f.name for f in dataclasses.fields(hs.Agent)
    }


@pytest.mark.parametrize("name", sorted(OPTION_NAMES))
def test_a_run_option_among_litellm_params_says_where_it_belongs(name: str) -> None:
    with pytest.raises(errors.InvalidRequestError) as info:
        check_params({name: 1}, where="Agent(settings=...)")
    message = info.value.message
    assert message.startswith(f"{name}= (") and f"as {name}=" in message
    assert "Agent(...) or Executor.run()" in message


async def test_a_runs_option_wins_over_the_agents_and_none_leaves_it(
    loopback: LoopbackServer,
) -> None:
    seen: list[Any] = []
    agent = hs.Agent(
        name="opts",
        runtime_context={"who": "agent"},
        prepare_step=lambda step: seen.append(step.runtime_context["who"]),
        **_agent_llm(loopback, temperature=0.1, top_p=0.5),
    )
    executor = hs.Executor()
    loopback.script(text("one"), text("two"), text("three"))
    await executor.run(agent, "s", "a").consume()
    await executor.run(agent, "s", "b", runtime_context={"who": "run"}, temperature=0.7).consume()
    await executor.run(agent, "s", "c", runtime_context=None).consume()
    assert seen == ["agent", "run", "agent"]
    sent = [(b["temperature"], b["top_p"]) for b in loopback.bodies()]
    assert sent == [(0.1, 0.5), (0.7, 0.5), (0.1, 0.5)]  # litellm params merge, the run's win


class Q(BaseModel):
    q: str


async def test_an_agents_stop_when_stops_its_turn_before_max_steps(
    loopback: LoopbackServer,
) -> None:
    lookup = hs.tool(name="lookup", input_schema=Q, execute=lambda q, ctx: "found")
    agent = hs.Agent(
        name="stops", tools=[lookup], stop_when=hs.has_tool_call("lookup"), **_agent_llm(loopback)
    )
    loopback.script(tool_calls(("lookup", {"q": "x"})), text("never asked"))
    steps = await hs.Executor().run(agent, "s", "go").steps()
    assert len(steps) == 1 and len(loopback.requests) == 1
    # A run's stop_when wins: here, none of the agent's (max_steps still applies).
    loopback.reset()
    loopback.script(tool_calls(("lookup", {"q": "y"})), text("done"))
    steps = await hs.Executor().run(agent, "t", "go", stop_when=hs.step_count_is(5)).steps()
    assert [s.text for s in steps] == ["", "done"]


async def test_generate_text_takes_the_same_options(loopback: LoopbackServer) -> None:
    finished: list[str] = []
    loopback.script(text("hi"))
    out = await hs.generate_text(
        **loopback.llm(), prompt="x", on_finish=lambda r: finished.append(r.text), max_retries=0
    )
    assert out.text == "hi" and finished == ["hi"]


def _agent_llm(loopback: LoopbackServer, **settings: Any) -> dict[str, Any]:
    llm = loopback.llm()
    return {"model": llm.pop("model"), "settings": {**llm, **settings}}
