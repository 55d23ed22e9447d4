"""The SQL of tool authorization's tables (pending sign-ins and token rows), written once for
both databases: ``sqlite/_auth.py`` and ``postgres/_auth.py`` run it (``MemoryStore`` keeps
its tables in memory, ``_memory.py``; ``_features.py`` says what the tables keep).
"""

from __future__ import annotations

__all__ = [
    "SQL_ADD",
    "SQL_DELETE",
    "SQL_DROP_EXPIRED",
    "SQL_GET",
    "SQL_SET",
    "SQL_TAKE",
    "postgres_sql",
    "sqlite_sql",
]

_COLUMNS = "nonce, session_id, tool_call_id, strategy, owner, created_at, expires_at"

SQL_DROP_EXPIRED = "DELETE FROM {s}auth_pending WHERE expires_at <= {p}"
# A nonce still pending is never replaced: the write is refused (and rolled back).
SQL_ADD = (
    f"INSERT INTO {{s}}auth_pending ({_COLUMNS}) VALUES ({', '.join(['{p}'] * 7)}) "
    "ON CONFLICT (nonce) DO NOTHING"
)
SQL_TAKE = f"DELETE FROM {{s}}auth_pending WHERE nonce = {{p}} RETURNING {_COLUMNS}"
SQL_GET = "SELECT value FROM {s}auth_tokens WHERE key = {p}"
SQL_SET = (
    "INSERT INTO {s}auth_tokens (key, value) VALUES ({p}, {p}) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
SQL_DELETE = "DELETE FROM {s}auth_tokens WHERE key = {p}"


def sqlite_sql(sql: str) -> str:
    return sql.replace("{s}", "").replace("{p}", "?")


def postgres_sql(sql: str) -> str:
    # Tx.send splices the quoted schema in for "{s}".
    return sql.replace("{s}", "{s}.").replace("{p}", "%s")
