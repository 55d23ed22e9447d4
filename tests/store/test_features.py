"""What features keep in a store, as part of the ``Store`` protocol: one suite for every store.

The sign-in table and the token table on MemoryStore, SQLiteStore and PostgresStore, each also
behind a wrapper that delegates the protocol member by member (``_wrapper.MeteredStore``): the
wrapper keeps every feature. The shared stream log on PostgresStore (the one store shared by
several processes), also wrapped. And the rule that makes this hold: nothing in the package
chooses what to do by a store's class (an AST scan).
"""

from __future__ import annotations

import ast
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

import helix_stream
from helix_stream.errors import FrameworkNotSupportedError, InvalidRequestError, StateError
from helix_stream.store import (
    CallRow,
    MemoryStore,
    PendingRow,
    PostgresStore,
    SQLiteStore,
    Store,
)
from tests.store import _pg
from tests.store._wrapper import MeteredStore, NoFeatures
from tests.store.test_contract import STORES
from tests.test_layers import parse_source

WRAPPED: dict[str, Callable[[Path], Store]] = {
    **{name: make for name, make in STORES.items()},
    **{f"wrapped-{name}": (lambda p, m=make: MeteredStore(m(p))) for name, make in STORES.items()},
}


@pytest.fixture(params=list(WRAPPED))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = WRAPPED[request.param](tmp_path)
    yield made
    await made.close()


def row(nonce: str, *, session_id: str = "s-1", expires_at: float = 4e9) -> PendingRow:
    return PendingRow(
        nonce=nonce,
        session_id=session_id,
        tool_call_id="call-1",
        strategy="crm",
        owner="principal:1",
        created_at=1.0,
        expires_at=expires_at,
    )


# -- the protocol -----------------------------------------------------------------------------

MEMBERS = {
    "lease_seconds", "lease_renew_seconds", "sign_in_table", "token_table", "stream_log",
    "call_ledger",
}  # fmt: skip


def test_the_protocol_hands_out_lease_timing_and_the_features_tables() -> None:
    properties = {n for n, v in vars(Store).items() if isinstance(v, property)}
    assert properties == MEMBERS
    protocol = {n for n in vars(Store) if not n.startswith("_")} | {"write_transactions"}
    wrapper = {n for n in vars(MeteredStore) if not n.startswith("_")}
    assert protocol <= wrapper, f"the test wrapper lacks {protocol - wrapper}"


async def test_every_store_has_sign_ins_and_tokens_and_only_postgres_a_shared_log(
    store: Store,
) -> None:
    assert store.sign_in_table is not None and store.token_table is not None
    assert store.call_ledger is not None
    assert (store.stream_log is not None) == isinstance(_inner(store), PostgresStore)
    assert store.lease_renew_seconds <= store.lease_seconds / 2


def _inner(store: Store) -> Store:
    return store.inner if isinstance(store, MeteredStore) else store


# -- the ledger of side-effect calls ----------------------------------------------------------


def call(call_id: str, *, session_id: str = "s-1") -> CallRow:
    return CallRow(
        session_id=session_id,
        tool_call_id=call_id,
        tool_name="charge",
        arguments='{"cents": 5}',
        idempotency_key=f"hx-{call_id}",
    )


def _shown(rows: list[CallRow]) -> list[tuple[object, ...]]:
    return [(r.tool_call_id, r.state, r.result, r.runs, r.idempotency_key) for r in rows]


async def test_a_call_is_recorded_before_and_moved_by_compare_and_set(store: Store) -> None:
    ledger = store.call_ledger
    assert ledger is not None
    await ledger.begin(call("c-1"))
    await ledger.begin(call("c-2"))
    await ledger.begin(call("c-9", session_id="s-2"))
    assert store.write_transactions == 3
    assert _shown(await ledger.calls("s-1")) == [
        ("c-1", "running", None, 1, "hx-c-1"),
        ("c-2", "running", None, 1, "hx-c-2"),
    ]
    (other,) = await ledger.calls("s-2")
    assert (other.session_id, other.tool_name, other.arguments) == ("s-2", "charge", '{"cents": 5}')
    assert other.created_at > 0 and other.updated_at >= other.created_at
    done = {"status": "output", "text": "charged"}
    assert await ledger.move("s-1", "c-1", expect="running", state="done", result=done)
    # Not in the state expected, or not there: nothing written.
    assert not await ledger.move("s-1", "c-1", expect="running", state="unknown")
    assert not await ledger.move("s-1", "nope", expect="running", state="unknown")
    assert not await ledger.move("s-3", "c-1", expect="done", state="unknown")
    assert store.write_transactions == 4
    assert await ledger.move("s-1", "c-2", expect="running", state="unknown")
    assert _shown(await ledger.calls("s-1")) == [
        ("c-1", "done", done, 1, "hx-c-1"),
        ("c-2", "unknown", None, 1, "hx-c-2"),
    ]
    assert await ledger.calls("s-3") == []


