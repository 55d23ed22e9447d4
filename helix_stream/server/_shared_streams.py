"""Resume on any process: the active turns' UI streams, published through the store.

This module owns :class:`SharedStreamRegistry`, the registry the chat routes use when the
executor's store has a shared stream log (``Store.stream_log``: a ``PostgresStore``, or a
store that wraps one); ``StreamRegistry`` stays the one for the others (SQLite and memory
stores), in-process. While a turn streams, :meth:`record` sends each SSE event to its client
at once and publishes the events, in batches every ``flush_interval`` seconds, to the log
(PostgreSQL: the ``ui_stream_events`` table, with a ``NOTIFY`` to every process). A client
that reconnects to any process (``GET .../stream``) gets the events so far and follows the rest
live until ``finish`` — or, when the turn's process died, until its lease expired
(then an ``error`` and a ``finish`` end it); the stream's events are kept for ``keep_for``
seconds after it ends, then dropped.

Publishing never holds up the live client: a batch that cannot be written is logged, and the
stream simply stops being resumable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

from .._cleanup import aclose_quietly, run_cleanup
from ..errors import FrameworkNotSupportedError
from ..store import Store, StreamLog
from ..transformers._sse import encode_sse_bytes

__all__ = ["SharedStreamRegistry"]

logger = logging.getLogger("helix_stream.server")

UIChunk = Mapping[str, Any]

# How a follower's stream ends when the turn it follows will send nothing more and never sent
# its end (its process died: its lease expired, or a new turn took the session over): the
# client's message keeps what it was shown — what the next chat stores as the interrupted
# answer — and says why it stopped, instead of looking complete. (The response adds [DONE].)
_DEAD_TURN_END: tuple[Mapping[str, Any], ...] = (
    {
        "type": "error",
        "errorText": "The server running this answer stopped before it finished; send a new "
        "message to go on.",
    },
    {"type": "finish", "finishReason": "error"},
)


class SharedStreamRegistry:
    """Active streams of a PostgreSQL-backed chat service, resumable from any process.

    Args:
        store: The executor's store; its ``stream_log`` holds the streams.
        flush_interval: Seconds between two batches a turn publishes (default 0.2: followers
            lag by up to this much; each batch is one store write, so a few per turn).
        keep_for: Seconds a finished stream's events are kept (default 10 minutes).
        poll_interval: Seconds a follower waits for a notification before it reads anyway.

    Raises:
        FrameworkNotSupportedError: the store has no shared stream log (``stream_log`` is
            ``None``): its streams could not be resumed from another process.

    Example::

        store = hs.PostgresStore("postgresql://app@db:5432/chat")
        executor = hs.Executor(store=store)
        app = create_app(executor, agent, check_caller, streams=SharedStreamRegistry(store))
    """

    def __init__(
        self,
        store: Store,
        *,
        flush_interval: float = 0.2,
        keep_for: float = 600.0,
        poll_interval: float = 1.0,
    ) -> None:
        log = store.stream_log
        if log is None:
            raise FrameworkNotSupportedError(
                f"SharedStreamRegistry publishes streams through the store's shared stream "
                f"log, and this store ({type(store).__name__}) has none (Store.stream_log is "
                "None). Use StreamRegistry, which keeps them in this process."
            )
        self.store = store
        self.log: StreamLog = log
        self.flush_interval = flush_interval
        self.keep_for = keep_for
        self.poll_interval = poll_interval
        # A follower's event per stream id: a notification wakes the followers of its stream.
        self._followers: dict[str, set[asyncio.Event]] = {}
        self._listener: asyncio.Task[None] | None = None

    async def record(
        self, session_id: str, ui_chunks: AsyncIterator[UIChunk]
    ) -> AsyncGenerator[bytes, None]:
        """Serve ``ui_chunks`` to one client as SSE events, publishing them for followers.

        Closing the returned generator closes ``ui_chunks`` (which cancels the generation).
        """
        # Opening the stream row is the publisher's first write, in the background: the
        # client's first event never waits for it.
        publisher = _Publisher(self.log, session_id, self.flush_interval, self.keep_for)
        try:
            async for chunk in ui_chunks:
                event = encode_sse_bytes(chunk)
                publisher.add(event)
                yield event
        finally:
            await run_cleanup(publisher.close, what="publishing the end of a UI stream")
            await aclose_quietly(ui_chunks, what="closing the turn's UI stream")

    async def resume(self, session_id: str) -> AsyncIterator[bytes] | None:
        """The session's running stream, so far then live, or ``None`` when none runs."""
        first = await self.log.read(session_id)
        if first.stream_id is None or first.finished:
            return None
        return self._follow(session_id, first.stream_id, first.batches)

    async def _follow(
        self, session_id: str, stream_id: str, batches: list[tuple[int, str]]
    ) -> AsyncGenerator[bytes, None]:
        grew = asyncio.Event()
        self._followers.setdefault(stream_id, set()).add(grew)
        self._listen()
        try:
            seq, finished, quiet = 0, False, False
            while True:
                for seq, events in batches:  # noqa: B007  (the last one read is where to go on)
                    yield events.encode()
                if finished:
                    return
                # Cleared before the read: a batch published after it still wakes the wait.
                grew.clear()
                update = await self.log.read(session_id, seq, stream_id)
                if update.stream_id is None:  # a newer turn's stream replaced it, unfinished
                    break
                batches, finished = update.batches, update.finished
                if batches or finished:
                    quiet = False
                    continue
                try:
                    await asyncio.wait_for(grew.wait(), self.poll_interval)
                except TimeoutError:
                    # A turn whose process died (or could not publish its end) leaves an
                    # unfinished stream: once its session stops running (or its lease
                    # expired) and a further poll brings nothing, nothing will come.
                    if quiet:
                        break
                    quiet = await self._state(session_id) != "running"
            if seq:  # a message was begun: end it as failed, never as if it were complete
                for chunk in _DEAD_TURN_END:
                    yield encode_sse_bytes(chunk)
        finally:
            followers = self._followers.get(stream_id, set())
            followers.discard(grew)
            if not followers:
                self._followers.pop(stream_id, None)
            if not self._followers and self._listener is not None:
                # No one to wake: the listening connection goes until the next follower.
                self._listener.cancel()
                self._listener = None

    async def _state(self, session_id: str) -> str:
        """``"running"``; ``"dead"``: running under a lease that expired (its process died);
        else ``"ended"``."""
        try:
            session = await self.store.get_session(session_id)
        except Exception:  # unreadable: as if it were not running (the poll decides)
            return "ended"
        if session is None or session.status != "running":
            return "ended"
        return "dead" if session.lease_expired() else "running"

    def _listen(self) -> None:
        """Start this process's one listener for stream notifications, while anyone follows."""
        if self._listener is None or self._listener.done():
            self._listener = asyncio.get_running_loop().create_task(self._notifications())

    async def _notifications(self) -> None:
        try:
            async for stream_id in self.log.listen():
                for grew in self._followers.get(stream_id, ()):
                    grew.set()
        except Exception:
            # Followers still read every poll_interval: slower, never stuck.
            logger.warning("listening for UI stream notifications failed", exc_info=True)


