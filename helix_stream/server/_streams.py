"""The registry of active chat streams, for ``GET /api/chat/{id}/stream`` (resume).

This module owns :class:`StreamRegistry`. While a turn streams from this process, the chat
route serves it through :meth:`StreamRegistry.record`, which keeps every SSE event it sends in
an :class:`ActiveStream` under the session id; a client that comes (back) later gets the events
so far and then follows the stream live until it ends (the AI SDK's ``resumeStream``:
``GET <api>/<chatId>/stream``, 204 when nothing is active).

It is in-process and bounded in bytes (of the encoded events, which is what it holds): one
stream keeps at most ``max_stream_bytes``, all streams together at most ``max_bytes``, and at
most ``max_streams`` are registered at once. A stream that would pass a bound drops what it
held and stops being resumable (a follower needs every event from ``start`` to fold the
message); its live client loses nothing. A stream is removed when its turn ends. Several
processes behind a load balancer each see only their own streams.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

from helix_stream._cleanup import aclose_quietly
from helix_stream.transformers._sse import encode_sse_bytes

__all__ = ["ActiveStream", "StreamRegistry"]

UIChunk = Mapping[str, Any]

MAX_BYTES = 64 * 1024 * 1024
"""Default bound of all resumable streams together: 64 MiB."""
MAX_STREAM_BYTES = 4 * 1024 * 1024
"""Default bound of one resumable stream: 4 MiB (a 2,000-word answer is about 130 KiB)."""

# How a follower's stream ends when what it follows ends without its own end (it became too
# large to keep, or the turn's stream was closed mid-way): as failed, never as if complete.
_CUT_SHORT = (
    encode_sse_bytes(
        {
            "type": "error",
            "errorText": "This answer can no longer be followed here; reload the chat to see "
            "what was kept.",
        }
    ),
    encode_sse_bytes({"type": "finish", "finishReason": "error"}),
)
_ENDS = frozenset({"finish", "abort"})


def _ended(event: bytes) -> bool:
    """Whether ``event`` (``data: <json>``) ends a UI message stream."""
    try:
        return json.loads(event[6:]).get("type") in _ENDS
    except (ValueError, AttributeError):
        return False


class ActiveStream:
    """The SSE events a turn has sent so far, and a way to wait for the next ones.

    Attributes:
        session_id: The session whose turn this is.
        events: Every SSE event sent so far (``data: ...\\n\\n`` bytes), in order.
        size: Their total length in bytes.
        done: The turn's stream has ended (no event will be added).
        overflowed: The stream passed a bound: it can no longer be replayed.

    Example::

        streams = StreamRegistry()
        active = streams.get("session-1")                 # None once the turn's stream is gone
        if active is not None:
            print(active.size, active.done, len(active.events))
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.events: list[bytes] = []
        self.size = 0
        self.done = False
        self.overflowed = False
        self._waiters: list[asyncio.Future[None]] = []

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def follow(self) -> AsyncGenerator[bytes, None]:
        """Every event so far, then each new one as it is sent, until the stream ends.

        A stream that ends without its own end (``finish``, ``abort``) — too large to keep,
        or closed mid-way — ends the follower's with an ``error`` and a ``finish``."""
        position, last = 0, b""
        while True:
            if self.overflowed or (self.done and position >= len(self.events)):
                if position and not _ended(last):
                    for event in _CUT_SHORT:
                        yield event
                return
            while position < len(self.events):
                last = self.events[position]
                position += 1
                yield last
            if self.done or self.overflowed:
                continue  # ended meanwhile: nothing will wake a wait
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


class StreamRegistry:
    """Active streams by session id (one per session: a session runs one turn at a time).

    Args:
        max_streams: Streams registered at once at most; a turn started beyond that is served
            as usual but cannot be resumed.
        max_bytes: Bytes held by all streams together at most (default 64 MiB). A stream whose
            next event would pass it stops being resumable and frees what it held.
        max_stream_bytes: Bytes held by one stream at most (default 4 MiB).

    Example::

        streams = StreamRegistry(max_streams=500, max_bytes=32 * 1024 * 1024)
        app = create_app(executor, agent, check_caller, streams=streams)
    """

    def __init__(
        self,
        *,
        max_streams: int = 1_000,
        max_bytes: int = MAX_BYTES,
        max_stream_bytes: int = MAX_STREAM_BYTES,
    ) -> None:
        self.max_streams = max_streams
        self.max_bytes = max_bytes
        self.max_stream_bytes = max_stream_bytes
        self.held = 0
        """Bytes held by all registered streams now."""
        self._streams: dict[str, ActiveStream] = {}

    def __len__(self) -> int:
        return len(self._streams)

    def get(self, session_id: str) -> ActiveStream | None:
        """The session's active, resumable stream, or ``None``."""
        stream = self._streams.get(session_id)
        if stream is None or stream.done or stream.overflowed:
            return None
        return stream

    async def resume(self, session_id: str) -> AsyncIterator[bytes] | None:
        """The session's active stream, so far then live, or ``None`` when none is."""
        stream = self.get(session_id)
        return None if stream is None else stream.follow()

    async def record(
        self, session_id: str, ui_chunks: AsyncIterator[UIChunk]
    ) -> AsyncGenerator[bytes, None]:
        """Serve ``ui_chunks`` to one client as SSE events, keeping each for followers.

        Yields the encoded events (``data: <json>\\n\\n`` bytes), which
        :class:`~helix_stream.transformers.UIMessageStreamResponse` sends as they are: each
        chunk is encoded once, for the client and the registry alike.

        Closing the returned generator (or cancelling its consumer) closes ``ui_chunks``,
        which cancels the generation; the stream is unregistered when it ends either way.
        """
        stream: ActiveStream | None = None
        if len(self._streams) < self.max_streams or session_id in self._streams:
            stream = self._streams[session_id] = ActiveStream(session_id)
        try:
            async for chunk in ui_chunks:
                event = encode_sse_bytes(chunk)
                if stream is not None and not stream.overflowed:
                    self._keep(stream, event)
                yield event
        finally:
            if stream is not None:
                # Followers still read what it holds; the registry no longer counts it.
                self.held -= stream.size
                stream.done = True
                stream._wake()
                if self._streams.get(session_id) is stream:
                    del self._streams[session_id]
            # Closing the UI stream closes the run behind it (a no-op once it has ended).
            await aclose_quietly(ui_chunks, what="closing the turn's UI stream")

    def _keep(self, stream: ActiveStream, event: bytes) -> None:
        size = len(event)
        if stream.size + size > self.max_stream_bytes or self.held + size > self.max_bytes:
            # Drop what is held: a follower needs every event from `start` to fold the message.
            self._release(stream)
            stream.overflowed = True
        else:
            stream.events.append(event)
            stream.size += size
            self.held += size
        if stream._waiters:
            stream._wake()

    def _release(self, stream: ActiveStream) -> None:
        self.held -= stream.size
        stream.events = []
        stream.size = 0
