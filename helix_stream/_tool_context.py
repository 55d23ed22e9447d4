"""What a running tool receives besides its input: :class:`ToolContext`, and the small
protocols its capabilities are typed by.

A ``ToolContext`` is made once per call, whole, by the run's tool context factory
(``helix_stream/loop/_env.py``): every capability is a field given at construction, and the
context is frozen. A capability the run cannot give is ``None``, and the method that needs it
raises a clear error (a plain ``stream_text`` call has no session to queue context in, no
sandbox, no skills).

This module sits below ``auth/``, ``sandbox/`` and the session (docs/architecture.md, "The
layers"): it names their values only through the protocols here and the plain types of the
same layer (:class:`~helix_stream.auth.Token` in ``_token.py``,
:class:`~helix_stream.sandbox.Sandbox` in ``_sandbox_protocol.py``); a skill handle is a
:class:`SkillReader`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Protocol

from pydantic import BaseModel
from typing_extensions import TypeVar

from .errors import FrameworkNotSupportedError, InvalidRequestError

if TYPE_CHECKING:
    from ._sandbox_protocol import Sandbox
    from ._token import Token
    from .state import SessionInfo

__all__ = [
    "ChunkWriter",
    "ContextQueue",
    "ContextT",
    "ItemLike",
    "SandboxAccess",
    "SkillFileReader",
    "SkillReader",
    "TokenAccess",
    "ToolContext",
]

# A context item as a tool passes it: a dict, or a pydantic model of one.
ItemLike = Mapping[str, Any] | BaseModel

# The type of a tool's validated context (its context_schema), ``Any`` when not given.
ContextT = TypeVar("ContextT", default=Any)

_DATA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ContextQueue(Protocol):
    """Where one call queues context items (``ctx.add_context``)."""

    async def add(self, items: Sequence[ItemLike]) -> int:
        """Queue ``items`` (source ``tool``); how many were recorded (first wins per call site)."""
        ...


class TokenAccess(Protocol):
    """One call's share of its step's token cache (``ctx.get_token()`` and friends)."""

    async def get_token(self) -> Token:
        """The token of the tool's strategy for the current principal."""
        ...

    def require(self) -> NoReturn:
        """Raise ``AuthorizationRequiredError`` at once."""
        ...

    def reject(self) -> NoReturn:
        """Forget the token and raise ``TokenRejectedError``."""
        ...


class SkillFileReader(Protocol):
    """One file of a skill, read when asked (:class:`~helix_stream.sandbox.SkillFile`)."""

    async def bytes(self) -> bytes:
        """The file's bytes (``SkillNotFoundError`` when there is no such file)."""
        ...

    async def text(self) -> str:
        """The file as UTF-8 text (``SkillError`` when it is not)."""
        ...


class SkillReader(Protocol):
    """A skill by name, as ``ctx.get_skill(name)`` returns it
    (:class:`~helix_stream.sandbox.SkillHandle`)."""

    @property
    def name(self) -> str:
        """The skill's name."""
        ...

    def file(self, path: str) -> SkillFileReader:
        """One of the skill's files (``"SKILL.md"`` for the skill itself)."""
        ...


class SandboxAccess(Protocol):
    """The agent's sandbox and skills as a session gives them to a call."""

    async def get(self) -> Sandbox:
        """The agent's sandbox in this session."""
        ...

    def skill(self, name: str) -> SkillReader:
        """A handle on the agent's skill ``name``."""
        ...


# Puts a chunk (a data part a tool writes) into the run's stream.
ChunkWriter = Callable[[Any], None]


