"""The ``Store`` protocol and the records it keeps.

A store holds, per session: the session record, the **log** (every message and context row,
each with a per-session sequence 1, 2, 3, ...; appended to, and only ever cut back by
``rewind``), the **context queue** (items added but not yet committed as rows), **request
keys** (for idempotent ``add_context``), and **checkpoints** (one per finished step). A
``branch`` copies a prefix of one session's log and checkpoints into a new session. Every
method that writes does so in one transaction: it writes everything or nothing.

The protocol is what the session engine uses, twelve methods: a turn reads a
:class:`~helix_stream.store.Snapshot` and writes :class:`~helix_stream.store.TurnWrite` s
(which also create sessions, append messages and commit the context queue); the executor adds
context, reads the log and checkpoints, sets the status or meta, rewinds and branches. Beside
them, a store says how long a turn's lease lasts (``lease_seconds``, ``lease_renew_seconds``)
and hands out what features keep with the sessions (``sign_in_table``, ``token_table``,
``stream_log``; ``_features.py``): a store that wraps another delegates these like the
methods, and so keeps every feature.

Payloads are plain JSON-safe dicts. A message payload is the OpenAI-format message exactly as
it is sent to the model (so rendering the log again gives the same bytes). A context row
payload is ``{"kind", "source", ...item fields, "cursor"?, "origin"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from helix_stream.store._records import (
    JSON,
    Checkpoint,
    LogRecord,
    RewindResult,
    SessionRecord,
    SessionStatus,
)
from helix_stream.store._turns import Snapshot, TurnWrite, TurnWriteResult

if TYPE_CHECKING:
    from helix_stream.store._features import SignInTable, StreamLog, TokenTable

__all__ = ["Store"]


@runtime_checkable
class Store(Protocol):
    """Durable sessions. Implementations: MemoryStore, SQLiteStore and PostgresStore.

    All methods are coroutines. Every write is one transaction, and implementations count
    them in an int attribute ``write_transactions`` (committed writes only; tests use it to
    prove "one transaction per context pass"). Methods that take a
    ``session_id`` raise :class:`~helix_stream.errors.SessionNotFoundError` when there is no
    such session (and write nothing), except :meth:`get_session` and :meth:`read_snapshot`
    (which answer ``None``) and a :meth:`write_turn` that creates it.

    Every method refuses a session id (or request key) that breaks the rules of
    ``helix_stream._limits`` — 1 to 512 characters (keys 256), no control character, no lone
    surrogate — with :class:`~helix_stream.errors.InvalidRequestError`, writing nothing; and
    every write refuses a payload string with a lone surrogate with ``ValueError``. Stores take
    ``max_queued_items`` (default 1,000): see :meth:`enqueue_context`.

    A store that wraps another (to count calls, say) delegates the five read-only members
    below as well as the methods: they are how the engine finds a store's lease timing and
    the tables features keep in it, never by the store's class.

    Example::

        import time

        from helix_stream.store import SignInTable, TurnWrite, TurnWriteResult

        class MeteredStore:
            def __init__(self, inner: hs.Store) -> None:
                self.inner = inner

            @property
            def sign_in_table(self) -> SignInTable | None:
                return self.inner.sign_in_table

            async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
                started = time.perf_counter()
                try:
                    return await self.inner.write_turn(session_id, write)
                finally:
                    print("write_turn took", time.perf_counter() - started)

            ...  # every other member the same way
    """

    write_transactions: int

    @property
    def lease_seconds(self) -> float:
        """How long a running turn's lease lasts unless renewed."""
        ...

    @property
    def lease_renew_seconds(self) -> float:
        """How often a running turn renews its lease (at most half of ``lease_seconds``)."""
        ...

    @property
    def sign_in_table(self) -> SignInTable | None:
        """Where the sign-ins parked calls wait for are kept (``None``: the store keeps none,
        and ``Executor(auth_secret=...)`` refuses it)."""
        ...

    @property
    def token_table(self) -> TokenTable | None:
        """Where ``EncryptedTokenStore(store)`` keeps its rows (``None``: the store keeps
        none, and that refuses it)."""
        ...

    @property
    def stream_log(self) -> StreamLog | None:
        """The running turns' UI streams, shared by every process that opens the store
        (``None``: a turn's stream is followed only in the process that runs it)."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        ...

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status. With ``expect``, only if the current status is one of them
        (a compare-and-set); returns whether it was set. The same as
        ``write_turn(session_id, TurnWrite(status=status, expect=expect)).applied``."""
        ...

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        ...

    async def enqueue_context(
        self,
        session_id: str,
        items: Sequence[JSON],
        *,
        source: str,
        origin: Mapping[str, Any],
        key: str | None = None,
        on_key_conflict: Literal["raise", "ignore"] = "raise",
    ) -> int:
        """Queue items for the next context pass; return how many were recorded.

        One transaction: with a ``key`` seen before (in this session) and the same items,
        nothing is written and 0 is returned; with a key seen before and other items,
        ``on_key_conflict="raise"`` raises ContextKeyConflictError and ``"ignore"`` returns 0
        (first wins) — nothing written either way. Concurrent calls with one key record once.
        A call that would leave more than the store's ``max_queued_items`` undelivered items in
        the session's queue raises ContextValidationError and queues nothing (after the key
        is judged: a retry of a recorded request still returns 0); concurrent calls never
        pass the limit together. Items with no key are always recorded; no items record
        nothing and return 0 (nor is the key kept: there was no request to remember).
        """
        ...

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        ...

    async def last_seq(self, session_id: str) -> int:
        """The seq of the session's last log record; 0 when the log is empty."""
        ...

    async def update_session_meta(self, session_id: str, patch: Mapping[str, Any]) -> SessionRecord:
        """Merge ``patch`` into the session's ``meta`` (shallow) and return the new record.

        Top-level keys of ``patch`` replace those of ``meta`` (a nested dict is replaced whole,
        not merged); a key whose value is ``None`` is removed (absent keys are ignored). New keys
        come after the existing ones. One transaction, which also sets ``updated_at``; a patch
        that changes nothing writes nothing and returns the current record. The same as
        ``write_turn(session_id, TurnWrite(meta=patch)).session``.

        Raises:
            SessionNotFoundError: no such session (nothing written).
            TypeError | ValueError: the merged meta is not strict JSON (nothing written).
        """
        ...

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        """Truncate the session to its first ``to_seq`` log records, in one transaction.

        README, "Durable sessions". It deletes the log records with
        ``seq > to_seq`` (the next append gets ``to_seq + 1``: seqs stay gap-free), deletes the
        checkpoints with ``log_seq > to_seq``, and fixes the queue:

        - an entry whose rows were truncated (``delivered_seq > to_seq``) is made undelivered
          again, so the next :meth:`write_turn` that delivers the queue delivers it again,
          once; its request key
          is kept;
        - except that what a tool queued goes with that tool's call: an entry whose origin has
          ``"type": "tool"`` and whose ``origin["tool_call_id"]`` is no longer among the
          surviving assistant messages' ``tool_calls[*].id`` is deleted with its request key
          (so the same key records anew), whether it was delivered or still queued.

        Entries whose rows all survive, and other undelivered entries, are left as they are.
        The session's status is not changed; its ``updated_at`` is. ``to_seq`` equal to the
        last seq is a no-op that writes nothing (and drops nothing).

        Raises:
            SessionNotFoundError: no such session (nothing written).
            ValueError: ``to_seq`` is below 0 or above the last seq, or it falls between two
                rows of one queue entry (a context pass's entry is kept or cut whole);
                nothing written.
        """
        ...

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        """Create session ``new_id`` from the first ``upto_seq`` records of ``source_id``.

        README, "Durable sessions". In one transaction: the new session is
        ``"idle"``, has ``parent_id=source_id``, the source's ``meta`` and (unless given) its
        ``agent_name``; it gets copies of the source's log records with ``seq <= upto_seq``
        (same seqs, roles, payloads and ``created_at``) and of its checkpoints with
        ``log_seq <= upto_seq`` (same ids, oldest first). It never gets the source's queue
        entries nor its request keys: an item still queued in the source is delivered only
        there, and a key used in the source records anew in the branch. ``upto_seq=0`` makes
        an empty branch.

        Raises:
            SessionNotFoundError: no session ``source_id`` (nothing written).
            StateError: a session ``new_id`` already exists (nothing written).
            ValueError: ``upto_seq`` is below 0 or above the source's last seq (nothing
                written).
        """
        ...

    async def read_snapshot(self, session_id: str) -> Snapshot:
        """The session, its whole log, its last checkpoint and its undelivered queue entries,
        read together (one call, one consistent view). ``session`` is ``None`` (and the rest
        empty) when there is no such session; this never raises SessionNotFoundError."""
        ...

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        """Apply one :class:`~helix_stream.store.TurnWrite` in one transaction, all or nothing
        (its docstring says in which order the parts apply and are refused).

        Raises:
            SessionNotFoundError: no such session and ``write.create`` is ``None``.
            TypeError | ValueError: a payload is not strict JSON, a status is unknown, or the
                checkpoint id exists (nothing written).
        """
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...
