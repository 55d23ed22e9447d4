"""A tool's token (:class:`Token`) and what a strategy is asked with (:class:`TokenRequest`).

A token is a secret: its ``repr`` shows neither the token nor the refresh token, and it
reaches nothing but the tool that asked for it and the token store (README, "Tools that act
for the user: authorization").
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import InvalidRequestError

if TYPE_CHECKING:
    from .state import SessionInfo

__all__ = ["EXPIRY_LEEWAY", "PrincipalType", "Token", "TokenRequest"]

PrincipalType = Literal["app", "user"]

# A token this close to its expiry is treated as expired: a call that starts with it would
# likely see it expire on the way to the service.
EXPIRY_LEEWAY = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    """A bearer token for the service a tool calls.

    Attributes:
        token: The token itself (``Authorization: Bearer <token>``).
        expires_at: When it expires (seconds since the epoch), or ``None`` if it does not.
        scopes: What it grants.
        principal_type: Whom it acts for: ``"app"`` (an API key of the app) or ``"user"``
            (a user's own account, from a sign-in).
        refresh_token: What an OAuth strategy refreshes it with (never given to the model).

    Example::

        import time

        token = hs.Token(token="t-1", expires_at=time.time() + 3600, scopes=("events.read",))
        assert not token.expired()
    """

    token: str = field(repr=False)
    expires_at: float | None = None
    scopes: tuple[str, ...] = ()
    principal_type: PrincipalType = "app"
    refresh_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.token, str) or not self.token:
            raise InvalidRequestError("Token(token=...) must be a non-empty string")
        if not isinstance(self.scopes, tuple):
            # A list is the natural thing to pass; the token stays frozen (and hashable).
            object.__setattr__(self, "scopes", tuple(self.scopes))

    def expired(self, now: float | None = None, *, leeway: float = EXPIRY_LEEWAY) -> bool:
        """Whether the token has expired (or will within ``leeway`` seconds)."""
        if self.expires_at is None:
            return False
        return self.expires_at - leeway <= (time.time() if now is None else now)

    def secrets(self) -> set[str]:
        """The strings of this token that must be kept out of error texts and spans."""
        return {s for s in (self.token, self.refresh_token) if s}

    def to_dict(self) -> dict[str, Any]:
        """The token as JSON-safe data (what a token store keeps)."""
        return {
            "token": self.token,
            "expires_at": self.expires_at,
            "scopes": list(self.scopes),
            "principal_type": self.principal_type,
            "refresh_token": self.refresh_token,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Token:
        """The token :meth:`to_dict` gave."""
        scopes: Sequence[str] = data.get("scopes") or ()
        return cls(
            token=data["token"],
            expires_at=data.get("expires_at"),
            scopes=tuple(scopes),
            principal_type=data.get("principal_type", "app"),
            refresh_token=data.get("refresh_token"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenRequest:
    """What a ``token_auth`` function is called with.

    Attributes:
        session: The session the tool runs in (``None`` in a plain ``stream_text`` call).
        principal: Who the tool acts for: ``session.auth.current`` (``None`` without one).
        tool_name: The tool that asked first (a token serves every tool of its strategy).

    Example::

        def crm_key(request: hs.TokenRequest) -> hs.Token:
            who = request.principal or "the app"   # session.auth.current, when a caller is known
            print("token for", who, "asked by", request.tool_name)
            return hs.Token(token=os.environ["CRM_API_KEY"])

        crm = hs.token_auth(crm_key)
    """

    session: SessionInfo | None
    principal: Any
    tool_name: str
