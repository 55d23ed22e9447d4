"""How many input tokens a request is, before it is sent: litellm's token counter on the
rendered request (its messages and its tools).

The count is litellm's estimate (the model's own tokenizer where litellm has it, else
``cl100k_base``), not the provider's: the figure a budget projects the next call with
(:mod:`helix_stream.loop._budget`). A request litellm cannot count as messages (a part it does
not know) is counted as the text of its JSON, so that a count is always made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["request_tokens"]


def request_tokens(params: Mapping[str, Any]) -> int:
    """The input tokens of the request ``params`` (``model``, ``messages``, ``tools``)."""
    from ._litellm import litellm_module

    litellm = litellm_module()
    model, messages, tools = (
        params.get("model") or "",
        params.get("messages") or [],
        params.get("tools"),
    )
    try:
        return int(litellm.token_counter(model=model, messages=list(messages), tools=tools))
    except Exception:  # litellm's counter refuses parts it does not know: count the JSON text
        text = json.dumps({"messages": list(messages), "tools": tools}, default=str)
        return int(litellm.token_counter(model=model, text=text))
