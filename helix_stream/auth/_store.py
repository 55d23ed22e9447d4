"""Token stores: where tokens are kept across steps and turns, and whose token is whose.

A :class:`TokenStore` keeps one token per (strategy name, owner) until it expires.
:class:`MemoryTokenStore` is the default (per process); ``EncryptedTokenStore`` keeps them as
ciphertext in a key-value table. This module also owns the rule for the owner
(:func:`token_owner`): the principal's id as ``Executor(identify=...)`` gives it, never the
session, so that a user who signed in once is signed in for all their sessions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .._token import Token

if TYPE_CHECKING:
    from ..state import SessionInfo

__all__ = ["APP_OWNER", "MemoryTokenStore", "TokenStore", "evict", "token_key", "token_owner"]

# The owner of tokens that act for no one in particular: a call without a session, or a
# session without a caller.
APP_OWNER = "app"


class TokenStore(Protocol):
    """Where tokens are kept between steps, turns and sessions (one per strategy and owner).

    Example::

        class CountingTokenStore:                       # any object with these three methods
            def __init__(self, inner: TokenStore) -> None:
                self.inner, self.reads = inner, 0

            async def get(self, strategy: str, owner: str) -> hs.Token | None:
                self.reads += 1
                return await self.inner.get(strategy, owner)

            async def put(self, strategy: str, owner: str, token: hs.Token) -> None:
                await self.inner.put(strategy, owner, token)

            async def delete(self, strategy: str, owner: str) -> None:
                await self.inner.delete(strategy, owner)

        executor = hs.Executor(store=store, token_store=CountingTokenStore(MemoryTokenStore()))
    """

    async def get(self, strategy: str, owner: str) -> Token | None:
        """The token kept for ``owner`` under ``strategy``, or ``None``."""
        ...

    async def put(self, strategy: str, owner: str, token: Token) -> None:
        """Keep ``token`` (replacing the one kept before)."""
        ...

    async def delete(self, strategy: str, owner: str) -> None:
        """Forget the token kept for ``owner`` under ``strategy`` (if any)."""
        ...


class MemoryTokenStore:
    """Tokens in memory, for as long as the process lives (the default token store).

    Example::

        tokens = MemoryTokenStore()                     # this process only; tests and one-shot runs
        await tokens.put("calendar", "user-1", hs.Token(token="t-1"))
        assert (await tokens.get("calendar", "user-1")) is not None
    """

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], Token] = {}

    async def get(self, strategy: str, owner: str) -> Token | None:
        return self._tokens.get((strategy, owner))

    async def put(self, strategy: str, owner: str, token: Token) -> None:
        self._tokens[(strategy, owner)] = token

    async def delete(self, strategy: str, owner: str) -> None:
        self._tokens.pop((strategy, owner), None)


def token_key(strategy: str, owner: str) -> str:
    """One string for (strategy, owner): the key of a key-value row.

    Example::

        assert token_key("calendar", "user-1") != token_key("calendar", "user-2")
    """
    return json.dumps([strategy, owner], ensure_ascii=False, separators=(",", ":"))


def token_owner(
    session: SessionInfo | None,
    identify: Callable[[Any], Any] | None,
    *,
    interactive: bool,
) -> str:
    """Whose token a call asks for.

    The principal's id (``identify(session.auth.current)``) when it has one: shared by all
    of that principal's sessions. Without a session, and for a ``token_auth`` strategy in a
    session without a caller, the app's (:data:`APP_OWNER`). A caller without an id, and an
    anonymous session's sign-in, keep their token to their own session: sharing it would hand
    one person's account to another.

    Example::

        app = token_owner(None, None, interactive=True)   # no session: the app's own token
        assert app == token_owner(None, None, interactive=False)
    """
    if session is None:
        return APP_OWNER
    current = session.auth.current
    identity = identify(current) if identify is not None and current is not None else None
    if identity is not None:
        return "principal:" + json.dumps(identity, sort_keys=True, default=str)
    if current is None and not interactive:
        return APP_OWNER
    return f"session:{session.id}"


async def evict(store: TokenStore, strategy: str, owner: str, token: Token) -> bool:
    """Forget ``token`` if it is still the one kept (a fresher one stays); True if it was."""
    kept = await store.get(strategy, owner)
    if kept is None or kept.token != token.token:
        return False
    await store.delete(strategy, owner)
    return True
