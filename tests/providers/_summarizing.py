"""Loopback provider servers that answer a compaction's summarizer call by themselves.

A session with ``hs.Compaction`` sends a summarizer call when a request would pass its
trigger; when that happens depends on token counts. These servers tell that call by its
summarizing row and answer it with :attr:`Summarizing.summary` (``Say(text="")``: an answer
with no text, which fails the compaction); every other request gets the next reply of
:attr:`Summarizing.turns`.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from helix_stream.context._summary import DEFAULT_SUMMARY_INSTRUCTIONS
from tests.providers._wire import Recorded, Say
from tests.providers.anthropic_server import AnthropicServer
from tests.providers.openai_server import OpenAIFormatServer

MARK = DEFAULT_SUMMARY_INSTRUCTIONS.split(".")[0]  # "The conversation so far is about to be..."


def is_summarizer(body: dict[str, Any]) -> bool:
    """Whether a recorded body is a summarizer call (its last message holds the row)."""
    last = body["messages"][-1]
    return MARK in str(last.get("content"))


class Summarizing:
    """The mixin: put it before a provider's server class."""

    summary: Say
    turns: deque[Say]
    summarizer_calls: list[int]  # indexes of the summarizer calls among the requests

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.summary = Say(text="SUMMARY: the user asked about orders; tools found o-1.")
        self.turns = deque()
        self.summarizer_calls = []

    def render(self, request: Recorded, reply: Say, number: int) -> bytes:
        if is_summarizer(request.json()):
            self.summarizer_calls.append(number - 1)
            reply = self.summary
        else:
            reply = self.turns.popleft() if self.turns else Say(text="ok")
        rendered: bytes = super().render(request, reply, number)  # type: ignore[misc]
        return rendered


class SummarizingAnthropic(Summarizing, AnthropicServer):
    """Anthropic's Messages format, with the simulated prompt cache."""


class SummarizingOpenAI(Summarizing, OpenAIFormatServer):
    """OpenAI's chat completions format."""
