"""``Executor.run_sync``: a turn run to its end from code without an event loop.

The turn is :meth:`Executor.run`'s; it runs on the sync bridge (:mod:`helix_stream._sync`)
and its result is what ``generate_text`` returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from .._sync import check_no_running_loop, run_sync
from ..loop import GenerateTextResult, StreamTextResult
from ..loop._api import finished
from ..loop._options import RunKeywords
from ._answers import ApprovalAnswer, ToolAnswer

if TYPE_CHECKING:
    from ..agent import Agent, OutputT

__all__ = ["SyncTurns"]

_FORM = "executor.run(...)"


class SyncTurns:
    """The executor's sync form of ``run``."""

    if TYPE_CHECKING:

        def run(
            self,
            agent: Agent[OutputT],
            session_id: str,
            input: str | Mapping[str, Any] | None = None,
            *,
            answers: Sequence[ApprovalAnswer | ToolAnswer] = (),
            auth: Any = None,
            **options: Unpack[RunKeywords],
        ) -> StreamTextResult[OutputT]: ...

    def run_sync(
        self,
        agent: Agent[OutputT],
        session_id: str,
        input: str | Mapping[str, Any] | None = None,
        *,
        answers: Sequence[ApprovalAnswer | ToolAnswer] = (),
        auth: Any = None,
        **options: Unpack[RunKeywords],
    ) -> GenerateTextResult[OutputT]:
        """:meth:`run` for code without an event loop (a script, a sync view, a task): the
        turn runs to its end, and its result is returned.

        Example::

            out = executor.run_sync(agent, "session-1", "What is the weather in Paris?")
            print(out.text)

        Takes the arguments of :meth:`run` (``answers``, ``auth``, the run options and the
        litellm parameters); returns what ``generate_text`` returns, for the finished turn.

        Raises:
            RuntimeError: called where an event loop is running: iterate
                ``executor.run(...)`` there.
            HelixError: the turn's error (a refusal, a failed model call, ...).
        """
        check_no_running_loop("Executor.run_sync", _FORM)
        result = self.run(agent, session_id, input, answers=answers, auth=auth, **options)
        return run_sync("Executor.run_sync", _FORM, finished(result))