class _Publisher:
    """Writes one stream's events in batches, one write at a time, in the background.

    One task does every write, in order, so that batches commit in ``seq`` order (a follower
    reads "after the last seq I saw") and closing never cuts a write short.
    """

    def __init__(self, log: StreamLog, session_id: str, interval: float, keep_for: float) -> None:
        self._log = log
        self._session_id = session_id
        self._stream_id = uuid.uuid4().hex
        self._interval = interval
        self._keep_for = keep_for
        self._pending: list[bytes] = []
        self._seq = 0
        self._failed = False
        self._closing = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._write_batches())

    def add(self, event: bytes) -> None:
        if not self._failed:  # a stream that cannot be published holds nothing
            self._pending.append(event)

    async def _write_batches(self) -> None:
        try:
            await self._log.open(self._session_id, self._stream_id, keep_for=self._keep_for)
        except Exception:
            self._failed = True
            logger.exception(
                "session %r: its stream cannot be published (not resumable)", self._session_id
            )
            return
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self._interval)
            finished = self._closing.is_set()
            await self._flush(finished=finished)
            if finished:
                return

    async def _flush(self, *, finished: bool) -> None:
        if self._failed or (not self._pending and not finished):
            return
        events, self._pending = b"".join(self._pending).decode(), []
        self._seq += 1
        try:
            await self._log.append(self._stream_id, self._seq, events, finished=finished)
        except Exception:
            self._failed = True
            logger.exception("publishing UI stream %s failed (not resumable)", self._stream_id)

    async def close(self) -> None:
        """Write what is left and mark the stream finished."""
        self._closing.set()
        await self._task
