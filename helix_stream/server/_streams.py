"""The registry of active chat streams, for ``GET /api/chat/{id}/stream`` (resume).

This module owns :class:`StreamRegistry`. While a turn streams from this process, the chat
route records every UI chunk it sends in an :class:`ActiveStream` under the session id; a client
that comes (back) later gets the chunks so far and then follows the stream live until it ends
(the AI SDK's ``resumeStream``: ``GET <api>/<chatId>/stream``, 204 when nothing is active).

It is in-process and bounded: a stream keeps at most ``max_chunks`` chunks (past that it can no
longer be replayed whole, so it stops being resumable) and at most ``max_streams`` streams are
registered at once. A stream is removed when its turn ends. Several processes behind a load
balancer each see only their own streams.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import anyio

__all__ = ["ActiveStream", "StreamRegistry"]

UIChunk = Mapping[str, Any]

# Chunks buffered between the generation and a slow client (backpressure beyond that).
_QUEUE_SIZE = 256
# How long a disconnect waits for the generation to wind down (the transformer allows 10 s).
_CLEANUP_TIMEOUT = 15.0


class ActiveStream:
    """The UI chunks a turn has sent so far, and a way to wait for the next ones.

    Attributes:
        session_id: The session whose turn this is.
        chunks: Every UI chunk sent so far, in order.
        done: The turn's stream has ended (no chunk will be added).
        overflowed: More than ``max_chunks`` were sent: the stream can no longer be replayed.
    """

    def __init__(self, session_id: str, max_chunks: int) -> None:
        self.session_id = session_id
        self.chunks: list[UIChunk] = []
        self.done = False
        self.overflowed = False
        self._max_chunks = max_chunks
        # One event per "something changed"; replaced after it fires (anyio events are one-shot).
        self._changed = anyio.Event()

    def add(self, chunk: UIChunk) -> None:
        if self.overflowed:
            return
        if len(self.chunks) >= self._max_chunks:
            # Drop what is held: a follower needs every chunk from `start` to fold the message.
            self.overflowed = True
            self.chunks = []
        else:
            self.chunks.append(chunk)
        self._notify()

    def close(self) -> None:
        self.done = True
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def follow(self) -> AsyncGenerator[UIChunk, None]:
        """Every chunk so far, then each new one as it is sent, until the stream ends."""
        position = 0
        while True:
            if self.overflowed:
                return
            while position < len(self.chunks):
                chunk = self.chunks[position]
                position += 1
                yield chunk
            if self.done:
                return
            await self._changed.wait()


class StreamRegistry:
    """Active streams by session id (one per session: a session runs one turn at a time).

    Args:
        max_streams: Streams registered at once at most; a turn started beyond that is served
            as usual but cannot be resumed.
        max_chunks: UI chunks kept per stream at most.
    """

    def __init__(self, *, max_streams: int = 1_000, max_chunks: int = 20_000) -> None:
        self.max_streams = max_streams
        self.max_chunks = max_chunks
        self._streams: dict[str, ActiveStream] = {}

    def __len__(self) -> int:
        return len(self._streams)

    def get(self, session_id: str) -> ActiveStream | None:
        """The session's active, resumable stream, or ``None``."""
        stream = self._streams.get(session_id)
        if stream is None or stream.done or stream.overflowed:
            return None
        return stream

    async def record(
        self, session_id: str, ui_chunks: AsyncIterator[UIChunk]
    ) -> AsyncGenerator[UIChunk, None]:
        """Serve ``ui_chunks`` to one client, recording each chunk for followers.

        The chunks are pulled by a task of their own and handed over through a small queue.
        Why: when the client goes away, the response's task runs inside an anyio cancel scope
        that cancels *every* later await, so a generation iterated there could not finish its
        cleanup (closing the model stream, setting the session idle in a store whose writes
        await). The pump task is cancelled once, the asyncio way, and its cleanup runs to the
        end; this generator waits for it (shielded, bounded).

        Closing the returned generator cancels the generation; the stream is unregistered
        when it ends either way.
        """
        stream: ActiveStream | None = None
        if len(self._streams) < self.max_streams or session_id in self._streams:
            stream = ActiveStream(session_id, self.max_chunks)
            self._streams[session_id] = stream
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=_QUEUE_SIZE)
        pump = asyncio.get_running_loop().create_task(
            self._pump(session_id, stream, ui_chunks, queue)
        )
        try:
            while True:
                kind, value = await queue.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            if not pump.done():
                pump.cancel()
            with anyio.move_on_after(_CLEANUP_TIMEOUT, shield=True):
                await asyncio.wait({pump})
            if pump.done() and not pump.cancelled():
                pump.exception()  # retrieved: it was re-raised above or is irrelevant now

    async def _pump(
        self,
        session_id: str,
        stream: ActiveStream | None,
        ui_chunks: AsyncIterator[UIChunk],
        queue: asyncio.Queue[tuple[str, Any]],
    ) -> None:
        try:
            try:
                async for chunk in ui_chunks:
                    if stream is not None:
                        stream.add(chunk)
                    await queue.put(("chunk", chunk))
            except Exception as exc:  # CancelledError (the client left) is not caught
                await queue.put(("error", exc))
            else:
                await queue.put(("end", None))
        finally:
            if stream is not None:
                stream.close()
                if self._streams.get(session_id) is stream:
                    del self._streams[session_id]
            aclose = getattr(ui_chunks, "aclose", None)
            if aclose is not None:
                # Closing the UI stream closes the run behind it (a no-op once it has ended).
                await aclose()
