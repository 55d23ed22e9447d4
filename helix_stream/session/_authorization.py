"""Tool authorization in sessions: a call parks on a sign-in, the callback completes it.

:class:`SessionAuthorization` (a base of ``Executor``) holds the executor's side: the token
store, the state signer made from ``auth_secret``, the strategies it has seen, and
:meth:`SessionAuthorization.complete_authorization`, which the sign-in callback calls.
:class:`TurnAuthorization` is what one turn is given of it: how its tools resolve tokens
(:class:`~helix_stream.auth.AuthSettings`, parking when there is a secret) and
:meth:`TurnAuthorization.begin`, which keeps a parked call's sign-in in the session store.

Where a parked call stands is kept on the session, as the call's answer (``helix.answer.<call
id>``, an :class:`~._meta.Answer` with ``authorization``): ``"waiting"`` in the write that
pauses the turn, then ``"authorized"``, ``"refused"`` or ``"failed"`` once the callback came.
The next run settles the call (``_pending.py``): it re-runs an authorized call alone, with
the token, or gives it its error result. The pending sign-in itself (the state's nonce, the
call, whose token it will be) is a row of the store's sign-in table (``Store.sign_in_table``,
``store/_features.py``), taken once; the PKCE verifier is derived from the secret and the nonce,
so nothing secret is stored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._auth_strategy import AuthStrategy, strategies_by_name
from ..auth._cache import AuthSettings
from ..auth._flow import (
    DEFAULT_SIGN_IN_TTL,
    AuthorizationResult,
    ParkForSignIn,
    SignIn,
    begin_authorization,
    complete_authorization,
)
from ..auth._pending import PendingAuthorization
from ..auth._state import StateSigner
from ..auth._store import MemoryTokenStore, TokenStore
from ..errors import AuthorizationStateError, FrameworkNotSupportedError, InvalidRequestError
from ..store import PendingRow, SignInTable, Store
from ._meta import Answer, TurnMeta
from ._pending import waiting_calls

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["DEFAULT_SIGN_IN_TTL", "SessionAuthorization", "TurnAuthorization", "waiting_answer"]

logger = logging.getLogger("helix_stream.auth")

_NO_SECRET = "the executor has no auth_secret to sign a sign-in with: Executor(auth_secret=...)"


class _StorePending:
    """The store's ``auth_pending`` rows as :class:`~helix_stream.auth.PendingAuthorizations`:
    the verifier is dropped when a record is kept and derived again when it is taken."""

    def __init__(self, tables: SignInTable, signer: StateSigner) -> None:
        self._tables = tables
        self._signer = signer

    async def add(self, pending: PendingAuthorization) -> None:
        row = PendingRow(
            nonce=pending.nonce,
            session_id=pending.session_id,
            tool_call_id=pending.tool_call_id,
            strategy=pending.strategy,
            owner=pending.owner,
            created_at=pending.created_at,
            expires_at=pending.expires_at,
        )
        await self._tables.add_pending(row)

    async def take(self, nonce: str) -> PendingAuthorization | None:
        row = await self._tables.take_pending(nonce)
        if row is None:
            return None
        return PendingAuthorization(
            nonce=row.nonce,
            session_id=row.session_id,
            tool_call_id=row.tool_call_id,
            strategy=row.strategy,
            owner=row.owner,
            code_verifier=self._signer.code_verifier(row.nonce),
            created_at=row.created_at,
            expires_at=row.expires_at,
        )


def waiting_answer(strategy: str, url: str) -> Answer:
    """How a parked call's answer stands until its callback comes."""
    return Answer(authorization="waiting", strategy=strategy, url=url)


class TurnAuthorization:
    """What one turn is given of its executor's tool authorization (see the module docstring).

    Attributes:
        settings: How the turn's tools resolve tokens.
    """

    def __init__(
        self,
        *,
        settings: AuthSettings,
        signer: StateSigner | None,
        pending: _StorePending | None,
        ttl: float,
        remember: Callable[[AuthStrategy], None],
    ) -> None:
        self.settings = settings
        self._signer = signer
        self._pending = pending
        self._ttl = ttl
        self._remember = remember

    async def begin(self, park: ParkForSignIn, session_id: str) -> SignIn:
        """Keep a fresh sign-in for a parked call (its ``auth_pending`` row); its URL."""
        if self._signer is None or self._pending is None:  # settings.parks is False then
            raise InvalidRequestError(_NO_SECRET)
        sign_in = begin_authorization(
            park.strategy,
            session_id=session_id,
            tool_call_id=park.tool_call_id,
            owner=park.owner,
            signer=self._signer,
            ttl=self._ttl,
            verifier=self._signer.code_verifier,
        )
        await self._pending.add(sign_in.pending)
        # The callback may come before any run of an agent that declares the strategy (an
        # MCP server's tools): it finds it here.
        self._remember(park.strategy)
        return sign_in


def _sign_in_table(store: Store) -> SignInTable:
    """The store's table of pending sign-ins; a store without one is refused."""
    table = store.sign_in_table
    if table is None:
        raise FrameworkNotSupportedError(
            f"Executor(auth_secret=...) parks calls on sign-ins, which it keeps in the session "
            f"store, and this store ({type(store).__name__}) has no sign-in table "
            "(Store.sign_in_table is None). Use a store that keeps them (MemoryStore, "
            "SQLiteStore, PostgresStore, or a wrapper that delegates sign_in_table to one), "
            "or leave auth_secret out."
        )
    return table