async def test_the_same_call_begun_again_counts_one_more_run(store: Store) -> None:
    ledger = store.call_ledger
    assert ledger is not None
    await ledger.begin(call("c-1"))
    await ledger.move("s-1", "c-1", expect="running", state="done", result={"status": "pending"})
    await ledger.begin(call("c-1"))
    assert _shown(await ledger.calls("s-1")) == [("c-1", "running", None, 2, "hx-c-1")]


async def test_a_ledger_refusal_writes_nothing(store: Store) -> None:
    ledger = store.call_ledger
    assert ledger is not None
    await ledger.begin(call("c-1"))
    with pytest.raises(InvalidRequestError):
        await ledger.begin(call("c-2", session_id="bad\x00id"))
    with pytest.raises(ValueError):
        await ledger.move("s-1", "c-1", expect="running", state="done", result={"x": float("nan")})
    with pytest.raises(InvalidRequestError):
        await ledger.move("bad\x00id", "c-1", expect="running", state="done")
    assert store.write_transactions == 1
    assert _shown(await ledger.calls("s-1")) == [("c-1", "running", None, 1, "hx-c-1")]


async def test_the_ledger_survives_a_new_store_object(tmp_path: Path) -> None:
    first = SQLiteStore(str(tmp_path / "ledger.db"))
    try:
        assert first.call_ledger is not None
        await first.call_ledger.begin(call("c-1"))
    finally:
        await first.close()
    second = SQLiteStore(str(tmp_path / "ledger.db"))
    try:
        assert second.call_ledger is not None
        assert _shown(await second.call_ledger.calls("s-1")) == [
            ("c-1", "running", None, 1, "hx-c-1")
        ]
    finally:
        await second.close()


# -- sign-ins -------------------------------------------------------------------------------


async def test_a_pending_sign_in_is_taken_once_and_counts_as_writes(store: Store) -> None:
    table = store.sign_in_table
    assert table is not None
    await table.add_pending(row("n-1"))
    await table.add_pending(row("n-2", session_id="s-2"))
    assert store.write_transactions == 2
    assert await table.take_pending("n-1") == row("n-1")
    assert await table.take_pending("n-1") is None  # used once
    assert await table.take_pending("unknown") is None
    assert store.write_transactions == 3  # a take that found nothing wrote nothing
    assert await table.take_pending("n-2") == row("n-2", session_id="s-2")


async def test_a_nonce_still_pending_is_never_replaced(store: Store) -> None:
    table = store.sign_in_table
    assert table is not None
    await table.add_pending(row("n-1"))
    with pytest.raises(StateError, match="already pending"):
        await table.add_pending(row("n-1", session_id="s-2"))
    assert store.write_transactions == 1
    assert await table.take_pending("n-1") == row("n-1")


async def test_adding_a_sign_in_drops_the_expired_ones(store: Store) -> None:
    table = store.sign_in_table
    assert table is not None
    await table.add_pending(row("old", expires_at=time.time() - 1))
    await table.add_pending(row("new"))
    assert await table.take_pending("old") is None
    assert await table.take_pending("new") == row("new")


async def test_a_sign_in_with_a_bad_session_id_is_refused_and_nothing_written(
    store: Store,
) -> None:
    table = store.sign_in_table
    assert table is not None
    with pytest.raises(InvalidRequestError):
        await table.add_pending(row("n-1", session_id="bad\x00id"))
    assert store.write_transactions == 0
    assert await table.take_pending("n-1") is None


# -- tokens ---------------------------------------------------------------------------------


async def test_token_rows_are_written_replaced_and_deleted(store: Store) -> None:
    table = store.token_table
    assert table is not None
    assert await table.get("k") is None
    await table.set("k", b"one")
    await table.set("k", b"two")
    assert await table.get("k") == b"two"
    await table.delete("k")
    await table.delete("k")  # nothing there: nothing written
    assert await table.get("k") is None
    assert store.write_transactions == 3


