"""Errors about a session and its store: not found, busy, in the wrong state, a lost lease, a
key used twice, a hook that raised, a session API outside a run, a store that cannot be reached."""

from __future__ import annotations

from ._base import HelixError

__all__ = [
    "ContextKeyConflictError",
    "HookError",
    "NoActiveContextError",
    "SessionBusyError",
    "SessionLeaseLostError",
    "SessionNotFoundError",
    "StateError",
    "StoreCommitUnknownError",
    "StoreUnavailableError",
]


class SessionNotFoundError(HelixError):
    """No session has this id.

    Example::

        from helix_stream.errors import SessionNotFoundError

        try:
            await executor.add_context("no-such-session", [hs.instruction("Be brief.")])
        except SessionNotFoundError as exc:
            print(exc.code, exc.http_status)       # state_session_not_found 404
    """

    code = "state_session_not_found"
    http_status = 404


class ContextKeyConflictError(HelixError):
    """The same ``key`` was used before with other items; nothing was written.

    Example::

        from helix_stream.errors import ContextKeyConflictError

        await executor.add_context("session-1", [hs.instruction("Be brief.")], key="req-1")
        try:
            await executor.add_context("session-1", [hs.instruction("Be long.")], key="req-1")
        except ContextKeyConflictError:            # same key, other items: nothing written
            ...
    """

    code = "state_context_key_conflict"
    http_status = 409


class SessionBusyError(HelixError):
    """The session is already being run by someone else.

    Example::

        from helix_stream.errors import SessionBusyError

        try:
            await executor.run(agent, "session-1", "Hello").text()
        except SessionBusyError as exc:            # another turn runs the session now
            assert exc.retryable                   # try again when it ends (or steer it)
    """

    code = "state_session_busy"
    http_status = 409
    retryable = True


class StateError(HelixError):
    """The session is not in a state that allows this operation (e.g. nothing to resume).

    Example::

        from helix_stream.errors import StateError

        try:
            await executor.resume("session-1")
        except StateError as exc:                  # nothing to resume: the session is idle
            print(exc.code)                        # state_invalid
    """

    code = "state_invalid"
    http_status = 409


class SessionLeaseLostError(StateError):
    """A turn's write was refused: its session's lease was taken over by another turn (the
    lease had expired: README, "Reliability notes"). Nothing was written.

    Example::

        from helix_stream.errors import SessionLeaseLostError, StateError

        assert issubclass(SessionLeaseLostError, StateError)   # an except StateError catches it
        assert SessionLeaseLostError.code == "state_lease_lost"
    """

    code = "state_lease_lost"


class NoActiveContextError(HelixError):
    """A session-scoped API (``define_state``, ``current_session``) was used outside a run.

    Example::

        from helix_stream.errors import NoActiveContextError

        try:
            hs.current_session()                   # outside a run
        except NoActiveContextError as exc:
            print(exc.code)                        # no_active_context
    """

    code = "no_active_context"
    http_status = 500


class HookError(HelixError):
    """A ``define_hook`` handler raised; ``error`` is what it raised, ``event`` what it handled.

    Example::

        from helix_stream.errors import HookError

        try:
            await executor.run(agent, "session-1", "Hi").text()
        except HookError as exc:                   # a define_hook handler raised
            print(exc.event, repr(exc.error))
    """

    code = "hook_failed"
    http_status = 500

    def __init__(self, event: str, error: BaseException) -> None:
        super().__init__(f"a {event} hook raised {type(error).__name__}: {error}")
        self.event = event
        self.error = error


class StoreUnavailableError(HelixError):
    """The session store could not be reached, even on a fresh connection; nothing was written.

    A store call that loses its connection is tried once more on a fresh one (README,
    "Reliability notes"); this is what a call raises when that failed too, or when no pooled
    connection came free in time. Trying again later may succeed.

    Example::

        from helix_stream.errors import StoreUnavailableError

        try:
            await executor.add_context("session-1", [hs.instruction("Be brief.")])
        except StoreUnavailableError as exc:       # the database is unreachable; nothing written
            assert exc.retryable
    """

    code = "store_unavailable"
    http_status = 503
    retryable = True


class StoreCommitUnknownError(StoreUnavailableError):
    """The connection was lost while a write's COMMIT was in flight, and its outcome could not
    be found out: the write may or may not have been applied. Read before writing again.

    Example::

        from helix_stream.errors import StoreCommitUnknownError

        try:
            await executor.add_context("session-1", [hs.instruction("Be brief.")], key="req-7")
        except StoreCommitUnknownError:
            # It may have been written: sent again with the same key, it is recorded once.
            await executor.add_context("session-1", [hs.instruction("Be brief.")], key="req-7")
    """

    code = "store_commit_unknown"
    retryable = False
