"""A run's one event stream: who subscribes to it, in which order.

This module owns :func:`run_event_stream`. A session makes its turn's stream when the turn
opens and hands it to the run (``LoopConfig.events``); a run without a session makes its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .._event_stream import EventStream, Subscriber
from ..telemetry import Recorder
from ..telemetry._recorder import recorder_subscriber
from ._config import Callbacks, call_user
from ._lifecycle import AliasSubscriber, LifecycleSubscriber

__all__ = ["run_event_stream"]


def run_event_stream(
    recorder: Recorder,
    callbacks: Callbacks,
    *,
    session_id: str | None,
    scope: Callable[[], AbstractContextManager[None]],
    subscribers: Sequence[Subscriber] = (),
) -> EventStream:
    """A run's one event stream. Its subscribers, in the order they see an event: telemetry,
    ``subscribers`` (a session's: its hooks), the older callbacks, the lifecycle callbacks
    (which run inside ``scope``, the session binding). A session makes its turn's stream
    when the turn opens and hands it to the run (``LoopConfig.events``): the session's own
    events and the run's go through the same one."""

    async def call(fn: Any, event: Any) -> Any:
        return await call_user(fn, event, scope=scope)

    every = [
        recorder_subscriber(recorder),
        *subscribers,
        AliasSubscriber(callbacks.on_step_finish, callbacks.on_finish, callbacks.on_error, call),
        LifecycleSubscriber.of(callbacks.lifecycle, call),
    ]
    on_chunk = callbacks.on_chunk
    return EventStream(
        [s for s in every if s is not None and s.kinds],
        on_chunk=(lambda chunk: call(on_chunk, chunk)) if on_chunk is not None else None,
        session_id=session_id,
    )
