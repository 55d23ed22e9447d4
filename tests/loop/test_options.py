"""Run options have one home (``LoopOptions``): every entry point takes each, a run's wins.

``stream_text``, ``generate_text`` and ``Executor.run`` take them as ``**options:
Unpack[RunKeywords]`` (``RunOptions`` mirrors ``LoopOptions``: checked here), an ``Agent`` is a
``LoopOptions``, and every front door's docstring lists them as ``LoopOptions`` describes them.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, ForwardRef

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import errors
from helix_stream.loop._options import (
    OPTION_NAMES,
    LoopOptions,
    ModelParams,
    RunOptions,
    option_docs,
)
from helix_stream.loop._params import check_params, litellm_param_names
from helix_stream.models._litellm import litellm_module
from tests.loopback import LoopbackServer, text, tool_calls

_FRONT_DOORS = {
    "stream_text": hs.stream_text,
    "generate_text": hs.generate_text,
    "Agent": hs.Agent,
    "Executor.run": hs.Executor.run,
}


def _annotation(value: Any) -> str:
    return value.__forward_arg__ if isinstance(value, ForwardRef) else str(value)


def test_the_keyword_form_mirrors_the_one_declaration() -> None:
    # RunOptions (what **options: Unpack[...] reads) has LoopOptions' fields, name for name
    # and type for type: an option added to one and not the other fails here.
    declared = {f.name: str(f.type) for f in dataclasses.fields(LoopOptions)}
    declared.pop("settings")
    keywords = {name: _annotation(t) for name, t in RunOptions.__annotations__.items()}
    assert keywords == declared
    assert set(declared) == OPTION_NAMES


@pytest.mark.parametrize("name", ["stream_text", "generate_text", "Executor.run"])
def test_each_front_door_takes_the_run_keywords(name: str) -> None:
    parameters = inspect.signature(_FRONT_DOORS[name]).parameters
    rest = [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert [str(p.annotation) for p in rest] == ["Unpack[RunKeywords]"]
    # No run option is spelled out a second time as a parameter of its own.
    assert not OPTION_NAMES & parameters.keys()


def test_executor_start_takes_what_run_takes() -> None:
    # start() is run() started early: the same parameters, typed the same (no **options: Any).
    run = inspect.signature(hs.Executor.run).parameters
    start = inspect.signature(hs.Executor.start).parameters
    shape = [(p.name, p.kind, str(p.annotation), p.default) for p in start.values()]
    assert shape == [(p.name, p.kind, str(p.annotation), p.default) for p in run.values()]


def _args(doc: str) -> dict[str, str]:
    """The entries of a Google-style "Args" section, by name, without their indentation."""
    section = doc.split("Args:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    indent = len(section[0]) - len(section[0].lstrip())
    entries: dict[str, list[str]] = {}
    current: list[str] = []
    for line in section:
        if len(line) - len(line.lstrip()) == indent:
            current = [line[indent:]]
            for name in line.strip().split(":", 1)[0].split(", "):
                entries[name] = current
        else:
            current.append(line[indent:])
    return {name: "\n".join(lines) for name, lines in entries.items()}


@pytest.mark.parametrize("name", sorted(_FRONT_DOORS))
def test_each_front_doors_docstring_lists_every_option_as_declared(name: str) -> None:
    documented = _args(inspect.getdoc(_FRONT_DOORS[name]) or "")
    declared = option_docs()
    assert set(declared) == OPTION_NAMES  # LoopOptions' docstring describes every field
    assert {n: documented.get(n) for n in OPTION_NAMES} == declared


def test_the_typed_litellm_keywords_are_litellms_own() -> None:
    # ModelParams (the litellm keywords mypy checks) holds every OpenAI chat parameter and
    # every keyword of litellm.completion, and nothing litellm does not take.
    import inspect as inspect_

    import litellm
    from litellm.constants import OPENAI_CHAT_COMPLETION_PARAMS

    litellm_module()
    completion = inspect_.signature(litellm.completion).parameters
    own = {"model", "messages", "tools", "stream", "stream_options", "timeout", "max_retries"}
    own |= {"model_list", "shared_session"}  # a Router's list, a client session: objects
    listed = ({*OPENAI_CHAT_COMPLETION_PARAMS} | {n for n in completion if n != "kwargs"}) - own
    typed = set(ModelParams.__annotations__)
    assert listed <= typed
    assert typed <= litellm_param_names(None)


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
