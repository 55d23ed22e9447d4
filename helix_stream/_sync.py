"""The sync entry points' one bridge: coroutines run on one event loop in a daemon thread.

``generate_text_sync``, ``stream_text_sync``, ``Executor.run_sync`` and ``wrap_completion``
are for code that has no event loop (a script, a notebook cell that is not async, a Django
view, a Celery task). Each submits its coroutine to one loop the package runs in a thread of
its own (made at the first sync call) and waits for the answer in the calling thread; a stream
comes back through a queue, chunk by chunk. One loop for all of them: the HTTP clients
litellm and the package keep for a loop stay open between calls, which a fresh
``asyncio.run`` per call would close and make again.

Called where an event loop is running, a sync form would block that loop while waiting for a
loop of its own: it raises a ``RuntimeError`` naming the async form instead.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["SyncStream", "check_no_running_loop", "run_sync", "sync_iterator"]

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()
_DONE = object()


def check_no_running_loop(name: str, async_form: str) -> None:
    """Raise ``RuntimeError`` when called in a thread whose event loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{name}() was called inside a running event loop, which it would block: use "
        f"`{async_form}` there (the sync form is for code without an event loop)."
    )


def _bridge_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="helix_stream-sync", daemon=True
            )
            thread.start()
            _loop = loop
    return _loop


def run_sync(name: str, async_form: str, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the bridge loop and return its result (or raise its error)."""
    try:
        check_no_running_loop(name, async_form)
    except RuntimeError:
        coro.close()  # never awaited: no "was never awaited" warning
        raise
    return asyncio.run_coroutine_threadsafe(coro, _bridge_loop()).result()


class SyncStream(Generic[T]):
    """An async iterator read from a thread without an event loop: iterate it with ``for``.

    The async iterator is read on the bridge loop into a queue; ``close()`` (or leaving a
    ``with`` block, or dropping the iterator half-read) stops it there.
    """

    def __init__(self, source: AsyncIterator[T]) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._future = asyncio.run_coroutine_threadsafe(self._pump(source), _bridge_loop())
        self._finished = False

    async def _pump(self, source: AsyncIterator[T]) -> None:
        try:
            async for item in source:
                self._queue.put(item)
        except BaseException as exc:  # handed to the reader, raised there
            self._queue.put(_Raised(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                await aclose()
            self._queue.put(_DONE)

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._finished:
            raise StopIteration
        item = self._queue.get()
        if item is _DONE:
            self._finished = True
            raise StopIteration
        if isinstance(item, _Raised):
            self._finished = True
            raise item.error
        return item  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop reading: the source is closed on the bridge loop."""
        if not self._finished:
            self._finished = True
            self._future.cancel()

    def __enter__(self) -> SyncStream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class _Raised:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def sync_iterator(name: str, async_form: str, source: AsyncIterator[T]) -> SyncStream[T]:
    """``source`` as a :class:`SyncStream` (refused inside a running loop)."""
    check_no_running_loop(name, async_form)
    return SyncStream(source)
