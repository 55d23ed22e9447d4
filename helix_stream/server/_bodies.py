"""Request bodies at the HTTP edge: reading them (size limit, JSON), validating them (pydantic),
and reading what a ``useChat`` body asks for.

This module owns everything the server learns from a request body. Bodies are read with a size
limit (the ``content-length`` header first, then the bytes as they arrive), parsed as JSON and
validated with pydantic models; any failure is a typed :mod:`helix_stream.errors` error whose
message says what was wrong, never a pydantic traceback.

The ``useChat`` body is validated loosely (``extra="ignore"``: clients and apps add fields),
the ``POST /context`` body strictly (``extra="forbid"``: a typo must not be ignored). Both follow
the input rules of :mod:`helix_stream._limits`: a body nested more than ``MAX_JSON_DEPTH`` deep or
holding a lone surrogate anywhere is refused, and so is a session id or key that is too long or
holds a control character; each refusal is one short log line, never a traceback.
:func:`chat_actions` reads the messages of a ``useChat`` body: the new user input, and the
answers to a paused turn that come back inside the last assistant message
(docs/ui-message-stream.md, "The request": tool part states ``approval-responded`` and
``output-available``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import ClientDisconnect, Request

from .._limits import MAX_KEY_LENGTH, check_json, id_problem, too_deep
from ..errors import InvalidRequestError, PayloadTooLargeError, describe_validation
from ..session import ApprovalAnswer, ToolAnswer
from ._parts import user_content

__all__ = [
    "ApprovalAnswer",
    "ChatActions",
    "ChatRequest",
    "ContextRequest",
    "ToolAnswer",
    "UIMessageIn",
    "chat_actions",
    "parse_body",
    "read_body",
]

_Model = TypeVar("_Model", bound=BaseModel)
logger = logging.getLogger("helix_stream.server")


def _session_id(value: str) -> str:
    # A ValueError, so that pydantic reports it with the field's location.
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _key(value: str | None) -> str | None:
    problem = None if value is None else id_problem(value, what="key", limit=MAX_KEY_LENGTH)
    if problem is not None:
        raise ValueError(problem)
    return value


SessionId = Annotated[str, AfterValidator(_session_id)]


class UIMessageIn(BaseModel):
    """One AI SDK ``UIMessage`` as ``useChat`` sends it (only what the server reads is checked)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[dict[str, Any]]


class ChatRequest(BaseModel):
    """The body of ``POST /api/chat``: ``{id, messages, trigger, messageId?, ...}``."""

    model_config = ConfigDict(extra="ignore")

    id: SessionId = Field(description="The chat id; the server uses it as the session id.")
    messages: list[UIMessageIn] = Field(min_length=1)
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    messageId: str | None = None  # the AI SDK's camelCase field name


class ContextRequest(BaseModel):
    """The body of ``POST /context``: ``{sessionId, items, key?}`` (README, "Serving an agent
    to `useChat`")."""

    model_config = ConfigDict(extra="forbid")

    sessionId: SessionId  # the wire name clients send
    # Items stay loose here: the executor validates each one and answers a bad item with a
    # validation_error that names it.
    items: list[Any]
    key: Annotated[str | None, AfterValidator(_key)] = None


