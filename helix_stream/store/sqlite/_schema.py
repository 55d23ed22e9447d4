"""SQLiteStore's schema: the tables and indexes of one file, and the version check.

One ``schema_version`` row says which layout the file has; a file of another version is
refused whole (nothing is changed). Adding an index is compatible both ways, so a new index
does not need a new version: an older file gets it when it is opened. So is a new nullable
column: the sessions' lease (``lease_token``, ``lease_expires``) is added to an older file when
it is opened, and a session such a file left ``running`` gets an expired lease, so the next
turn takes it over (README, "Reliability notes").
"""

from __future__ import annotations

import sqlite3

from helix_stream.errors import FrameworkNotSupportedError

__all__ = ["SCHEMA_VERSION", "create_schema"]

SCHEMA_VERSION = 1

# Payloads are JSON text. Every per-session lookup is served by an index: the log's primary
# key (session_id, seq) answers read_log(after_seq), MAX(seq) and a rewind's or branch's range;
# the partial index answers the pending queue without touching delivered entries, however long
# the history; context_queue_by_session serves a rewind's queue scan.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY, agent_name TEXT NOT NULL, status TEXT NOT NULL, parent_id TEXT,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, meta TEXT NOT NULL,
        lease_token TEXT, lease_expires REAL)""",
    """CREATE TABLE IF NOT EXISTS log (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
        payload TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (session_id, seq))""",
    """CREATE TABLE IF NOT EXISTS context_queue (
        id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, items TEXT NOT NULL,
        source TEXT NOT NULL, key TEXT, origin TEXT NOT NULL, created_at REAL NOT NULL,
        delivered_seq INTEGER)""",
    """CREATE INDEX IF NOT EXISTS context_queue_pending ON context_queue (session_id, id)
        WHERE delivered_seq IS NULL""",
    "CREATE INDEX IF NOT EXISTS context_queue_by_session ON context_queue (session_id, id)",
    """CREATE TABLE IF NOT EXISTS context_keys (
        session_id TEXT NOT NULL, key TEXT NOT NULL, items_sha256 TEXT NOT NULL,
        queue_id INTEGER NOT NULL, PRIMARY KEY (session_id, key)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS checkpoints (
        ord INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, id TEXT NOT NULL,
        step_number INTEGER NOT NULL, log_seq INTEGER NOT NULL, state TEXT NOT NULL,
        created_at REAL NOT NULL, UNIQUE (session_id, id))""",
    "CREATE INDEX IF NOT EXISTS checkpoints_by_session ON checkpoints (session_id, ord)",
    # Tool authorization (store/_auth.py): pending sign-ins, encrypted token rows. New tables
    # are compatible both ways, like an index: an older file gets them when it is opened.
    """CREATE TABLE IF NOT EXISTS auth_pending (
        nonce TEXT PRIMARY KEY, session_id TEXT NOT NULL, tool_call_id TEXT NOT NULL,
        strategy TEXT NOT NULL, owner TEXT NOT NULL, created_at REAL NOT NULL,
        expires_at REAL NOT NULL) WITHOUT ROWID""",
    "CREATE TABLE IF NOT EXISTS auth_tokens (key TEXT PRIMARY KEY, value BLOB NOT NULL)",
    # The ledger of side-effect calls (store/_ledger.py), new the same way.
    """CREATE TABLE IF NOT EXISTS tool_calls (
        session_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, tool_name TEXT NOT NULL,
        arguments TEXT NOT NULL, idempotency_key TEXT NOT NULL, state TEXT NOT NULL,
        result TEXT, runs INTEGER NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
        PRIMARY KEY (session_id, tool_call_id)) WITHOUT ROWID""",
)


def create_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create what is missing (inside the caller's transaction); refuse another version.

    Raises:
        FrameworkNotSupportedError: the file has another schema version.
    """
    for statement in _SCHEMA:
        conn.execute(statement)
    _add_lease(conn)
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    if row is None:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    elif row[0] != SCHEMA_VERSION:
        raise FrameworkNotSupportedError(
            f"{path} has store schema version {row[0]}; this helix_stream reads "
            f"version {SCHEMA_VERSION}. Use the helix_stream release that wrote it."
        )


def _add_lease(conn: sqlite3.Connection) -> None:
    """Give a file made before the lease its two columns; free what it left running."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    if "lease_token" in columns:
        return
    conn.execute("ALTER TABLE sessions ADD COLUMN lease_token TEXT")
    conn.execute("ALTER TABLE sessions ADD COLUMN lease_expires REAL")
    # Its turns ran before leases: their processes are gone or will never renew one.
    conn.execute("UPDATE sessions SET lease_expires = 0 WHERE status = 'running'")
