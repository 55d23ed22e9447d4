"""Internal chunks -> AI SDK UI message chunks (``ai`` v5, v6, v7; wire protocol "v1").

This module owns :func:`to_ui_message_stream` and the mapping behind it. It reads the chunk
stream of :mod:`helix_stream.chunks` (or a raw litellm stream, through
:mod:`._litellm_stream`) and writes the UI chunk dicts that ``useChat`` validates with the
``ai`` package's ``uiMessageChunkSchema``, keeping every rule of the protocol
(``docs/ui-message-stream.md``):

* a whitelist at the boundary: context rows and ``context_skipped`` never leave, nor anything
  the client version would reject;
* ``start`` first; text/reasoning deltas only inside their part; open parts closed before
  ``finish-step``, ``finish`` and after an error; no part id reused in a message;
* tool results only for an announced tool call; ``tool-output-available`` always has ``output``;
* for a failure: the open parts ended, one masked ``error``, then
  ``finish {"finishReason": "error"}``;
* for a stopped run (an ``Abort`` chunk): the open parts ended, then ``abort``.

The per-chunk path is plain dict building dispatched on the chunk class (the README's Performance
budgets); folding for ``on_finish`` only happens when ``on_finish`` is given.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any

from helix_stream._cleanup import run_cleanup
from helix_stream.chunks import Finish, FinishReason, Start
from helix_stream.transformers._fold import UIMessage, UIMessageFold
from helix_stream.transformers._litellm_stream import is_litellm_chunk, litellm_to_chunks
from helix_stream.transformers._mapper import UIChunk, UIChunkMapper

__all__ = ["UIStreamFinish", "to_ui_message_stream"]

logger = logging.getLogger("helix_stream.transformers")

_END: Any = object()


@dataclass(frozen=True, slots=True, kw_only=True)
class UIStreamFinish:
    """What ``on_finish`` receives once the UI stream is over.

    Attributes:
        message: The assistant ``UIMessage`` as the client folded it (id, role, parts and
            metadata when any was sent); for a continuation, the continued message.
        messages: ``original_messages`` with ``message`` appended (or replacing the last one
            for a continuation), as the AI SDK's ``onFinish`` gives them.
        is_continuation: The stream continued the last assistant message of
            ``original_messages``.
        is_aborted: The consumer stopped (disconnect, cancellation) before ``finish`` was sent,
            or the run was stopped (an ``Abort`` chunk: ``abort`` was sent).
        finish_reason: The ``finishReason`` sent in ``finish`` (``None`` when aborted before it).

    Example::

        def saved(finish: UIStreamFinish) -> None:
            if not finish.is_aborted:
                print(finish.finish_reason, finish.message["id"], len(finish.messages))

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        ui = to_ui_message_stream(result, on_finish=saved)
    """

    message: UIMessage
    messages: list[UIMessage] = field(default_factory=list)
    is_continuation: bool = False
    is_aborted: bool = False
    finish_reason: FinishReason | None = None


OnFinish = Callable[[UIStreamFinish], Awaitable[None] | None]


def to_ui_message_stream(
    source: AsyncIterable[Any],
    *,
    client_version: int = 5,
    send_reasoning: bool = True,
    send_sources: bool = False,
    send_start: bool = True,
    send_finish: bool = True,
    message_metadata: Callable[[Start | Finish], Mapping[str, Any] | None] | None = None,
    generate_message_id: Callable[[], str] | None = None,
    original_messages: Sequence[Mapping[str, Any]] | None = None,
    on_error: Callable[[BaseException], str] | None = None,
    on_finish: OnFinish | None = None,
) -> AsyncGenerator[UIChunk, None]:
    """Turn a chunk stream into the AI SDK UI message stream (dicts with camelCase keys).

    Args:
        source: An async iterable of :mod:`helix_stream.chunks` chunks, or the stream that
            ``litellm.acompletion(..., stream=True)`` returns (told apart by its first item).
        client_version: The major version of the ``ai`` package the client runs (5, 6 or 7).
            v5 clients reject ``tool-approval-request`` and ``tool-output-denied``: for them an
            approval request is dropped and a denial is sent as ``tool-output-error``.
        send_reasoning: Send reasoning parts.
        send_sources: Send ``source-url`` parts for the sources the model cited (URL
            annotations, a provider's ``citations``); off by default, as in the AI SDK.
        send_start: Send the ``start`` chunk.
        send_finish: Send the ``finish`` chunk.
        message_metadata: Called with the ``Start`` and the ``Finish`` chunk; a dict it
            returns is sent as ``messageMetadata`` on ``start``/``finish``. If it raises, the
            error is logged and no metadata is sent.
        generate_message_id: Makes the ``messageId`` of ``start`` for a new message.
        original_messages: The conversation the client sent. When it ends with an assistant
            message the stream continues that message and ``start`` carries its id.
        on_error: Chooses the ``errorText`` for an error (default: ``"An error occurred."``,
            so that server internals do not leak). If it raises, the default is sent.
        on_finish: Called once when the stream is over, also after an error or when the
            consumer stopped early, with a :class:`UIStreamFinish` (sync or async).

    Returns:
        An async iterator of UI chunk dicts. Closing it (``aclose``, or a client disconnect
        through :class:`~helix_stream.transformers.UIMessageStreamResponse`) closes the source,
        which cancels the generation behind it.

    Raises:
        ValueError: ``client_version`` is not 5, 6 or 7.

    Example::

        from helix_stream.transformers import UIMessageStreamResponse, to_ui_message_stream

        import litellm

        stream = await litellm.acompletion(model="openai/gpt-4o-mini", stream=True,
                                           messages=[{"role": "user", "content": "Hi"}])
        response = UIMessageStreamResponse(to_ui_message_stream(stream))   # a route's, for useChat
    """
    if client_version not in (5, 6, 7):
        raise ValueError(
            f"client_version must be 5, 6 or 7 (the major version of the 'ai' npm package "
            f"the client uses), not {client_version!r}"
        )
    last = original_messages[-1] if original_messages else None
    continued = dict(last) if last is not None and last.get("role") == "assistant" else None
    mapper = UIChunkMapper(
        client_version=client_version,
        send_reasoning=send_reasoning,
        send_sources=send_sources,
        send_start=send_start,
        send_finish=send_finish,
        message_metadata=message_metadata,
        message_id=continued.get("id") if continued else None,
        generate_message_id=None if continued else generate_message_id,
        on_error=on_error,
        continued_message=continued,
        fold=UIMessageFold(continued) if on_finish is not None else None,
    )
    return _run(source, mapper, on_finish, original_messages or (), continued)


async def _run(
    source: AsyncIterable[Any],
    mapper: UIChunkMapper,
    on_finish: OnFinish | None,
    original_messages: Sequence[Mapping[str, Any]],
    continued: Mapping[str, Any] | None,
) -> AsyncGenerator[UIChunk, None]:
    handle = mapper.handle
    iterator: AsyncIterator[Any] = source.__aiter__()
    stream = iterator
    try:
        try:
            first = await anext(iterator, _END)
            if first is not _END:
                if is_litellm_chunk(first):
                    stream = litellm_to_chunks(first, iterator)
                else:
                    for out in handle(first):
                        yield out
                # After finish or an error the rest is drained, not closed: a source may still
                # have work to do after its last chunk (e.g. commit to a store).
                async for chunk in stream:
                    for out in handle(chunk):
                        yield out
        except Exception as exc:  # asyncio.CancelledError is a BaseException: it propagates
            for out in mapper.fail(exc):
                yield out
        else:
            for out in mapper.end():
                yield out
    finally:
        # Closing the source must run even when this task is being cancelled (a client went
        # away): it cancels the model call. The iterator if it can be closed, else the
        # iterable (e.g. a result object whose iterator only closes when garbage-collected but
        # which has its own aclose()).
        closable = stream if hasattr(stream, "aclose") else source
        await run_cleanup(
            lambda: _close(closable, on_finish, mapper, original_messages, continued),
            what="closing the chunk source",
        )


async def _close(
    closable: object,
    on_finish: OnFinish | None,
    mapper: UIChunkMapper,
    original_messages: Sequence[Mapping[str, Any]],
    continued: Mapping[str, Any] | None,
) -> None:
    aclose = getattr(closable, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            logger.exception("closing the chunk source failed")
    if on_finish is not None:
        await _call_on_finish(on_finish, mapper, original_messages, continued)


async def _call_on_finish(
    on_finish: OnFinish,
    mapper: UIChunkMapper,
    original_messages: Sequence[Mapping[str, Any]],
    continued: Mapping[str, Any] | None,
) -> None:
    assert mapper.fold is not None
    message = mapper.fold.message
    is_continuation = continued is not None and message.get("id") == continued.get("id")
    previous = [dict(m) for m in original_messages]
    if is_continuation:
        previous = previous[:-1]
    result = UIStreamFinish(
        message=message,
        messages=[*previous, message],
        is_continuation=is_continuation,
        is_aborted=mapper.aborted or not mapper.finished,
        finish_reason=mapper.finish_reason,
    )
    try:
        outcome = on_finish(result)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        logger.exception("on_finish raised")
