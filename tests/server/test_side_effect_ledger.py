"""A side-effect call survives the SIGKILL of its server without running twice (issue 36 part
2, README "Reliability notes"; docs/guides/sessions.md, "Tools with side effects").

A uvicorn process runs a chat whose model calls a ``side_effects=True`` tool twice in one step;
the tool records each execution (its call id and ``ctx.idempotency_key``) in a file and stays
in the call. The process is SIGKILLed while both calls run (after their in-flight records,
before their results). A restarted process takes the session over: the tool ran once per call
and is not run again; the model's next request holds ``outcome_unknown`` for both calls; the
stream carries their ``data-outcome-unknown`` parts. Then ``resolve_call(output=...)`` settles
one (the model reads it as a late answer at its next call) and ``resolve_call(rerun=True)``
runs the other a second time, only then, with the same idempotency key. On SQLite and on
PostgreSQL (skipped, with the reason, without a server).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

import helix_stream as hs
from helix_stream._tool_context import idempotency_key
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server.test_process_death import (
    LEASE,
    ROOT,
    Place,
    _free_port,
    body,
    chat,
    chat_until_taken_over,
    place,  # noqa: F401  (the fixture: sqlite and postgres)
)

TOOL = '''
import asyncio, os
import helix_stream as hs

RECORD = os.environ["HELIX_TEST_RECORD"]


@hs.tool(side_effects=True)
async def charge(cents: int, ctx: hs.ToolContext) -> str:
    """Charge the card."""
    with open(RECORD, "a") as f:
        f.write(f"{ctx.tool_call_id} {ctx.idempotency_key}\\n")
    if os.path.exists(RECORD + ".hold"):
        await asyncio.sleep(3600)
    return f"charged {cents}"
'''

APP = """
import sys, uvicorn
import helix_stream as hs
from helix_stream.server import create_app
from charges import charge

kind, where, schema, api_base, port, lease = *sys.argv[1:6], float(sys.argv[6])
options = {"lease_seconds": lease, "lease_renew_seconds": 0.5}
if kind == "sqlite":
    store = hs.SQLiteStore(where, **options)
else:
    store = hs.PostgresStore(where, schema=schema, **options)
agent = hs.Agent(name="shop", model="openai/loopback", max_retries=0, tools=[charge],
                 settings={"api_base": api_base, "api_key": "k"})
uvicorn.run(create_app(hs.Executor(store=store), agent), host="127.0.0.1", port=int(port),
            log_level="warning")
