"""What features keep in a session store besides sessions: sign-ins, token rows, UI streams.

A :class:`~helix_stream.store.Store` hands these out through its protocol (``sign_in_table``,
``token_table``, ``stream_log``), so that whoever wraps a store (to add metrics, say) keeps
them by delegating those three members like any other: nothing is chosen by a store's class.
A member that is ``None`` says the store does not keep that feature; a feature that needs it
is then refused where it is asked for (``Executor(auth_secret=...)``,
``EncryptedTokenStore(store)``, ``SharedStreamRegistry(store)``), never quietly kept elsewhere.

* :class:`SignInTable`: the sign-ins parked calls wait for, one row per state nonce (the
  session, the call, the strategy, whose token it will be, when it expires). Nothing secret:
  the PKCE verifier is derived from the app's secret and the nonce, never stored.
  :meth:`SignInTable.take_pending` reads and deletes a row at once, which is what makes a
  state usable once, even across processes.
* :class:`TokenTable`: ``(key, value)`` rows for ``EncryptedTokenStore`` (the values are its
  ciphertext; a table never sees a token in the clear).
* :class:`StreamLog`: the UI streams of running turns, published for every process, so that a
  client reconnecting to any of them resumes its stream. Only a store shared by several
  processes has one (``PostgresStore``); in the others a turn's stream is followed in the
  process that runs it.

Every call of these is one transaction (or one read) of the store; writes count in its
``write_transactions``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["PendingRow", "SignInTable", "StreamEvents", "StreamLog", "TokenTable"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingRow:
    """One pending sign-in as a store keeps it (see :class:`SignInTable`).

    Example::

        import time

        from helix_stream.store import PendingRow

        table = store.sign_in_table
        if table is not None:
            now = time.time()
            row = PendingRow(nonce="n-1", session_id="session-1", tool_call_id="call-1",
                             strategy="calendar", owner="user-1", created_at=now,
                             expires_at=now + 600)
            await table.add_pending(row)
    """

    nonce: str
    session_id: str
    tool_call_id: str
    strategy: str
    owner: str
    created_at: float
    expires_at: float

    def values(self) -> tuple[Any, ...]:
        """The row's columns, in the tables' order."""
        return (
            self.nonce,
            self.session_id,
            self.tool_call_id,
            self.strategy,
            self.owner,
            self.created_at,
            self.expires_at,
        )

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> PendingRow:
        """The row read back from a table."""
        nonce, session_id, call_id, strategy, owner, created, expires = row
        return cls(
            nonce=str(nonce),
            session_id=str(session_id),
            tool_call_id=str(call_id),
            strategy=str(strategy),
            owner=str(owner),
            created_at=float(created),
            expires_at=float(expires),
        )


class SignInTable(Protocol):
    """A store's pending sign-ins (each call one transaction).

    Example::

        table = store.sign_in_table                            # None: the store keeps no sign-ins
        if table is not None:
            row = await table.take_pending("n-1")              # once: a second take gets None
    """

    async def add_pending(self, row: PendingRow) -> None:
        """Keep ``row`` (and drop the rows that expired by now).

        Raises:
            InvalidRequestError: the row's session id breaks the id rules (nothing written).
            StateError: a row with this nonce is pending (nothing written).
        """
        ...

    async def take_pending(self, nonce: str) -> PendingRow | None:
        """Delete and return the row of ``nonce`` at once (``None``: there is none)."""
        ...


@runtime_checkable
class TokenTable(Protocol):
    """A table of byte values by string key: where ``EncryptedTokenStore`` keeps its rows.

    Example::

        tokens = store.token_table
        if tokens is not None:
            await tokens.set("key-1", b"encrypted bytes")
            assert await tokens.get("key-1") == b"encrypted bytes"
            await tokens.delete("key-1")
    """

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or ``None``."""
        ...

    async def set(self, key: str, value: bytes) -> None:
        """Write ``value`` under ``key`` (replacing what was there)."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key`` (if present)."""
        ...


@dataclass(frozen=True, slots=True)
class StreamEvents:
    """What a session's latest stream holds after a position.

    Attributes:
        stream_id: The stream, or ``None`` when the session has none.
        batches: ``(seq, events)`` after the position asked for, in order; ``events`` is the
            SSE text of one or more events.
        finished: The stream has ended: nothing will follow.

    Example::

        log = store.stream_log                                # PostgresStore's; None elsewhere
        if log is not None:
            events = await log.read("session-1")
            print(events.stream_id, len(events.batches), events.finished)
    """

    stream_id: str | None
    batches: list[tuple[int, str]] = field(default_factory=list)
    finished: bool = True


class StreamLog(Protocol):
    """Running turns' UI streams, readable from every process that opens the store.

    Example::

        from helix_stream.transformers import encode_sse

        log = store.stream_log
        if log is not None:
            await log.open("session-1", "stream-1", keep_for=600)
            await log.append("stream-1", 1, encode_sse({"type": "start"}))
            await log.append("stream-1", 2, "", finished=True)
    """

    async def open(self, session_id: str, stream_id: str, *, keep_for: float) -> None:
        """Make ``stream_id`` the session's stream (its earlier one goes); drop streams that
        finished more than ``keep_for`` seconds ago."""
        ...

    async def append(
        self, stream_id: str, seq: int, events: str, *, finished: bool = False
    ) -> None:
        """Add batch ``seq`` of SSE events (``events`` may be empty for the last one;
        ``finished``: it is the last) and tell every process's listeners."""
        ...

    async def read(
        self, session_id: str, after_seq: int = 0, stream_id: str | None = None
    ) -> StreamEvents:
        """The session's latest stream after batch ``after_seq`` (``stream_id``: only if it
        is still that one)."""
        ...

    def listen(self) -> AsyncIterator[str]:
        """The ids of streams as they grow, from every process, until closed."""
        ...
