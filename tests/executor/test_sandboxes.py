"""An agent's sandbox in its sessions: ``Agent(sandbox=...)``, ``ctx.get_sandbox()``,
``sandbox_on_session``, ``executor.close_sandbox`` — real commands in a temp dir."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from tests.executor._util import snapshot
from tests.loopback import LoopbackServer, text, tool_calls

notes = hs.define_state("test.sandbox.notes", lambda: {"prepared": 0})


class Cmd(BaseModel):
    command: str


@dataclass
class Counting:
    """A LocalSandbox that counts what the engine asks of it."""

    inner: hs.LocalSandbox
    created: list[str] = field(default_factory=list)
    attached: list[str] = field(default_factory=list)

    async def create(self, session: hs.SessionInfo, agent: str) -> hs.Sandbox:
        sandbox = await self.inner.create(session, agent)
        self.created.append(sandbox.id)
        return sandbox

    async def attach(self, session: hs.SessionInfo, sandbox_id: str) -> hs.Sandbox:
        self.attached.append(sandbox_id)
        return await self.inner.attach(session, sandbox_id)


async def shell(input: Cmd, ctx: hs.ToolContext) -> dict[str, Any]:
    sandbox = await ctx.get_sandbox()
    result = await sandbox.run(input.command)
    return {"id": sandbox.id, "code": result.exit_code, "out": result.stdout}


SHELL = hs.tool(name="shell", description="Run a command", input_schema=Cmd, execute=shell)


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name=kw.pop("name", "coder"),
        system="You code.",
        model="openai/loopback",
        tools=kw.pop("tools", [SHELL]),
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
        **kw,
    )


def outputs(steps: list[hs.StepResult]) -> list[Any]:
    return [r.output if r.status == "output" else r.error for s in steps for r in s.tool_results]


async def test_every_tool_call_of_a_turn_shares_one_sandbox_made_at_the_first_get(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    provider = Counting(hs.LocalSandbox(tmp_path / "sandboxes"))
    a = agent(loopback, sandbox=provider)
    loopback.script(text("no tools this time"))
    await executor.run(a, "s", "hi").consume()
    assert provider.created == [] and not (tmp_path / "sandboxes").exists()  # lazily
    loopback.script(
        tool_calls(("shell", {"command": "echo one > a.txt"}), ("shell", {"command": "pwd"})),
        tool_calls(("shell", {"command": "cat a.txt"})),
        text("done"),
    )
    result = executor.run(a, "s", "go")
    steps = await result.steps()
    [first, second, third] = outputs(steps)
    assert len(provider.created) == 1 and provider.attached == []
    assert first["id"] == second["id"] == third["id"] == provider.created[0]
    assert second["out"].strip().endswith("/workspace")
    assert third["out"] == "one\n"


async def test_a_later_turn_and_a_new_process_attach_the_same_sandbox(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    path = str(tmp_path / "helix.db")
    provider = Counting(hs.LocalSandbox(tmp_path / "sandboxes"))
    first = hs.Executor(store=hs.SQLiteStore(path))
    loopback.script(tool_calls(("shell", {"command": "echo kept > k.txt"})), text("ok"))
    await first.run(agent(loopback, sandbox=provider), "s", "write").consume()
    await first.store.close()

    again = Counting(hs.LocalSandbox(tmp_path / "sandboxes"))  # a restarted process
    second = hs.Executor(store=hs.SQLiteStore(path))
    loopback.script(tool_calls(("shell", {"command": "cat k.txt"})), text("ok"))
    steps = await second.run(agent(loopback, sandbox=again), "s", "read").steps()
    assert outputs(steps)[0]["out"] == "kept\n"
    assert again.created == [] and again.attached == provider.created
    await second.store.close()


async def test_sandbox_on_session_runs_once_inside_the_session(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    seen: list[Any] = []

    async def prepare(ctx: hs.HookContext) -> None:
        sandbox = await ctx.get_sandbox()  # the sandbox being prepared (no deadlock)
        await sandbox.write_file("/workspace/setup.txt", "prepared\n")
        notes.update(lambda n: {"prepared": n["prepared"] + 1})
        seen.append((hs.current_session().id, ctx.session.id, ctx.agent.name, sandbox.id))

    def read_notes(input: Cmd) -> int:
        return notes.get()["prepared"]

    tools = [SHELL, hs.tool(name="notes", input_schema=Cmd, execute=read_notes)]
    a = agent(
        loopback, tools=tools, sandbox=hs.LocalSandbox(tmp_path / "sb"), sandbox_on_session=prepare
    )
    loopback.script(
        tool_calls(("shell", {"command": "cat setup.txt"})),
        tool_calls(("notes", {"command": "-"})),
        text("ok"),
        tool_calls(("shell", {"command": "cat setup.txt"})),
        text("ok"),
    )
    steps = await executor.run(a, "s", "one").steps()
    steps += await executor.run(a, "s", "two").steps()
    [one, prepared, two] = outputs(steps)
    assert one["out"] == two["out"] == "prepared\n"
    assert prepared == 1  # define_state written there is the session's (and checkpointed)
    assert seen == [("s", "s", "coder", one["id"])]


async def test_a_preparation_that_failed_is_done_again_at_the_next_get(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    calls: list[str] = []

    def prepare(ctx: hs.HookContext) -> None:
        calls.append(ctx.session.id)
        if len(calls) == 1:
            raise RuntimeError("installing the tools failed")

    provider = Counting(hs.LocalSandbox(tmp_path / "sb"))
    a = agent(loopback, sandbox=provider, sandbox_on_session=prepare)
    loopback.script(
        tool_calls(("shell", {"command": "true"})),
        text("failed"),
        tool_calls(("shell", {"command": "echo fine"})),
        text("ok"),
    )
    steps = await executor.run(a, "s", "one").steps()
    assert "installing the tools failed" in outputs(steps)[0]  # the tool's error result
    steps = await executor.run(a, "s", "two").steps()
    assert outputs(steps)[0]["out"] == "fine\n"
    assert calls == ["s", "s"] and len(provider.created) == 1  # the same sandbox, prepared


async def test_a_sub_agent_gets_its_own_sandbox(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    provider = hs.LocalSandbox(tmp_path / "sb")
    child = agent(loopback, name="helper", sandbox=provider)
    parent = agent(loopback, tools=[SHELL, child.as_tool()], sandbox=provider)
    loopback.script(
        tool_calls(("shell", {"command": "echo parent > who.txt"})),
        tool_calls(("helper", {"prompt": "look"}), call_ids=["call_child"]),
        tool_calls(("shell", {"command": "cat who.txt || echo none"})),  # the child's own
        text("child done"),
        text("parent done"),
    )
    await executor.run(parent, "p", "go").consume()
    child_steps = [s for s in await executor.store.read_log("p/call_child") if s.role == "tool"]
    assert '"out": "none\\n"' in child_steps[0].payload["content"]
    ids = {p.name for p in (tmp_path / "sb").iterdir()}
    assert len(ids) == 2 and any(i.startswith("helper-") for i in ids)


async def test_close_sandbox_ends_it_and_the_next_get_makes_a_new_one(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    provider = Counting(hs.LocalSandbox(tmp_path / "sb"))
    a = agent(loopback, sandbox=provider)
    loopback.script(tool_calls(("shell", {"command": "echo x > x.txt"})), text("ok"))
    await executor.run(a, "s", "one").consume()
    [made] = provider.created
    assert (tmp_path / "sb" / made).is_dir()
    await executor.close_sandbox("s")
    assert not (tmp_path / "sb" / made).exists()
    loopback.script(tool_calls(("shell", {"command": "cat x.txt || echo gone"})), text("ok"))
    steps = await executor.run(a, "s", "two").steps()
    assert outputs(steps)[0]["out"] == "gone\n"
    assert provider.created == [made, made]  # LocalSandbox: the same pair, a new directory
    await executor.close_sandbox("s", agent=a)  # by agent, as after a restart
    await executor.close_sandbox("s")  # nothing left: nothing to do


async def test_close_sandbox_refusals_change_nothing(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    a = agent(loopback, sandbox=hs.LocalSandbox(tmp_path / "sb"))
    loopback.script(tool_calls(("shell", {"command": "true"})), text("ok"))
    await executor.run(a, "s", "one").consume()
    before = await snapshot(executor.store, "s")
    stranger = hs.Executor(store=executor.store)  # has not run the agent
    with pytest.raises(hs.errors.InvalidRequestError, match="agent=") as info:
        await stranger.close_sandbox("s")
    assert "'coder'" in info.value.message
    with pytest.raises(hs.errors.InvalidRequestError, match="no sandbox"):
        await executor.close_sandbox("s", agent=agent(loopback))
    with pytest.raises(hs.SessionNotFoundError):
        await executor.close_sandbox("nope")
    assert await snapshot(executor.store, "s") == before
    assert len(list((tmp_path / "sb").iterdir())) == 1


async def test_close_sandbox_refuses_a_running_session(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    a = agent(loopback, sandbox=hs.LocalSandbox(tmp_path / "sb"))
    loopback.script(tool_calls(("shell", {"command": "true"})), text("ok"))
    await executor.run(a, "s", "one").consume()
    loopback.script(text("slow answer", pieces=2, hang=True))
    run = await executor.start(a, "s", "two")
    with pytest.raises(hs.SessionBusyError):
        await executor.close_sandbox("s")
    await run.aclose()
    assert len(list((tmp_path / "sb").iterdir())) == 1


async def test_a_branch_gets_a_fresh_sandbox(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    a = agent(loopback, sandbox=hs.LocalSandbox(tmp_path / "sb"))
    loopback.script(tool_calls(("shell", {"command": "echo source > s.txt"})), text("ok"))
    source = outputs(await executor.run(a, "s", "one").steps())[0]["id"]
    branch = await executor.branch("s")
    loopback.script(
        tool_calls(("shell", {"command": "cat s.txt || echo fresh"})),
        text("ok"),
        tool_calls(("shell", {"command": "cat s.txt"})),
        text("ok"),
    )
    [copy] = outputs(await executor.run(a, branch, "two").steps())
    assert copy["out"] == "fresh\n" and copy["id"] != source
    [kept] = outputs(await executor.run(a, "s", "three").steps())
    assert (kept["id"], kept["out"]) == (source, "source\n")


async def test_a_sandbox_that_is_gone_is_replaced_and_logged(
    executor: hs.Executor,
    loopback: LoopbackServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = hs.LocalSandbox(tmp_path / "sb")
    a = agent(loopback, sandbox=provider)
    loopback.script(tool_calls(("shell", {"command": "echo x > x.txt"})), text("ok"))
    [made] = outputs(await executor.run(a, "s", "one").steps())
    await (await provider.attach(_info("s"), made["id"])).close()  # closed behind its back
    loopback.script(tool_calls(("shell", {"command": "cat x.txt || echo new"})), text("ok"))
    with caplog.at_level(logging.WARNING, logger="helix_stream.sandbox"):
        [again] = outputs(await executor.run(a, "s", "two").steps())
    assert again["out"] == "new\n"
    [record] = [r for r in caplog.records if getattr(r, "event", "") == "core.sandbox.replaced"]
    assert getattr(record, "session_id", None) == "s"


def _info(session_id: str) -> hs.SessionInfo:
    from helix_stream.state import TurnInfo

    return hs.SessionInfo(id=session_id, turn=TurnInfo(id="t", sequence=1))


async def test_hooks_reach_the_sandbox_too(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    seen: list[str] = []

    async def on_done(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        sandbox = await ctx.get_sandbox()
        seen.append((await sandbox.read_file("/workspace/out.txt")).decode())

    hook = hs.define_hook(events={"turn.completed": on_done})
    a = agent(loopback, sandbox=hs.LocalSandbox(tmp_path / "sb"), hooks=[hook])
    loopback.script(tool_calls(("shell", {"command": "echo from-tool > out.txt"})), text("ok"))
    await executor.run(a, "s", "go").consume()
    assert seen == ["from-tool\n"]


async def test_without_a_sandbox_get_sandbox_says_what_to_do(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    errors: list[BaseException] = []
    kept: list[hs.ToolContext] = []

    async def probe(input: Cmd, ctx: hs.ToolContext) -> str:
        kept.append(ctx)
        try:
            await ctx.get_sandbox()
        except hs.HelixError as exc:
            errors.append(exc)
        return "ok"

    tool = hs.tool(name="probe", input_schema=Cmd, execute=probe)
    loopback.script(tool_calls(("probe", {"command": "-"})), text("ok"))
    await executor.run(agent(loopback, tools=[tool]), "s", "go").consume()
    loopback.script(tool_calls(("probe", {"command": "-"})), text("ok"))
    settings = {"api_base": loopback.api_base, "api_key": "k"}
    await hs.stream_text(
        model="openai/loopback", prompt="go", tools=[tool], max_retries=0, **settings
    ).consume()
    [no_sandbox, no_session] = errors
    assert isinstance(no_sandbox, hs.FrameworkNotSupportedError)
    assert "Agent(sandbox=" in no_sandbox.message and "'coder'" in no_sandbox.message
    assert isinstance(no_session, hs.FrameworkNotSupportedError)
    assert "Executor.run()" in no_session.message
    with pytest.raises(hs.NoActiveContextError):
        await kept[0].get_sandbox()  # after its call: outside any framework callback


async def test_no_secret_of_the_app_reaches_a_sandbox_command(
    executor: hs.Executor,
    loopback: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-app-secret-0123456789")
    monkeypatch.setenv("HELIX_TEST_TOKEN", "tok-app-secret-9876543210")

    class Keys(BaseModel):
        api_key: str

    async def run_env(input: Cmd, ctx: hs.ToolContext) -> str:
        sandbox = await ctx.get_sandbox()
        return (await sandbox.run("env; echo ARGS=$HOME")).stdout

    env_tool = hs.tool(name="env", input_schema=Cmd, context_schema=Keys, execute=run_env)
    a = agent(
        loopback,
        tools=[env_tool],
        sandbox=hs.LocalSandbox(tmp_path / "sb"),
        tools_context={"env": {"api_key": "ctx-secret-5555"}},
    )
    loopback.script(tool_calls(("env", {"command": "-"})), text("ok"))
    [out] = outputs(await executor.run(a, "s", "go").steps())
    assert "PATH=" in out and "ARGS=" in out  # the command ran and printed its environment
    for secret in ("sk-app-secret-0123456789", "tok-app-secret-9876543210", "ctx-secret-5555"):
        assert secret not in out
        assert all(secret.encode() not in body for body in loopback.requests)
    assert os.environ["OPENAI_API_KEY"] == "sk-app-secret-0123456789"


async def test_parallel_first_gets_make_one_sandbox(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    provider = Counting(hs.LocalSandbox(tmp_path / "sb"))

    async def slow_create(session: hs.SessionInfo, agent_name: str) -> hs.Sandbox:
        await asyncio.sleep(0.05)  # both calls are waiting here if nothing serializes them
        return await Counting.create(provider, session, agent_name)

    provider.create = slow_create  # type: ignore[method-assign]
    calls = [("shell", {"command": f"echo {i}"}) for i in range(4)]
    loopback.script(tool_calls(*calls), text("ok"))
    steps = await executor.run(agent(loopback, sandbox=provider), "s", "go").steps()
    assert len(provider.created) == 1
    assert {o["id"] for o in outputs(steps)} == set(provider.created)


def test_agent_definition_errors() -> None:
    with pytest.raises(hs.errors.InvalidRequestError, match="sandbox provider"):
        hs.Agent(name="a", sandbox="/tmp/sandboxes")  # type: ignore[arg-type]
    with pytest.raises(hs.errors.InvalidRequestError, match=r"Agent\(sandbox=\.\.\.\) too"):
        hs.Agent(name="a", sandbox_on_session=lambda ctx: None)
    with pytest.raises(hs.errors.InvalidRequestError, match="must be a function"):
        hs.Agent(name="a", sandbox=hs.LocalSandbox("/tmp/x"), sandbox_on_session="setup")  # type: ignore[arg-type]
