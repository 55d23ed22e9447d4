"""The session engine: :class:`Executor` runs agents in durable sessions.

A turn reads its session once (a snapshot), refuses what cannot run before writing anything,
and writes at its boundaries only: the first commit (claim, the user's message, the context
queue as rows), each step (messages and a checkpoint, the final status with the last), and a
failed or cut-short end. Modules: ``_executor`` (the facade), ``_turn`` (one turn, start to
end), ``_open`` (opening it: read, refuse, claim), ``_turn_env`` (the turn environment it
hands the loop) and ``_turn_log`` (what it persists of the run: commit, persist, end),
``_commits`` (each model call's context commit), ``_finish`` (how a failed or cut-short turn
ends), ``_records`` (the stored messages, typed), ``_view`` (what the snapshot says),
``_meta`` (the engine's typed bookkeeping), ``_pending`` and ``_answers`` (paused calls),
``_events`` (lifecycle hooks), ``_ui`` (stored UI messages), ``_steering`` and ``_queued``
(messages sent while a turn runs; ``_turn_policies``: their executor methods).
``docs/architecture.md`` draws a turn's flow through them.
"""

from __future__ import annotations

from ._answers import ApprovalAnswer, ToolAnswer
from ._executor import Executor, default_identity
from ._steering import Steered

__all__ = ["ApprovalAnswer", "Executor", "Steered", "ToolAnswer", "default_identity"]
