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

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import anyio

__all__ = ["ActiveStream", "StreamRegistry"]

UIChunk = Mapping[str, Any]


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
        """Pass ``ui_chunks`` through, recording each one for followers.

        Closing the returned generator closes ``ui_chunks`` (so a client disconnect still
        cancels the generation behind it); the stream is unregistered when it ends.
        """
        stream: ActiveStream | None = None
        if len(self._streams) < self.max_streams or session_id in self._streams:
            stream = ActiveStream(session_id, self.max_chunks)
            self._streams[session_id] = stream
        try:
            async for chunk in ui_chunks:
                if stream is not None:
                    stream.add(chunk)
                yield chunk
        finally:
            if stream is not None:
                stream.close()
                if self._streams.get(session_id) is stream:
                    del self._streams[session_id]
            aclose = getattr(ui_chunks, "aclose", None)
            if aclose is not None:
                # Shielded: after a disconnect this runs inside a cancelled scope, and closing
                # the UI stream is what cancels the model call and the tools behind it.
                with anyio.CancelScope(shield=True):
                    await aclose()