async def test_the_sign_in_and_token_tables_survive_a_new_store_object(tmp_path: Path) -> None:
    for make in (lambda: SQLiteStore(tmp_path / "f.db"), _pg_on(_pg_schema())):
        first = MeteredStore(make())
        assert first.sign_in_table is not None and first.token_table is not None
        await first.sign_in_table.add_pending(row("n-1"))
        await first.token_table.set("k", b"v")
        await first.close()
        second = MeteredStore(make())
        assert second.sign_in_table is not None and second.token_table is not None
        assert await second.sign_in_table.take_pending("n-1") == row("n-1")
        assert await second.token_table.get("k") == b"v"
        await second.close()


def _pg_schema() -> str | None:
    return None if _pg.unreachable() else _pg.new_schema()


def _pg_on(schema: str | None) -> Callable[[], Store]:
    if schema is None:  # no server: the SQLite half still runs; the postgres tests say why
        return lambda: SQLiteStore(":memory:")
    return lambda: _pg.make_store(schema)


# -- the shared stream log ----------------------------------------------------------------------


@pytest.fixture(params=["postgres", "wrapped-postgres"])
async def shared(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = WRAPPED[request.param](tmp_path)
    yield made
    await made.close()


async def test_a_stream_is_read_back_after_a_position_until_it_finishes(shared: Store) -> None:
    log = shared.stream_log
    assert log is not None
    assert (await log.read("s-1")).stream_id is None
    await log.open("s-1", "st-1", keep_for=60)
    await log.append("st-1", 1, "data: a\n\n")
    await log.append("st-1", 2, "data: b\n\n")
    read = await log.read("s-1", 1)
    assert (read.stream_id, read.batches, read.finished) == ("st-1", [(2, "data: b\n\n")], False)
    await log.append("st-1", 3, "", finished=True)
    assert (await log.read("s-1", 2)).finished
    # A newer turn's stream replaces it: a follower of the old one reads no stream.
    await log.open("s-1", "st-2", keep_for=60)
    assert (await log.read("s-1", 0, "st-1")).stream_id is None
    assert (await log.read("s-1")).stream_id == "st-2"


async def test_the_server_shares_streams_of_a_wrapped_postgres_store_and_not_of_others(
    tmp_path: Path,
) -> None:
    from helix_stream import Executor
    from helix_stream.server import SharedStreamRegistry, StreamRegistry
    from helix_stream.server._routes import default_registry

    wrapped = MeteredStore(_pg.make_store())
    try:
        assert isinstance(default_registry(Executor(wrapped)), SharedStreamRegistry)
    finally:
        await wrapped.close()
    for local in (MemoryStore(), SQLiteStore(tmp_path / "l.db"), NoFeatures(MemoryStore())):
        assert isinstance(default_registry(Executor(local)), StreamRegistry)
        with pytest.raises(FrameworkNotSupportedError, match="stream log"):
            SharedStreamRegistry(local)
        await local.close()


# -- nothing chooses by a store's class --------------------------------------------------------

STORE_CLASSES = {
    "Store", "MemoryStore", "SQLiteStore", "PostgresStore", "StoreWrites", "SQLiteDatabase",
    "PostgresDatabase",
}  # fmt: skip


def class_checks_on_stores(source: str) -> list[str]:
    """``isinstance``/``issubclass`` against a store class, and ``getattr``/``hasattr`` on a
    store (an expression naming ``store``), in ``source``: each as ``line: code``."""
    found = []
    for node in ast.walk(ast.Module(body=parse_source(source), type_ignores=[])):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        name, args = node.func.id, node.args
        if name in ("isinstance", "issubclass") and len(args) == 2:
            named = {n.id for n in ast.walk(args[1]) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(args[1]) if isinstance(n, ast.Attribute)}
            hit = bool(named & STORE_CLASSES)
        elif name in ("getattr", "hasattr") and args:
            hit = "store" in ast.unparse(args[0]).lower()
        else:
            continue
        if hit:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_class_checks_on_stores() -> None:
    planted = (
        "if isinstance(executor.store, PostgresStore): pass\n"
        "x = getattr(store, 'lease_seconds', 10)\n"
        "y = isinstance(s, (hs.SQLiteStore, int))\n"
        "z = hasattr(self._store, 'x') or isinstance(a, dict) or getattr(exc, 'code', 0)\n"
    )
    assert [f.split(":")[0] for f in class_checks_on_stores(planted)] == ["1", "2", "3", "4"]


def test_nothing_in_the_package_chooses_by_a_store_class() -> None:
    root = Path(helix_stream.__file__).parent
    found = {
        str(path.relative_to(root)): hits
        for path in sorted(root.rglob("*.py"))
        if (hits := class_checks_on_stores(path.read_text()))
    }
    assert found == {}
