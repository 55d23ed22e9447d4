"""Serve a chunk stream to the Vercel AI SDK's ``useChat`` (UI message stream protocol "v1").

Two steps, usable apart::

    from helix_stream.transformers import UIMessageStreamResponse, to_ui_message_stream

    import litellm
    from starlette.requests import Request

    async def chat(request: Request) -> UIMessageStreamResponse:
        body = await request.json()
        stream = await litellm.acompletion(model="openai/gpt-4o-mini", stream=True,
                                           messages=[{"role": "user", "content": body["text"]}])
        return UIMessageStreamResponse(to_ui_message_stream(stream))

:func:`to_ui_message_stream` maps the loop's internal chunks (or a raw litellm stream) to UI
chunk dicts, dropping context rows and ``context_skipped`` and keeping the protocol's ordering
rules; :class:`UIMessageStreamResponse` sends them as Server-Sent Events with the AI SDK's
headers and ``[DONE]`` terminator; :func:`read_ui_message` folds UI chunks into the
``UIMessage`` the client ends up with.

Modules: ``_ui_stream`` (the entry point, iteration and closing), ``_mapper`` (the per-chunk
dispatch, the message and its steps), ``_text_parts`` (open text and reasoning parts),
``_tool_mapper`` (tool calls' UI chunks), ``_ui_versions`` (which chunk types each ``ai`` major
gets), ``_error_text`` (the masked error text), ``_tool_results`` (a tool call's end as one
UI chunk), ``_litellm_stream`` (litellm stream -> internal chunks), ``_fold`` (UI chunks ->
``UIMessage``), ``_tool_parts`` (its tool parts), ``_sse`` (the SSE response).
"""

from __future__ import annotations

from helix_stream.transformers._fold import UIMessageFold, read_ui_message
from helix_stream.transformers._sse import (
    UI_MESSAGE_STREAM_HEADERS,
    UIMessageStreamResponse,
    encode_sse,
)
from helix_stream.transformers._ui_stream import UIStreamFinish, to_ui_message_stream

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "UIMessageFold",
    "UIMessageStreamResponse",
    "UIStreamFinish",
    "encode_sse",
    "read_ui_message",
    "to_ui_message_stream",
]