class SessionAuthorization:
    """The executor's tool authorization (the base of ``Executor``; see the module docstring)."""

    store: Store
    identify: Callable[[Any], Any]
    token_store: TokenStore

    def _init_authorization(
        self,
        auth_secret: str | bytes | None,
        token_store: TokenStore | None,
        sign_in_ttl: float,
    ) -> None:
        if not sign_in_ttl > 0:
            raise InvalidRequestError("sign_in_ttl must be a positive number of seconds")
        self._sign_ins = _sign_in_table(self.store) if auth_secret is not None else None
        self.token_store = token_store if token_store is not None else MemoryTokenStore()
        self._signer = StateSigner(auth_secret) if auth_secret is not None else None
        self._sign_in_ttl = float(sign_in_ttl)
        self._strategies: dict[str, AuthStrategy] = {}

    def _pending(self, signer: StateSigner) -> _StorePending:
        assert self._sign_ins is not None  # there is a table whenever there is a signer
        return _StorePending(self._sign_ins, signer)

    def _remember(self, strategy: AuthStrategy) -> None:
        self._strategies.setdefault(strategy.name, strategy)

    def _turn_authorization(self, agent: Agent) -> TurnAuthorization:
        """What a turn of ``agent`` is given (and the agent's strategies remembered)."""
        for strategy in strategies_by_name(agent.tool_map).values():
            self._remember(strategy)
        signer = self._signer
        settings = AuthSettings(
            token_store=self.token_store,
            identify=self.identify,
            parks=signer is not None,
            cannot_wait=_NO_SECRET,
        )
        return TurnAuthorization(
            settings=settings,
            signer=signer,
            pending=None if signer is None else self._pending(signer),
            ttl=self._sign_in_ttl,
            remember=self._remember,
        )

    async def complete_authorization(
        self,
        state: str,
        code: str | None = None,
        *,
        error: str | None = None,
        agent: Agent | None = None,
    ) -> AuthorizationResult:
        """Finish the sign-in a parked call waits for (what the sign-in callback calls).

        With ``code`` (the service said yes), the code is exchanged for a token, which the
        token store keeps, and the call is marked ready: the next ``run(agent, session_id)``
        (with no new message) re-runs only that call, with the token, and the turn goes on.
        With ``error`` (the user said no, or the service failed), or when the exchange fails,
        the call is marked with its error result ("The user did not authorize ..."), which
        the next run gives it; the turn goes on all the same.

        Args:
            state: The ``state`` of the callback.
            code: The callback's ``code``.
            error: The callback's ``error`` (an OAuth error code).
            agent: The agent whose tool parked (its strategies); by default the strategies
                of the agents this executor has run.

        Returns:
            What became of the call (``status``, ``error_text``: no secret in either).

        Raises:
            AuthorizationStateError: the state is forged, expired, malformed or used before,
                or this executor has no ``auth_secret`` (400; nothing was written).
            InvalidRequestError: neither or both of ``code`` and ``error`` (nothing written).
        """
        if self._signer is None:
            raise AuthorizationStateError(_NO_SECRET)
        strategies: Mapping[str, AuthStrategy] = self._strategies
        if agent is not None:
            strategies = {**self._strategies, **strategies_by_name(agent.tool_map)}
        result = await complete_authorization(
            state,
            code=code,
            error=error,
            signer=self._signer,
            pending=self._pending(self._signer),
            strategies=strategies,
            token_store=self.token_store,
        )
        await self._mark(result)
        return result

    async def _mark(self, result: AuthorizationResult) -> None:
        """Record the outcome as the answer of the parked call, and of every other call of
        the session that waits for a sign-in to the same strategy (one sign-in serves them
        all; the user's "no" too). A call that no longer waits (a new message moved the
        session on) is left alone: the outcome is only logged."""
        session_id, call_id = result.session_id, result.tool_call_id
        snapshot = await self.store.read_snapshot(session_id)
        session = snapshot.session
        waiting = {w.call.id for w in waiting_calls(snapshot.log)}
        calls: list[str] = []
        if session is not None and session.status != "running" and call_id in waiting:
            meta = TurnMeta.read(session.meta)
            calls = [call_id] + [
                other
                for other, answer in meta.answers.items()
                if other in waiting
                and other != call_id
                and answer.authorization == "waiting"
                and answer.strategy == result.strategy
            ]
            answer = Answer(
                authorization=result.status, strategy=result.strategy, reason=result.error_text
            )
            patch: dict[str, Any] = {}
            for marked in calls:
                patch.update(TurnMeta.answer(marked, answer))
            await self.store.update_session_meta(session_id, patch)
        logger.info(
            "core.auth.sign_in_completed: the sign-in of call %s to %r ended %s%s",
            call_id,
            result.strategy,
            result.status,
            "" if calls else " (the call no longer waits for it)",
            extra={
                "event": "core.auth.sign_in_completed",
                "session_id": session_id,
                "tool_call_id": call_id,
                "status": result.status,
                "calls": calls,
            },
        )
