"""The per-step token cache (:class:`StepTokens`) and what one call holds of it (:class:`CallAuth`).

Within one step a strategy is asked at most once per (strategy, owner), however many calls
of however many tools ask: concurrent calls share one resolution in flight. Across steps a
token comes from the token store; an expired one is refreshed first when the strategy can,
else forgotten. An interactive strategy never makes a token itself: a miss is
:class:`~helix_stream.errors.AuthorizationRequiredError`.

The loop makes one :class:`StepTokens` per step and gives each call of a tool with ``auth=``
a :class:`CallAuth` (``ctx.get_token()`` and friends), then calls :meth:`CallAuth.settle`
when the tool's body is done: that is where a rejected token leaves the token store, and,
in a session that can wait for a sign-in (``AuthSettings.parks``), where an auth failure
becomes a :class:`~._flow.ParkForSignIn` (or the loop guard's error).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol

from .._auth_strategy import AuthStrategy, InteractiveAuth, TokenAuth, is_interactive
from .._token import Token, TokenRequest
from ..errors import AuthorizationRequiredError, TokenRejectedError
from ..telemetry import NOOP_RECORDER, Recorder
from ._flow import ParkForSignIn, decide_failure
from ._store import MemoryTokenStore, TokenStore, evict, token_owner

if TYPE_CHECKING:
    from .._tool_context import ToolContext
    from ..state import SessionInfo

__all__ = ["DEFAULT_AUTH", "AuthSettings", "CallAuth", "StepTokens", "TokenSource"]

logger = logging.getLogger("helix_stream.auth")

# Where a token came from, as telemetry records it.
TokenSource = Literal["step", "store", "refresh", "strategy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthSettings:
    """How a run resolves tokens.

    Attributes:
        token_store: Where tokens are kept across steps, turns and sessions.
        identify: ``identify(principal)``: the id tokens are kept under (an executor's
            ``identify``); ``None``: no principal has an id.
        parks: The run can pause a call until the user has signed in (an executor session
            with an ``auth_secret``): an interactive miss parks the call instead of failing it.
        signed_in: The calls being re-run right after their sign-in: they never park again
            (the loop guard).
        cannot_wait: Why a run that does not park cannot wait for a sign-in (the end of the
            error a miss gives).

    Example::

        settings = AuthSettings(token_store=MemoryTokenStore(), identify=lambda who: who)
        steps = StepTokens(settings)                    # a step's token cache under these settings
    """

    token_store: TokenStore = field(default_factory=MemoryTokenStore)
    identify: Callable[[Any], Any] | None = None
    parks: bool = False
    signed_in: frozenset[str] = frozenset()
    cannot_wait: str = "plain stream_text never can"


class _Authed(Protocol):
    """What the cache reads of a tool: its name and its strategy."""

    name: str
    auth: AuthStrategy | None


# Outside a session with no token store given: one store for the whole process.
DEFAULT_AUTH = AuthSettings()


@dataclass(slots=True)
class _Resolution:
    """One resolution in flight for a step, and how many calls wait on it."""

    task: asyncio.Task[tuple[Token, TokenSource]]
    waiters: int = 0


class StepTokens:
    """One step's token cache (see the module docstring).

    Example::

        steps = StepTokens()                            # one step's cache: one fetch per strategy
        call = steps.for_call(None, tool_call_id="call-1", tool_name="get_weather", session=None)
        assert call is None                             # a tool without auth= holds nothing
    """

    def __init__(self, settings: AuthSettings = DEFAULT_AUTH, recorder: Recorder = NOOP_RECORDER):
        self.settings = settings
        self.recorder = recorder
        self._resolutions: dict[tuple[str, str], _Resolution] = {}

    def for_call(
        self,
        strategy: AuthStrategy | None,
        *,
        tool_call_id: str,
        tool_name: str,
        session: SessionInfo | None,
    ) -> CallAuth | None:
        """What a call of a tool with ``strategy`` holds of this step's cache (``None``: the
        tool declares no ``auth=``)."""
        if strategy is None:
            return None
        return CallAuth(
            self, strategy, tool_call_id=tool_call_id, tool_name=tool_name, session=session
        )

    def bind(self, ctx: ToolContext[Any], tool: _Authed) -> ToolContext[Any]:
        """``ctx`` with the token access of ``tool`` (as it is when the tool has no auth)."""
        call = self.for_call(
            tool.auth, tool_call_id=ctx.tool_call_id, tool_name=tool.name, session=ctx.session
        )
        return ctx if call is None else replace(ctx, tokens=call)

    async def resolve(
        self, strategy: AuthStrategy, owner: str, request: TokenRequest
    ) -> tuple[Token, TokenSource]:
        """The token of ``owner`` for ``strategy``, and where it came from."""
        key = (strategy.name, owner)
        entry = self._resolutions.get(key)
        first = entry is None
        if entry is None:
            task = asyncio.ensure_future(self._fetch(strategy, owner, request))
            entry = self._resolutions[key] = _Resolution(task=task)
        entry.waiters += 1
        try:
            token, source = await asyncio.shield(entry.task)
        except asyncio.CancelledError:
            # The last call waiting gave up: nobody needs the resolution any more.
            if entry.waiters == 1 and not entry.task.done():
                entry.task.cancel()
                if self._resolutions.get(key) is entry:
                    del self._resolutions[key]
            raise
        finally:
            entry.waiters -= 1
        return token, source if first else "step"

    def forget(self, strategy: str, owner: str, token: Token) -> None:
        """Drop ``token`` from this step's cache (if it is still the one there)."""
        entry = self._resolutions.get((strategy, owner))
        if entry is None or not entry.task.done() or entry.task.cancelled():
            return
        if entry.task.exception() is None and entry.task.result()[0].token == token.token:
            del self._resolutions[(strategy, owner)]

    async def _fetch(
        self, strategy: AuthStrategy, owner: str, request: TokenRequest
    ) -> tuple[Token, TokenSource]:
        store = self.settings.token_store
        kept = await store.get(strategy.name, owner)
        if kept is not None and not kept.expired():
            return kept, "store"
        if kept is not None:
            fresh = await self._refresh(strategy, owner, kept)
            if fresh is not None:
                return fresh, "refresh"
            await store.delete(strategy.name, owner)
        if isinstance(strategy, TokenAuth):
            token = await strategy.fetch(request)
            if not token.expired():
                await store.put(strategy.name, owner, token)
            return token, "strategy"
        raise AuthorizationRequiredError(
            f"tool {request.tool_name!r} needs the user to sign in to {strategy.name!r}, and "
            "waiting for a sign-in needs a session that can pause its turn: this run cannot "
            f"wait ({self.settings.cannot_wait})",
            strategy=strategy.name,
            tool_name=request.tool_name,
        )

    async def _refresh(self, strategy: AuthStrategy, owner: str, kept: Token) -> Token | None:
        refresh = getattr(strategy, "refresh", None) if is_interactive(strategy) else None
        if refresh is None or not kept.refresh_token:
            return None
        try:
            fresh: Token = await refresh(kept)
        except Exception as exc:
            # No token text in the log: only what kind of failure it was.
            logger.warning(
                "core.auth.refresh_failed: refreshing the token of strategy %r failed (%s); "
                "the user signs in again",
                strategy.name,
                type(exc).__name__,
                extra={"event": "core.auth.refresh_failed"},
            )
            return None
        await self.settings.token_store.put(strategy.name, owner, fresh)
        return fresh


