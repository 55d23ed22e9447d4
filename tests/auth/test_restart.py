"""Park and resume across a process restart, on SQLite and PostgreSQL: the pending sign-in and
the parked call are in the database, so a new ``Executor`` over a new store object (same
``auth_secret``) completes the callback and re-runs the call. The token lives in the same
database, as Fernet ciphertext (``EncryptedTokenStore`` over the session store); no row holds a
token, a code, a PKCE verifier or the client secret (checked on the bytes of every row)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import helix_stream as hs
from tests.auth._session import (
    SECRET,
    Calendar,
    agent,
    assert_absent,
    follow,
    secrets_of,
    sign_in_links,
)
from tests.auth.oauth_server import OAuthServer
from tests.loopback import LoopbackServer, text, tool_calls
from tests.store import _pg
from tests.store._wrapper import MeteredStore, NoFeatures

KEY = hs.EncryptedTokenStore.generate_key()


@pytest.fixture(autouse=True)
def _drop_postgres_schemas() -> Iterator[None]:
    yield
    _pg.drop_schemas()


def _sqlite(tmp_path: Path) -> tuple[Callable[[], hs.Store], Callable[[], Awaitable[bytes]]]:
    path = tmp_path / "sessions.db"

    async def rows() -> bytes:
        return b"".join(p.read_bytes() for p in tmp_path.iterdir())

    return (lambda: hs.SQLiteStore(path)), rows


def _postgres() -> tuple[Callable[[], hs.Store], Callable[[], Awaitable[bytes]]]:
    schema = _pg.new_schema()

    async def rows() -> bytes:
        import psycopg

        out: list[str] = []
        async with await psycopg.AsyncConnection.connect(_pg.DSN, autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
            for (table,) in await cur.fetchall():
                cur = await conn.execute(f'SELECT row_to_json(t)::text FROM "{schema}"."{table}" t')
                out += [f"{table}: {row}" for (row,) in await cur.fetchall()]
        return "\n".join(out).encode()

    return (lambda: hs.PostgresStore(_pg.DSN, schema=schema)), rows


async def token_rows(make_store: Callable[[], hs.Store], backend: str) -> list[bytes]:
    """The values of the auth_tokens rows, read on a store object of their own."""
    store = make_store()
    try:
        if isinstance(store, hs.SQLiteStore):
            return await store._run(
                lambda conn: [bytes(v) for (v,) in conn.execute("SELECT value FROM auth_tokens")]
            )
        assert isinstance(store, hs.PostgresStore) and backend == "postgres"

        async def read(tx: Any) -> list[bytes]:
            return [bytes(v) for (v,) in await tx.all("SELECT value FROM {s}.auth_tokens")]

        return await store._read(read)
    finally:
        await store.close()


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "wrapped"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_parked_call_survives_a_restart_and_runs_with_the_token(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path, backend: str, wrapped: bool
) -> None:
    """Also behind a wrapper that delegates the ``Store`` protocol member by member (as an app
    that adds metrics writes one): the wrapper keeps the sign-in and token tables."""
    make_plain, rows = _sqlite(tmp_path) if backend == "sqlite" else _postgres()
    make_store = (lambda: MeteredStore(make_plain())) if wrapped else make_plain
    calendar = Calendar()
    strategy = oauth.strategy()
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("One standup."))

    first = make_store()
    executor = hs.Executor(
        first, auth_secret=SECRET, token_store=hs.EncryptedTokenStore(first, key=KEY)
    )
    chunks = [
        c
        async for c in executor.run(
            agent(loopback, calendar.tools(strategy)), "s-1", "Monday?", auth="alice"
        )
    ]
    (link,) = sign_in_links(chunks)
    await first.close()  # the process ends

    query = await follow(link.url)
    second = make_store()
    tokens = hs.EncryptedTokenStore(second, key=KEY)
    restarted = hs.Executor(second, auth_secret=SECRET, token_store=tokens)
    bot = agent(loopback, calendar.tools(strategy))
    result = await restarted.complete_authorization(query["state"], query["code"], agent=bot)
    assert result.status == "authorized"
    kept = await tokens.get("loopback", 'principal:"alice"')
    assert kept is not None and kept.token == oauth.issued[0]
    (row,) = await token_rows(make_plain, backend)
    assert row.startswith(b"gAAAAA")  # a Fernet token: the row holds ciphertext only

    assert await restarted.run(bot, "s-1", auth="alice").text() == "One standup."
    assert calendar.tokens == [oauth.issued[0]]
    assert (await restarted.session("s-1")).status == "idle"
    with pytest.raises(hs.errors.AuthorizationStateError):  # taken once, by the new process
        await restarted.complete_authorization(query["state"], query["code"], agent=bot)
    await second.close()
    stored = await rows()
    assert_absent(secrets_of(oauth), stored, *loopback.requests)
    if wrapped:  # every session call went through the wrapper
        assert isinstance(second, MeteredStore) and second.calls["read_snapshot"] >= 2


@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"])
async def test_a_store_without_sign_in_tables_is_refused_at_the_executor(
    tmp_path: Path, backend: str
) -> None:
    """A store that keeps sessions but no sign-ins: ``Executor(auth_secret=...)`` refuses it,
    naming what is missing, and writes nothing; without a secret it runs. The same for the
    token table and ``EncryptedTokenStore``."""
    plain: hs.Store
    if backend == "memory":
        plain = hs.MemoryStore()
    elif backend == "sqlite":
        plain = hs.SQLiteStore(tmp_path / "s.db")
    else:
        plain = hs.PostgresStore(_pg.DSN, schema=_pg.new_schema())
    store = NoFeatures(plain)
    with pytest.raises(hs.errors.FrameworkNotSupportedError, match="no sign-in table") as raised:
        hs.Executor(store, auth_secret=SECRET)
    assert raised.value.code == "framework_not_supported"
    with pytest.raises(hs.errors.FrameworkNotSupportedError, match="no token table"):
        hs.EncryptedTokenStore(store, key=KEY)
    assert store.calls == {} and plain.write_transactions == 0
    assert await plain.get_session("s-1") is None
    hs.Executor(store)  # without sign-ins, the same store is fine
    await plain.close()


async def test_the_token_rows_are_ciphertext_and_another_key_reads_none(
    tmp_path: Path,
) -> None:
    store = hs.SQLiteStore(tmp_path / "s.db")
    tokens = hs.EncryptedTokenStore(store, key=KEY)
    token = hs.Token(token="at-ROW-SECRET-31", refresh_token="rt-ROW-SECRET-32")
    await tokens.put("crm", "principal:1", token)
    assert await tokens.get("crm", "principal:1") == token
    other = hs.EncryptedTokenStore(store, key=hs.EncryptedTokenStore.generate_key())
    assert await other.get("crm", "principal:1") is None
    await tokens.delete("crm", "principal:1")
    assert await tokens.get("crm", "principal:1") is None
    await tokens.put("crm", "principal:1", token)
    await store.close()
    raw = (tmp_path / "s.db").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.iterdir() if p.name != "s.db"
    )
    assert b"ROW-SECRET" not in raw
