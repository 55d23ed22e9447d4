"""Token stores: the in-memory default, the encrypted one (rows are ciphertext), and whose
token is whose (keyed by strategy and principal, never by session)."""

from __future__ import annotations

import logging

import pytest

import helix_stream as hs
from helix_stream.auth import MemoryKeyValueStore, token_key, token_owner
from helix_stream.state import AuthInfo, SessionInfo, TurnInfo

TOKEN = hs.Token(
    token="at-ENCRYPTED-SECRET-81c3",
    refresh_token="rt-ENCRYPTED-SECRET-aa04",
    expires_at=2e9,
    scopes=["read"],
    principal_type="user",
)


def session(id: str, current: object = None) -> SessionInfo:
    return SessionInfo(id=id, turn=TurnInfo(id="t", sequence=1), auth=AuthInfo(current=current))


def test_a_tokens_repr_shows_neither_token() -> None:
    shown = repr(TOKEN)
    assert "SECRET" not in shown and "scopes=('read',)" in shown
    assert hs.Token.from_dict(TOKEN.to_dict()) == TOKEN


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(hs.InvalidRequestError):
        hs.Token(token="")


async def test_the_encrypted_store_keeps_ciphertext_only() -> None:
    table = MemoryKeyValueStore()
    store = hs.EncryptedTokenStore(table, key=hs.EncryptedTokenStore.generate_key())
    await store.put("github", 'principal:"alice"', TOKEN)
    (row,) = table.rows.values()
    assert b"SECRET" not in row and b"at-" not in row and b"read" not in row
    assert list(table.rows) == [token_key("github", 'principal:"alice"')]
    assert await store.get("github", 'principal:"alice"') == TOKEN
    assert await store.get("github", 'principal:"bob"') is None
    await store.delete("github", 'principal:"alice"')
    assert table.rows == {}


async def test_a_row_copied_to_another_owner_is_not_handed_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = MemoryKeyValueStore()
    store = hs.EncryptedTokenStore(table, key=hs.EncryptedTokenStore.generate_key())
    await store.put("github", "alice", TOKEN)
    table.rows[token_key("github", "mallory")] = table.rows[token_key("github", "alice")]
    with caplog.at_level(logging.WARNING, logger="helix_stream.auth"):
        assert await store.get("github", "mallory") is None
    assert "core.auth.token_unreadable" in caplog.text and "SECRET" not in caplog.text


async def test_keys_rotate_and_a_lost_key_reads_as_no_token() -> None:
    table = MemoryKeyValueStore()
    old, new = hs.EncryptedTokenStore.generate_key(), hs.EncryptedTokenStore.generate_key()
    await hs.EncryptedTokenStore(table, key=old).put("github", "alice", TOKEN)
    assert await hs.EncryptedTokenStore(table, key=[new, old]).get("github", "alice") == TOKEN
    assert await hs.EncryptedTokenStore(table, key=new).get("github", "alice") is None


def test_a_bad_key_is_refused_without_quoting_it() -> None:
    with pytest.raises(hs.InvalidRequestError) as caught:
        hs.EncryptedTokenStore(MemoryKeyValueStore(), key="not-a-fernet-key-SECRETISH")
    assert "SECRETISH" not in str(caught.value)


def test_tokens_are_keyed_by_principal_id_never_by_an_identified_session() -> None:
    ident = lambda auth: auth.get("user_id") if isinstance(auth, dict) else auth  # noqa: E731
    alice_1 = token_owner(session("s1", {"user_id": "alice"}), ident, interactive=True)
    alice_2 = token_owner(session("s2", {"user_id": "alice"}), ident, interactive=True)
    bob = token_owner(session("s1", {"user_id": "bob"}), ident, interactive=True)
    assert alice_1 == alice_2 == 'principal:"alice"' and bob == 'principal:"bob"'


def test_callers_without_an_id_never_share_a_token() -> None:
    # A caller identify() cannot name, and an anonymous session's sign-in: this session only.
    assert token_owner(session("s1", {"name": "?"}), lambda a: None, interactive=False) == (
        "session:s1"
    )
    assert token_owner(session("s1"), None, interactive=True) == "session:s1"
    # An app token with no caller at all, or no session: the app's.
    assert token_owner(session("s1"), None, interactive=False) == "app"
    assert token_owner(None, None, interactive=True) == "app"
