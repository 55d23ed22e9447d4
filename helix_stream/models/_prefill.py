"""Where a broken-off answer can be continued: the assistant-prefill table, one owner.

When a model call fails after text has streamed (``stream_retries``), the retry either
**continues** the answer, sending the text already shown as a final assistant message that
the model goes on from (a prefill), or **redoes** the step. A prefill works only where the
provider continues a final assistant message instead of answering it; per family
(:mod:`helix_stream.models._family`):

=========== ================================================================================
family      continue by prefill
=========== ================================================================================
anthropic   yes (the Messages API continues a final assistant turn); trailing whitespace is
            cut from the prefill (Anthropic refuses it), not with extended thinking on
bedrock     yes (Converse continues a final assistant turn), as Anthropic
openai      only towards an OpenAI-compatible server (an ``api_base`` that is not OpenAI's or
            Azure's): the request carries ``continue_final_message: true`` and
            ``add_generation_prompt: false`` (vLLM's and SGLang's switch; llama.cpp and Ollama
            continue by themselves). OpenAI and Azure answer a final assistant message anew.
gemini      no (redo)
mistral     no (redo)
other       no (redo)
=========== ================================================================================

Through a Router the loop never asks for a prefill (a model group's deployments and fallbacks
may speak formats that answer it anew): the step is redone.

The prefill request is the failed request's messages, byte for byte, and one assistant
message after them: the prompt prefix a provider cached stays valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ._family import Family

__all__ = ["Prefill", "prefill_request"]

# Hosts that answer a final assistant message anew instead of continuing it.
_ANSWERS_ANEW = ("api.openai.com", ".openai.azure.com", ".cognitiveservices.azure.com")
# vLLM's and SGLang's switch: continue the last assistant message, open no new turn.
CONTINUE_FLAGS: dict[str, bool] = {"continue_final_message": True, "add_generation_prompt": False}


@dataclass(frozen=True, slots=True, kw_only=True)
class Prefill:
    """A continuation request.

    Attributes:
        params: The request: the failed one's messages and an assistant message after them.
        cut: The whitespace cut from the end of the prefill (the continuation's leading
            whitespace is dropped once when it is not empty: the UI shows it already).
    """

    params: dict[str, Any]
    cut: str


def prefill_request(
    family: Family, params: Mapping[str, Any], sent: Sequence[Mapping[str, Any]], text: str
) -> Prefill | None:
    """The request that continues ``text``, or ``None`` where ``family`` cannot (redo).

    Args:
        family: The family the request goes to.
        params: The failed request's params.
        sent: The messages the failed request sent (rows of its retries included).
        text: All the text shown of the answer so far.

    Example::

        prefill_request("gemini", params, params["messages"], "Hello")   # None: redo
    """
    if not text.strip():
        return None
    if family in ("anthropic", "bedrock"):
        if params.get("thinking") or params.get("reasoning_effort"):
            return None  # a prefill is refused with extended thinking on
        kept = text.rstrip()
        return Prefill(params=_with_prefill(params, sent, kept), cut=text[len(kept) :])
    if family == "openai" and _compatible_server(params):
        request = _with_prefill(params, sent, text)
        request["extra_body"] = {**(params.get("extra_body") or {}), **CONTINUE_FLAGS}
        return Prefill(params=request, cut="")
    return None


def _with_prefill(
    params: Mapping[str, Any], sent: Sequence[Mapping[str, Any]], text: str
) -> dict[str, Any]:
    return {**params, "messages": [*sent, {"role": "assistant", "content": text}]}


def _compatible_server(params: Mapping[str, Any]) -> bool:
    base = params.get("api_base") or params.get("base_url")
    if not isinstance(base, str) or not base:
        return False
    host = (urlparse(base).hostname or "").lower()
    return bool(host) and not any(host == h or host.endswith(h) for h in _ANSWERS_ANEW)
