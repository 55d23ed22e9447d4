"""Reading OpenAI-format messages (the log's and the model's format)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["message_text"]


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text: its string content, or its text parts joined (other parts skipped)."""
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)
