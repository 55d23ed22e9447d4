"""``Compaction``: when an agent's sessions are compacted, and how (the settings).

What a compaction appends and how a request shows it is :mod:`._summary`'s; when it runs and
the summarizer call are the loop's (``loop/_compaction.py``); writing the row is the session's
(``session/_compaction.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidRequestError

__all__ = ["Compaction"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """Compact an agent's long sessions by appending a summary, never by rewriting the log.

    When the next request of a session would exceed ``trigger_tokens`` (counted with
    litellm's token counter on the request as it would be sent), the session is compacted
    before that model call: the model is asked for a summary of everything before the kept
    tail — with the session's own next request plus one summarizing row, so that its input is
    read from the provider's prompt cache — and the summary is appended to the log as a
    context row of kind ``summary``. From then on a request is: system + tools + the rows still
    in force (instructions, tool switches, memories) + the summary + the kept tail + what
    follows, each a byte prefix of the next. A rewind or a branch to a point before the
    summary shows the whole history again. A summarizer that fails (an error, a timeout, no
    text) leaves the session as it was: the turn goes on uncompacted, with a
    ``context_skipped`` chunk (reason ``compaction_failed``) and a log record.

    Example::

        agent = hs.Agent(
            name="support",
            model="helix/demo",
            compaction=hs.Compaction(trigger_tokens=60_000, keep_last_turns=2),
        )

    Args:
        trigger_tokens: Compact when the next request would have more input tokens than
            this; keep it well below the model's context window (the summarizer's request is
            a little larger than the request that triggered it).
        keep_last_turns: Whole turns kept verbatim after the summary, besides the turn in
            progress (always kept).
        model: The summarizer's model (a litellm model string); ``None``: the agent's own,
            which is the one whose cache holds the session's prefix.
        instructions: The summarizing instruction (``None``: a default that asks for goals,
            decisions, facts and open questions). ``{kept}`` in it is replaced by how many
            turns stay verbatim.
    """

    trigger_tokens: int
    keep_last_turns: int = 2
    model: str | None = None
    instructions: str | None = None

    def __post_init__(self) -> None:
        for name in ("trigger_tokens", "keep_last_turns"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidRequestError(f"Compaction({name}=...) must be an int, not {value!r}")
        if self.trigger_tokens < 1:
            raise InvalidRequestError(
                f"Compaction(trigger_tokens=...) must be at least 1, not {self.trigger_tokens}"
            )
        if self.keep_last_turns < 0:
            raise InvalidRequestError(
                f"Compaction(keep_last_turns=...) must be 0 or more, not {self.keep_last_turns}"
            )
        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise InvalidRequestError("Compaction(model=...) must be a litellm model string")
        if self.instructions is not None and not isinstance(self.instructions, str):
            raise InvalidRequestError("Compaction(instructions=...) must be a string")