"""


class Shop:
    """One server process of the shop app (its own port), killed at the end."""

    def __init__(self, where: Place, loopback: LoopbackServer, tmp_path: Path) -> None:
        (tmp_path / "charges.py").write_text(TOOL)
        (tmp_path / "shop.py").write_text(APP)
        self.url = f"http://127.0.0.1:{(port := _free_port())}"
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
            "HELIX_TEST_RECORD": str(tmp_path / "record.txt"),
        }
        self.process = subprocess.Popen(
            [sys.executable, str(tmp_path / "shop.py"), where.kind, where.where, where.schema,
             loopback.api_base, str(port), str(LEASE)],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.process.communicate()[1][-3000:]
            try:
                if httpx.get(f"{self.url}/api/chat/x/messages", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=30)


def _runs(record: Path) -> list[tuple[str, str]]:
    if not record.exists():
        return []
    return [tuple(line.split()) for line in record.read_text().splitlines()]  # type: ignore[misc]


def _kill_while_both_calls_run(shop: Shop, record: Path) -> None:
    client = httpx.Client(timeout=30)
    try:
        request = client.build_request("POST", f"{shop.url}/api/chat", json=body("pay", "first"))
        response = client.send(request, stream=True)
        assert response.status_code == 200
        deadline = time.monotonic() + 30
        while len(_runs(record)) < 2:  # both calls are in their tool (recorded in flight)
            assert time.monotonic() < deadline, "the tool never ran"
            time.sleep(0.05)
        shop.process.send_signal(signal.SIGKILL)
        shop.process.wait(timeout=20)
        response.close()
    finally:
        client.close()


def _tool_results(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        m["tool_call_id"]: json.loads(m["content"])
        for m in request["messages"]
        if m["role"] == "tool"
    }


def _agent(tmp_path: Path) -> hs.Agent:
    """The app's agent, in the test's process (``resolve_call(rerun=True)`` runs its tool)."""
    sys.path.insert(0, str(tmp_path))
    try:
        os.environ["HELIX_TEST_RECORD"] = str(tmp_path / "record.txt")
        from charges import charge  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("charges", None)
    return hs.Agent(name="shop", model="openai/loopback", tools=[charge])


async def test_a_side_effect_call_killed_in_flight_is_never_run_again_by_itself(
    place: Place,  # noqa: F811
    loopback: LoopbackServer,
    tmp_path: Path,
) -> None:
    record = tmp_path / "record.txt"
    (tmp_path / "record.txt.hold").touch()
    calls = tool_calls(("charge", {"cents": 500}), ("charge", {"cents": 700}),
                       call_ids=["call_a", "call_b"])  # fmt: skip
    loopback.script(calls)
    shops: list[Shop] = []
    try:
        shops.append(first := Shop(place, loopback, tmp_path))
        _kill_while_both_calls_run(first, record)
        (tmp_path / "record.txt.hold").unlink()
        store = place.store()
        try:
            assert (await store.get_session("pay")).status == "running"  # type: ignore[union-attr]
            assert store.call_ledger is not None
            rows = await store.call_ledger.calls("pay")
            assert sorted((r.tool_call_id, r.state) for r in rows) == [
                ("call_a", "running"),
                ("call_b", "running"),
            ]
        finally:
            await store.close()

        shops.append(again := Shop(place, loopback, tmp_path))
        loopback.reset()
        loopback.script(text("I could not confirm the payments."))
        _, types = chat_until_taken_over(again.url, "pay")
        assert "finish" in types and types.count("data-outcome-unknown") == 2
        assert sorted(c for c, _ in _runs(record)) == ["call_a", "call_b"]  # once each
        (request,) = loopback.bodies()
        results = _tool_results(request)
        assert {k: v["status"] for k, v in results.items()} == {
            "call_a": "outcome_unknown",
            "call_b": "outcome_unknown",
        }
        keys = dict(_runs(record))
        assert keys == {c: idempotency_key("pay", c) for c in ("call_a", "call_b")}
        assert keys["call_a"] != keys["call_b"]

        store = place.store()
        try:
            executor = hs.Executor(store=store)
            settled = await executor.resolve_call("pay", "call_a", output={"charged": 500})
            assert settled.status == "output"
            assert len(_runs(record)) == 2  # settling with an output runs nothing
            rerun = await executor.resolve_call("pay", "call_b", rerun=True, agent=_agent(tmp_path))
            assert rerun.output == "charged 700"
            with_rerun = _runs(record)
            assert [c for c, _ in with_rerun].count("call_b") == 2  # a second time, only now
            assert with_rerun[-1] == ("call_b", keys["call_b"])  # with the same key
            assert store.call_ledger is not None
            rows = await store.call_ledger.calls("pay")
            assert sorted((r.tool_call_id, r.state) for r in rows) == [
                ("call_a", "settled"),
                ("call_b", "settled"),
            ]
        finally:
            await store.close()

        loopback.reset()
        loopback.script(text("Both went through."))
        status, types = chat(again.url, "pay", "so?")
        assert status == 200 and "finish" in types
        (request,) = loopback.bodies()
        notices = [m["content"] for m in request["messages"] if m["role"] == "user"]
        assert any("call_a" in n and '{"charged": 500}' in n for n in notices)
        assert any("call_b" in n and "run again" in n and "charged 700" in n for n in notices)
        assert len(_runs(record)) == 3
    finally:
        for shop in shops:
            shop.end()
