"""The same random sequences of writes on every store end in the same state, with the same answers.

Each seed drives one sequence of ``write_turn``s (every part of a ``TurnWrite``, good and bad),
enqueues (keys replayed and conflicting, the queue cap), rewinds, branches, ``set_status``
and ``update_session_meta`` calls over a few sessions, some missing, and the features' tables:
pending sign-ins parked and taken (expired, with a bad id), token rows written, read, deleted, and
side-effect calls recorded and moved between states (the ledger). The sequence runs on
MemoryStore and on each SQL store; every answer (a result, or the refusal's type and text) and
the final state of every session must be the same. Clocks and fresh checkpoint ids are left out
of the comparison; queue ids are not (each store numbers entries 1, 2, 3, ...).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, get_args

import pytest

from helix_stream.store import (
    CallLedger,
    CallRow,
    CallState,
    Checkpoint,
    NewSession,
    PendingRow,
    RewindResult,
    SessionRecord,
    SessionStatus,
    SignInTable,
    Store,
    TokenTable,
    TurnWrite,
    TurnWriteResult,
)
from tests.store.test_contract import STORES

SEEDS = range(12)
STEPS = 70
SESSIONS = ["d-1", "d-2", "ghost"]
BRANCHES = ["b-1", "b-2"]
STATUSES: tuple[SessionStatus, ...] = get_args(SessionStatus)
CAP = 6

Op = Callable[[Store], Awaitable[Any]]


@pytest.fixture
async def reference(tmp_path: Path) -> AsyncIterator[Store]:
    made = STORES["memory"](tmp_path, max_queued_items=CAP)
    yield made
    await made.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def other(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = STORES[request.param](tmp_path, max_queued_items=CAP)
    yield made
    await made.close()


def _session(record: SessionRecord) -> tuple[Any, ...]:
    return (record.id, record.agent_name, record.status, record.parent_id, record.meta)


def _shown(value: Any) -> Any:
    """An answer without its clocks (and without fresh checkpoint ids)."""
    if isinstance(value, TurnWriteResult):
        records = [(r.seq, r.role, r.payload) for r in value.records]
        return ("turn", value.applied, _session(value.session), records)
    if isinstance(value, SessionRecord):
        return ("session", _session(value))
    if isinstance(value, RewindResult):
        return ("rewind", value.removed_records, value.redelivered_entries, value.dropped_entries)
    return value


async def state(store: Store) -> list[Any]:
    """Everything the protocol shows of every session the sequences touch."""
    seen: list[Any] = [store.write_transactions]
    for sid in SESSIONS + BRANCHES:
        snap = await store.read_snapshot(sid)
        if snap.session is None:
            seen.append((sid, None))
            continue
        checkpoints = [
            (cp.id if len(cp.id) < 32 else "fresh", cp.step_number, cp.log_seq, cp.state)
            for cp in await store.checkpoints(sid)
        ]
        pending = [(e.id, e.items, e.source, e.key, e.origin) for e in snap.pending]
        log = [(r.seq, r.role, r.payload) for r in snap.log]
        seen.append((_session(snap.session), log, checkpoints, pending, await store.last_seq(sid)))
    seen += [await _tokens(store).get(key) for key in ("t-1", "t-2")]
    for sid in SESSIONS:  # the ledger, without its clocks
        rows = await _ledger(store).calls(sid)
        seen.append([(r.tool_call_id, r.tool_name, r.state, r.result, r.runs) for r in rows])
    return seen + [await _signs(store).take_pending(nonce) for nonce in NONCES]


# -- the operations: each draws its arguments from the sequence's rng ---------------------------


def _message(rng: random.Random, n: int) -> dict[str, Any]:
    call = f"call-{rng.randrange(3)}"
    return rng.choice(
        [
            {"role": "user", "content": f"u{n}"},
            {"role": "assistant", "content": f"a{n}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call, "type": "function"}],
            },
            {"role": "tool", "tool_call_id": call, "content": f"t{n}"},
            {"role": "user", "content": float("nan")},  # not JSON: the whole write is refused
            {"content": "no role"},
        ]
    )


def _turn(rng: random.Random, n: int) -> Op:
    sid = rng.choice(SESSIONS)
    maybe = rng.random
    write = TurnWrite(
        create=NewSession(agent_name=f"agent-{n}", meta={"made": n}) if maybe() < 0.5 else None,
        expect=rng.sample(STATUSES, rng.randrange(4)) if maybe() < 0.5 else None,
        status=rng.choice(STATUSES) if maybe() < 0.5 else None,
        meta={rng.choice("ab"): rng.choice([None, n, [n]])} if maybe() < 0.3 else None,
        messages=[_message(rng, n) for _ in range(rng.choice([0, 0, 1, 2]))],
        deliver_queue=maybe() < 0.5,
        rows=[{"kind": "notice", "content": f"row {n}", "source": "hook"}] if maybe() < 0.2 else (),
        checkpoint=Checkpoint(
            id=rng.choice(["", "cp-a", "cp-b"]),
            session_id=sid,
            step_number=n,
            log_seq=0,
            state={"n": n},
            created_at=0,
        )
        if maybe() < 0.4
        else None,
    )
    return lambda store: store.write_turn(sid, write)


def _enqueue(rng: random.Random, n: int) -> Op:
    sid = rng.choice(SESSIONS)
    items = [{"kind": "notice", "content": f"q{n}.{i}"} for i in range(rng.choice([0, 1, 1, 2, 3]))]
    tool = rng.random() < 0.4
    origin = (
        {"type": "tool", "tool_call_id": f"call-{rng.randrange(3)}"} if tool else {"type": "app"}
    )
    key = rng.choice([None, None, "k-1", "k-2"])
    mode = rng.choice(["raise", "ignore"])
    source = "tool" if tool else "app"
    return lambda store: store.enqueue_context(
        sid, items, source=source, origin=origin, key=key, on_key_conflict=mode
    )


def _rewind(rng: random.Random, n: int) -> Op:
    sid = rng.choice(SESSIONS + BRANCHES)
    back = rng.choice([-1, 0, 1, 1, 2, 3])

    async def op(store: Store) -> Any:
        last = await store.last_seq(sid) if await store.get_session(sid) else 0
        return await store.rewind(sid, last - back)

    return op


def _branch(rng: random.Random, n: int) -> Op:
    source, new = rng.choice(SESSIONS), rng.choice(BRANCHES)
    back = rng.choice([-1, 0, 1, 2])
    name = rng.choice([None, "brancher"])

    async def op(store: Store) -> Any:
        last = await store.last_seq(source) if await store.get_session(source) else 0
        return await store.branch(source, new, upto_seq=last - back, agent_name=name)

    return op


def _status(rng: random.Random, n: int) -> Op:
    sid, status = rng.choice(SESSIONS + BRANCHES), rng.choice(STATUSES)
    expect = rng.sample(STATUSES, rng.randrange(3)) if rng.random() < 0.5 else None
    return lambda store: store.set_status(sid, status, expect=expect)


def _meta(rng: random.Random, n: int) -> Op:
    sid = rng.choice(SESSIONS + BRANCHES)
    patch = {rng.choice("abc"): rng.choice([None, n, {"n": n}])}
    return lambda store: store.update_session_meta(sid, patch)


NONCES = ["n-1", "n-2", "n-3"]


def _sign_in(rng: random.Random, n: int) -> Op:
    """Park a sign-in (good, expired, or with a bad session id) or take one (once)."""
    nonce = rng.choice(NONCES)
    if rng.random() < 0.5:
        return lambda store: _signs(store).take_pending(nonce)
    sid = rng.choice([*SESSIONS, "bad\x00id"])
    # Far from now either way: the stores' clocks never decide differently.
    expires = rng.choice([1.0, 4e9, 4e9])
    pending = PendingRow(
        nonce=nonce, session_id=sid, tool_call_id=f"call-{n}", strategy="crm",
        owner=f"principal:{n % 2}", created_at=0.5, expires_at=expires,
    )  # fmt: skip
    return lambda store: _signs(store).add_pending(pending)


def _token(rng: random.Random, n: int) -> Op:
    key = rng.choice(["t-1", "t-2"])
    match rng.randrange(3):
        case 0:
            return lambda store: _tokens(store).get(key)
        case 1:
            return lambda store: _tokens(store).set(key, f"v{n}".encode())
        case _:
            return lambda store: _tokens(store).delete(key)


CALLS = ["c-1", "c-2"]
STATES: list[CallState] = ["running", "done", "unknown", "settled"]


def _call(rng: random.Random, n: int) -> Op:
    """Record a side-effect call (or one more run of it; a bad session id) or move one from a
    state to another (a result that is not strict JSON: refused)."""
    sid, call_id = rng.choice([*SESSIONS, "bad\x00id"]), rng.choice(CALLS)
    if rng.random() < 0.4:
        row = CallRow(
            session_id=sid, tool_call_id=call_id, tool_name="charge", arguments=f'{{"n": {n}}}',
            idempotency_key=f"hx-{call_id}",
        )  # fmt: skip
        return lambda store: _ledger(store).begin(row)
    expect, state = rng.choice(STATES), rng.choice(STATES)
    result = rng.choice([None, {"status": "output", "text": f"r{n}"}, {"x": float("nan")}])
    return lambda store: _ledger(store).move(
        sid, call_id, expect=expect, state=state, result=result
    )


def _ledger(store: Store) -> CallLedger:
    assert store.call_ledger is not None
    return store.call_ledger


def _signs(store: Store) -> SignInTable:
    assert store.sign_in_table is not None
    return store.sign_in_table


def _tokens(store: Store) -> TokenTable:
    assert store.token_table is not None
    return store.token_table


KINDS = [_turn] * 6 + [_enqueue] * 4 + [_rewind] * 2 + [_branch, _status, _meta]
KINDS += [_sign_in, _token, _call]


async def run(store: Store, seed: int) -> list[Any]:
    """Run seed's sequence on ``store``; every answer, then the final state."""
    rng = random.Random(seed)
    answers: list[Any] = []
    for n in range(STEPS):
        op = rng.choice(KINDS)(rng, n)
        try:
            answers.append(_shown(await op(store)))
        except Exception as exc:  # a refusal: its type and its words are part of the contract
            answers.append((type(exc).__name__, str(exc)))
    return [*answers, *await state(store)]


@pytest.mark.parametrize("seed", SEEDS)
async def test_the_same_sequence_gives_the_same_answers_and_state_on_every_store(
    reference: Store, other: Store, seed: int
) -> None:
    expected = await run(reference, seed)
    got = await run(other, seed)
    for n, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"seed {seed}, step {n}"
    # The sequences are worth comparing: they make sessions, rows and refusals.
    assert any(isinstance(a, tuple) and a[:2] == ("turn", True) and a[3] for a in expected)
    assert any(isinstance(a, tuple) and a[0] in ("ValueError", "TypeError") for a in expected)