@dataclass(frozen=True, kw_only=True)
class ToolContext(Generic[ContextT]):
    """What a running tool receives besides its input.

    Example::

        class WeatherContext(BaseModel):
            api_key: str

        @hs.tool(context_schema=WeatherContext)
        async def weather(city: str, ctx: hs.ToolContext[WeatherContext]) -> str:
            forecast = await fetch_weather(city, key=ctx.context.api_key)
            return f"{forecast}"

    Attributes:
        context: This tool's validated, read-only context (``None`` without a context_schema).
        tool_call_id: The id of the call being executed.
        tool_name: The tool's name.
        session: The session this call runs in (``None`` outside an executor session).
        queue: Where ``add_context`` queues items (``None`` outside a session).
        tokens: The call's token access (``None`` when the tool declares no ``auth=``).
        sandbox: The agent's sandbox and skills (``None`` outside a session).
        writer: Puts a chunk into the run's stream (``None`` outside the loop).
    """

    context: ContextT
    tool_call_id: str
    tool_name: str
    session: SessionInfo | None = None
    queue: ContextQueue | None = None
    tokens: TokenAccess | None = None
    sandbox: SandboxAccess | None = None
    writer: ChunkWriter | None = None

    def _tokens(self, what: str) -> TokenAccess:
        if self.tokens is None:
            raise InvalidRequestError(
                f"tool {self.tool_name!r} declares no auth=: ctx.{what}() needs one, e.g. "
                "hs.tool(auth=hs.token_auth(get_token)) or hs.tool(auth=hs.oauth_auth(...))"
            )
        return self.tokens

    async def get_token(self) -> Token:
        """The token of this tool's auth strategy for the current principal.

        Within one step the strategy is asked at most once per principal, however many
        calls ask; across steps the token comes from the token store until it expires (an
        OAuth token is refreshed first when it can be).

        Raises:
            InvalidRequestError: the tool declares no ``auth=``.
            AuthorizationRequiredError: an interactive strategy has no token for this
                principal: the user must sign in first.
        """
        return await self._tokens("get_token").get_token()

    def require_auth(self) -> NoReturn:
        """Stop here until the user has signed in: raises ``AuthorizationRequiredError`` at
        once, without resolving a token first (the same path as a token miss).

        Raises:
            InvalidRequestError: the tool declares no ``auth=``.
            AuthorizationRequiredError: always, otherwise.
        """
        self._tokens("require_auth").require()

    def reject_token(self) -> NoReturn:
        """The service refused the token: forget it and stop here.

        The token leaves the per-step cache and the token store, so the next
        ``get_token()`` does not hand it out again. Raising ``hs.TokenRejectedError`` from
        the tool does the same.

        Raises:
            InvalidRequestError: the tool declares no ``auth=``.
            TokenRejectedError: always, otherwise.
        """
        self._tokens("reject_token").reject()

    async def add_context(self, items: Sequence[ItemLike]) -> int:
        """Queue context items for the session; they reach the model at its next call, once.

        Items a tool adds always carry ``source="tool"``. Re-running the same call does not
        queue them twice (first wins). Returns how many items were recorded.

        Raises:
            FrameworkNotSupportedError: the tool runs outside a session (plain ``stream_text``).
            ContextValidationError: an item is invalid; nothing is queued.
        """
        if self.queue is None:
            raise FrameworkNotSupportedError(
                "ctx.add_context needs a session: run the agent through Executor.run(), "
                "not stream_text(), to queue context from a tool."
            )
        return await self.queue.add(items)

    async def get_sandbox(self) -> Sandbox:
        """The agent's sandbox in this session (README, "Sandboxes and skills"): made at the
        session's first call, attached again later (after a restart too), shared by every
        tool of the agent; a sub-agent has its own.

        Raises:
            FrameworkNotSupportedError: no session (plain ``stream_text``), or the agent has
                no sandbox (``Agent(sandbox=...)``).
            NoActiveContextError: called after the tool's call ended.
        """
        if self.sandbox is None:
            raise FrameworkNotSupportedError(
                "ctx.get_sandbox needs a session: run the agent through Executor.run(), not "
                "stream_text(), and give it Agent(sandbox=...)."
            )
        return await self.sandbox.get()

    def get_skill(self, name: str) -> SkillReader:
        """A handle on the agent's skill ``name``: ``await handle.file(path).text()`` reads
        from the sandbox when the agent has one, else from the skill's own files; an unknown
        skill or file raises :class:`~helix_stream.errors.SkillNotFoundError` at that read.

        Raises:
            FrameworkNotSupportedError: no session (plain ``stream_text``).
        """
        if self.sandbox is None:
            raise FrameworkNotSupportedError(
                "ctx.get_skill needs a session: run the agent (Agent(skills=...)) through "
                "Executor.run(), not stream_text()."
            )
        return self.sandbox.skill(name)

    def write_data(
        self, name: str, data: Any, *, id: str | None = None, transient: bool = False
    ) -> None:
        """Stream a custom ``data-<name>`` part to the chat UI now (the AI SDK's data parts).

        Example::

            ctx.write_data("progress", {"done": 3, "of": 10}, id="progress")

        Args:
            name: The part's name: the UI sees a part of type ``data-<name>``.
            data: Its JSON-safe value.
            id: A part keeps its id: a later write with the same id replaces the earlier one
                in the client (a progress bar, a status line).
            transient: Send it, but do not keep it: it is not in the UI message the client
                keeps, nor in the stored messages.

        Raises:
            InvalidRequestError: ``name`` is not letters, digits, ``-`` or ``_``.
            FrameworkNotSupportedError: the tool is not running in the loop.
        """
        from ._step_parts import DataChunk

        if not isinstance(name, str) or not _DATA_NAME.fullmatch(name):
            raise InvalidRequestError(
                f"data part name {name!r} must be letters, digits, '-' or '_' (1 to 64)"
            )
        if self.writer is None:
            raise FrameworkNotSupportedError(
                "ctx.write_data needs a running loop: call the tool through stream_text, "
                "generate_text or Executor.run"
            )
        self.writer(DataChunk(name=name, data=data, id=id, transient=transient))

    @property
    def abort(self) -> bool:
        """Whether the run is being cancelled (the AI SDK's ``abortSignal.aborted``).

        Cancellation is asyncio's: a cancelled run cancels the tool's task, and
        ``asyncio.CancelledError`` is raised at the tool's next ``await``; a tool that works
        without awaiting can poll this.
        """
        import asyncio

        task = asyncio.current_task()
        return task is not None and task.cancelling() > 0