async def read_body(request: Request, max_bytes: int) -> bytes:
    """Read the whole body, refusing more than ``max_bytes``.

    The declared ``content-length`` is checked before anything is read; a chunked body (or one
    that lies about its length) is counted as it arrives and refused as soon as it passes the
    limit, so an oversized body is never held in memory.

    Raises:
        PayloadTooLargeError: the body is larger than ``max_bytes``.
        InvalidRequestError: the ``content-length`` header is not a number, or the client went
            away while sending.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise InvalidRequestError(f"content-length {declared!r} is not a number") from None
        if length > max_bytes:
            raise PayloadTooLargeError(_too_large(max_bytes))
    received = bytearray()
    try:
        async for piece in request.stream():
            received += piece
            if len(received) > max_bytes:
                raise PayloadTooLargeError(_too_large(max_bytes))
    except ClientDisconnect:
        raise InvalidRequestError("the client went away while sending the request body") from None
    return bytes(received)


def _too_large(max_bytes: int) -> str:
    return f"the request body is larger than {max_bytes} bytes; send less"


def parse_body(raw: bytes, model: type[_Model]) -> _Model:
    """Parse ``raw`` as JSON and validate it as ``model``.

    Raises:
        InvalidRequestError: not JSON, nested too deep, holding a lone surrogate, not an
            object, or the wrong shape (the message lists each problem with its location,
            e.g. ``messages.0.role: ...``). Logged as one line on ``helix_stream.server``.
    """
    try:
        return _parse(raw, model)
    except InvalidRequestError as exc:
        logger.info("refused a %s body: %s", model.__name__, exc.message[:300])
        raise


def _parse(raw: bytes, model: type[_Model]) -> _Model:
    try:
        data = json.loads(raw)
    except RecursionError:
        # json's C parser stops at the interpreter's recursion limit, long before the stack
        # would: the answer is the same as for any other body nested too deep.
        raise too_deep() from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidRequestError(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(
            f"the request body must be a JSON object, not {type(data).__name__}"
        )
    check_json(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequestError(_problems(exc, model)) from None


def _problems(exc: ValidationError, model: type[BaseModel]) -> str:
    problems = describe_validation(exc, root="(body)")
    return f"the request body is not a valid {model.__name__}: {problems}"


@dataclass(frozen=True, slots=True)
class ChatActions:
    """What a ``useChat`` body asks the server to do.

    Attributes:
        user_content: The new user message as model content (its text, or text and file
            content parts), or ``None`` when the last message is the assistant's: the turn
            continues without new input.
        user_parts: That message's text and file parts as sent (stored with it).
        user_message_id: The client's id of that user message.
        continued_id: The id of the assistant message being continued (``None`` for new input).
        approvals: Approval answers found in the last assistant message.
        tool_answers: Client tool outputs found in the last assistant message.
    """

    user_content: str | list[dict[str, Any]] | None
    user_message_id: str | None
    continued_id: str | None
    approvals: list[ApprovalAnswer] = field(default_factory=list)
    tool_answers: list[ToolAnswer] = field(default_factory=list)
    user_parts: list[dict[str, Any]] = field(default_factory=list)


def _is_tool_part(part: Mapping[str, Any]) -> bool:
    kind = str(part.get("type", ""))
    return kind == "dynamic-tool" or kind.startswith("tool-")


def _answers(message: UIMessageIn) -> tuple[list[ApprovalAnswer], list[ToolAnswer]]:
    approvals: list[ApprovalAnswer] = []
    outputs: list[ToolAnswer] = []
    for index, part in enumerate(message.parts):
        if not _is_tool_part(part):
            continue
        state, call_id = part.get("state"), part.get("toolCallId")
        if not isinstance(call_id, str):
            raise InvalidRequestError(
                f"message {message.id!r} part {index}: a tool part needs a string toolCallId"
            )
        if state == "approval-responded":
            approval = part.get("approval")
            if not isinstance(approval, Mapping) or not isinstance(approval.get("id"), str):
                raise InvalidRequestError(
                    f"message {message.id!r} part {index}: an approval-responded tool part "
                    "needs approval: {id, approved, reason?}"
                )
            reason = approval.get("reason")
            approvals.append(
                ApprovalAnswer(
                    approval_id=approval["id"],
                    approved=approval.get("approved") is True,
                    reason=reason if isinstance(reason, str) else None,
                )
            )
        elif state == "output-available" and part.get("preliminary") is not True:
            # A preliminary output is a sub-agent's progress the server sent, never an answer.
            outputs.append(ToolAnswer(tool_call_id=call_id, output=part.get("output")))
        elif state == "output-error":
            # addToolOutput({state: "output-error"}) (ai v6+): the call failed on the client.
            failed = {"error": part.get("errorText")}
            outputs.append(ToolAnswer(tool_call_id=call_id, output=failed))
    return approvals, outputs


def chat_actions(body: ChatRequest) -> ChatActions:
    """Read what a ``useChat`` body asks for (see :class:`ChatActions`).

    Answers are taken from the last assistant message only: that is where the client keeps
    the calls of a paused turn. Older answers in the history are ignored by the caller anyway
    (only calls the session still waits on are answered).

    Raises:
        InvalidRequestError: the last message is a system message, a user message without
            text or file, a file the model cannot be sent, or a malformed tool part.
    """
    last = body.messages[-1]
    assistant = next((m for m in reversed(body.messages) if m.role == "assistant"), None)
    approvals, outputs = _answers(assistant) if assistant is not None else ([], [])
    if last.role == "assistant":
        return ChatActions(None, None, last.id, approvals, outputs)
    if last.role != "user":
        raise InvalidRequestError("the last message must be the user's or the assistant's")
    where = f"messages[{len(body.messages) - 1}] (the last user message, {last.id[:200]!r})"
    content, parts = user_content(last.parts, where)
    return ChatActions(content, last.id, None, approvals, outputs, user_parts=parts)