class CallAuth:
    """What one tool call holds of its step's token cache (behind ``ctx.get_token()``).

    Example::

        crm = hs.token_auth(lambda request: hs.Token(token="crm-key"), name="crm")
        call = StepTokens().for_call(crm, tool_call_id="call-1", tool_name="lookup", session=None)
        assert isinstance(call, CallAuth)
        token = await call.get_token()                  # what ctx.get_token() returns in the tool
    """

    def __init__(
        self,
        step: StepTokens,
        strategy: AuthStrategy,
        *,
        tool_call_id: str,
        tool_name: str,
        session: SessionInfo | None,
    ) -> None:
        self.step = step
        self.strategy = strategy
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.session = session
        self.owner = token_owner(
            session, step.settings.identify, interactive=is_interactive(strategy)
        )
        self.secrets: set[str] = set()  # what this call's error text must not show
        self._token: Token | None = None  # the last token handed to the tool
        self._rejected = False

    @property
    def interactive(self) -> InteractiveAuth | None:
        """The strategy, when it gets its tokens from a sign-in."""
        return self.strategy if is_interactive(self.strategy) else None

    async def get_token(self) -> Token:
        """The token for this call (see :meth:`helix_stream.ToolContext.get_token`)."""
        request = TokenRequest(
            session=self.session,
            principal=None if self.session is None else self.session.auth.current,
            tool_name=self.tool_name,
        )
        token, source = await self.step.resolve(self.strategy, self.owner, request)
        self._token = token
        self.secrets |= token.secrets()
        self.step.recorder.token_resolved(
            tool_call_id=self.tool_call_id,
            strategy=self.strategy.name,
            source=source,
            secrets=token.secrets(),
        )
        return token

    def require(self) -> NoReturn:
        """Raise AuthorizationRequiredError at once (``ctx.require_auth()``)."""
        kind = "sign in to" if self.interactive is not None else "be authorized for"
        raise AuthorizationRequiredError(
            f"tool {self.tool_name!r} requires the user to {kind} {self.strategy.name!r}",
            strategy=self.strategy.name,
            tool_name=self.tool_name,
        )

    def reject(self) -> NoReturn:
        """Drop the token from the step's cache and raise TokenRejectedError
        (``ctx.reject_token()``); :meth:`settle` removes it from the token store."""
        self._rejected = True
        if self._token is not None:
            self.step.forget(self.strategy.name, self.owner, self._token)
        raise TokenRejectedError(
            f"the service called by tool {self.tool_name!r} refused its token for "
            f"{self.strategy.name!r}"
        )

    async def settle(self, error: Exception | None) -> ParkForSignIn | Exception | None:
        """The tool's body is done (``error``: what it raised): a token it rejected, by
        ``ctx.reject_token()`` or by raising TokenRejectedError, leaves the token store.

        Returns:
            What becomes of the call: ``None`` (it ended normally), the error to give it, or,
            when the run can wait (``AuthSettings.parks``), a :class:`ParkForSignIn` for an
            interactive miss or a rejected token (never for the re-run right after a
            sign-in: :func:`~._flow.decide_failure`).
        """
        rejected = self._rejected or isinstance(error, TokenRejectedError)
        if rejected and self._token is not None:
            token, self._token = self._token, None
            self.step.forget(self.strategy.name, self.owner, token)
            await evict(self.step.settings.token_store, self.strategy.name, self.owner, token)
        settings = self.step.settings
        if error is None or not settings.parks:
            return error
        return decide_failure(
            error,
            strategy=self.strategy,
            owner=self.owner,
            tool_call_id=self.tool_call_id,
            after_sign_in=self.tool_call_id in settings.signed_in,
        )
