"""Pending authorizations: the sign-ins a session waits for, each usable once.

A :class:`PendingAuthorization` is what a session stores when a call parks on a sign-in: the
state's nonce, the session and call it resumes, the strategy and the owner its token is for,
and the PKCE verifier, which never leaves the server. :class:`PendingAuthorizations` is the
small protocol of where they are kept; :meth:`~PendingAuthorizations.take` reads and removes
one at once, which is what makes a state usable only once (a replayed state finds nothing).
:class:`MemoryPendingAuthorizations` keeps them in memory; a session store keeps them in its
database.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["MemoryPendingAuthorizations", "PendingAuthorization", "PendingAuthorizations"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAuthorization:
    """One sign-in a call waits for.

    Attributes:
        nonce: The state's one-time nonce (the record's key).
        session_id: The session the call belongs to.
        tool_call_id: The call to re-run with the token.
        strategy: The name of the strategy to sign in to.
        owner: Whose token it will be (the token store's owner).
        code_verifier: The PKCE verifier (server-side only; never in a URL or a log).
        created_at: When the call parked (seconds since the epoch).
        expires_at: When the state stops being accepted.

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        sign_in = begin_authorization(calendar, session_id="session-1", tool_call_id="call-1",
                                      owner="user-1", signer=StateSigner("s" * 32))
        record: PendingAuthorization = sign_in.pending
        assert PendingAuthorization.from_dict(record.to_dict()) == record
    """

    nonce: str
    session_id: str
    tool_call_id: str
    strategy: str
    owner: str
    code_verifier: str = field(repr=False)
    created_at: float
    expires_at: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data for a store (it holds the verifier: keep it server-side)."""
        return {
            "nonce": self.nonce,
            "session_id": self.session_id,
            "tool_call_id": self.tool_call_id,
            "strategy": self.strategy,
            "owner": self.owner,
            "code_verifier": self.code_verifier,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingAuthorization:
        """The record :meth:`to_dict` gave."""
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


class PendingAuthorizations(Protocol):
    """Where pending authorizations are kept until their callback comes.

    Example::

        pending: PendingAuthorizations = MemoryPendingAuthorizations()
        assert await pending.take("unknown-nonce") is None
    """

    async def add(self, pending: PendingAuthorization) -> None:
        """Keep ``pending`` under its nonce."""
        ...

    async def take(self, nonce: str) -> PendingAuthorization | None:
        """Remove and return the record of ``nonce`` (``None`` if there is none), at once."""
        ...


class MemoryPendingAuthorizations:
    """Pending authorizations in memory (one process).

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        pending = MemoryPendingAuthorizations()
        sign_in = begin_authorization(calendar, session_id="session-1", tool_call_id="call-1",
                                      owner="user-1", signer=StateSigner("s" * 32))
        await pending.add(sign_in.pending)
        assert await pending.take(sign_in.pending.nonce) == sign_in.pending
        assert await pending.take(sign_in.pending.nonce) is None          # once
    """

    def __init__(self) -> None:
        self.records: dict[str, PendingAuthorization] = {}

    async def add(self, pending: PendingAuthorization) -> None:
        now = time.time()
        # Expired records can never be taken: drop them as new ones come.
        for nonce in [n for n, p in self.records.items() if p.expires_at <= now]:
            del self.records[nonce]
        self.records[pending.nonce] = pending

    async def take(self, nonce: str) -> PendingAuthorization | None:
        return self.records.pop(nonce, None)
