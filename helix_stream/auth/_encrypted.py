"""``EncryptedTokenStore``: tokens as Fernet ciphertext in a small key-value table.

The table is anything with the :class:`KeyValueStore` protocol (three async methods), so that
a database only has to add a table of ``(key TEXT PRIMARY KEY, value BLOB)``;
:class:`MemoryKeyValueStore` is the in-memory one. Each value is encrypted with the app's
key (``cryptography``'s Fernet: AES-128-CBC with HMAC-SHA256, the ``crypto`` extra) and
names its own row inside the ciphertext, so a row copied onto another owner's key is refused
rather than handed to that owner. A value that cannot be decrypted (a key rotated away, a
damaged row) is treated as no token: the user signs in again, nothing fails.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._token import Token
from ..errors import FrameworkNotSupportedError, InvalidRequestError
from ..store._features import TokenTable
from ._store import token_key

if TYPE_CHECKING:
    from ..store._protocol import Store

__all__ = ["EncryptedTokenStore", "KeyValueStore", "MemoryKeyValueStore"]

logger = logging.getLogger("helix_stream.auth")


KeyValueStore = TokenTable
"""A table of byte values by string key (what ``EncryptedTokenStore`` writes to): three async
methods, ``get``, ``set`` and ``delete``; a session store's ``token_table`` is one."""


class MemoryKeyValueStore:
    """A :class:`KeyValueStore` in a dict (tests, and one process's worth of tokens).

    Example::

        key = hs.EncryptedTokenStore.generate_key()
        tokens = hs.EncryptedTokenStore(MemoryKeyValueStore(), key=key)
        await tokens.put("calendar", "user-1", hs.Token(token="t-1"))
    """

    def __init__(self) -> None:
        self.rows: dict[str, bytes] = {}

    async def get(self, key: str) -> bytes | None:
        return self.rows.get(key)

    async def set(self, key: str, value: bytes) -> None:
        self.rows[key] = value

    async def delete(self, key: str) -> None:
        self.rows.pop(key, None)


def _fernet(keys: str | bytes | Sequence[str | bytes]) -> Any:
    try:
        from cryptography.fernet import Fernet, MultiFernet
    except ImportError:  # pragma: no cover - the extra is installed in the test environment
        raise FrameworkNotSupportedError(
            "EncryptedTokenStore needs the cryptography package: pip install 'helix-stream[crypto]'"
        ) from None
    given = [keys] if isinstance(keys, (str, bytes)) else list(keys)
    if not given:
        raise InvalidRequestError("EncryptedTokenStore needs at least one key")
    try:
        return MultiFernet([Fernet(k) for k in given])
    except (ValueError, TypeError):
        # The message never quotes the key.
        raise InvalidRequestError(
            "EncryptedTokenStore: a key is not a Fernet key (32 url-safe base64-encoded "
            "bytes); make one with EncryptedTokenStore.generate_key()"
        ) from None


def _rows_of(table: KeyValueStore | Store) -> KeyValueStore:
    """``table`` itself, or a session store's own table of token rows (``token_table``)."""
    if isinstance(table, TokenTable):  # the table protocol: get, set, delete
        return table
    rows = table.token_table
    if rows is None:
        raise FrameworkNotSupportedError(
            f"EncryptedTokenStore keeps its rows in the session store's token table, and this "
            f"store ({type(table).__name__}) has no token table (Store.token_table is None). "
            "Pass a "
            "store that keeps one (MemoryStore, SQLiteStore, PostgresStore, or a wrapper that "
            "delegates token_table), or a KeyValueStore of your own."
        )
    return rows


class EncryptedTokenStore:
    """A token store that keeps each token encrypted in a :class:`KeyValueStore`.

    Example::

        sessions = hs.SQLiteStore("helix.db")
        tokens = hs.EncryptedTokenStore(sessions, key=os.environ["HELIX_TOKEN_KEY"])
        executor = hs.Executor(sessions, token_store=tokens,
                               auth_secret=os.environ["HELIX_AUTH_SECRET"])

    Args:
        table: Where the ciphertext rows go: a :class:`KeyValueStore`, or a session store,
            whose ``token_table`` then holds them (``auth_tokens`` in a ``SQLiteStore`` or a
            ``PostgresStore``).
        key: A Fernet key (:meth:`generate_key`), or a list of them to rotate: the first
            encrypts, every one decrypts.

    Raises:
        InvalidRequestError: a key is not a Fernet key.
        FrameworkNotSupportedError: ``cryptography`` is not installed (the ``crypto`` extra),
            or ``table`` is a session store that keeps no token rows.
    """

    def __init__(
        self, table: KeyValueStore | Store, *, key: str | bytes | Sequence[str | bytes]
    ) -> None:
        self._fernet = _fernet(key)
        self._table: KeyValueStore = _rows_of(table)

    @staticmethod
    def generate_key() -> str:
        """A new random Fernet key (keep it with the app's other secrets)."""
        from cryptography.fernet import Fernet

        return Fernet.generate_key().decode("ascii")

    async def get(self, strategy: str, owner: str) -> Token | None:
        key = token_key(strategy, owner)
        value = await self._table.get(key)
        if value is None:
            return None
        from cryptography.fernet import InvalidToken

        try:
            data = json.loads(self._fernet.decrypt(value))
        except (InvalidToken, ValueError):
            data = None
        if not isinstance(data, dict) or data.get("key") != key:
            logger.warning(
                "core.auth.token_unreadable: the token row of strategy %r cannot be decrypted "
                "with the configured keys (or belongs to another row); treated as no token",
                strategy,
                extra={"event": "core.auth.token_unreadable"},
            )
            return None
        return Token.from_dict(data["token"])

    async def put(self, strategy: str, owner: str, token: Token) -> None:
        key = token_key(strategy, owner)
        plain = json.dumps({"key": key, "token": token.to_dict()}, separators=(",", ":"))
        await self._table.set(key, self._fernet.encrypt(plain.encode("utf-8")))

    async def delete(self, strategy: str, owner: str) -> None:
        await self._table.delete(token_key(strategy, owner))
