"""Parses one litellm stream (one model call) into chunks and an assembled step.

The one place that reads litellm's streaming chunks (``ModelResponseStream``), by attribute
only — litellm is not imported here. The loop and the UI transformer's raw-litellm input both
use it, so both read a stream the same way.

Streamed tool calls arrive as fragments keyed by ``index``: the id and the name come only on
a call's first fragment, the arguments in pieces (sometimes before the name). Several calls
may interleave (parallel tool calls). This is the hot path: plain attribute access, no
validation per chunk.

What a step's stream says about its response — the id, the model and deployment that
answered (a ``litellm.Router`` picks one per call, and a fallback may answer instead), the
server — is read once, from the first chunk, into :class:`ResponseInfo`. Token usage, cache
and reasoning counts included, comes on one chunk near the end and is read only there.

Providers' own shapes, read here so that every path reads them alike: a ``refusal`` delta is
text (the UI shows why no answer came); Mistral's content **list** of typed blocks gives its
``text`` blocks as text and its ``thinking`` blocks as reasoning, and skips (and logs, once per
stream) a block type it does not know; tool-call arguments sent as a JSON object are its JSON
text; Anthropic citations (litellm's ``provider_specific_fields["citation"]``) are sources.
Any other shape where text belongs is a :class:`~helix_stream.errors.ModelError`, never a
bare exception and never a delta that is not a string.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..chunks import (
    Chunk,
    FinishReason,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    SourceUrl,
    TextDelta,
    TextEnd,
    TextStart,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    Usage,
)
from ..steps import ToolCall

__all__ = [
    "ResponseInfo",
    "StepParser",
    "has_content",
    "map_finish_reason",
    "parse_arguments",
    "read_usage",
]

logger = logging.getLogger("helix_stream.models")

# litellm's (OpenAI's) finish reasons, and a few providers' own, as the AI SDK names them
# (docs/ui-message-stream.md, "Chunk types"). Anything else, a missing reason included, is
# "other"; never "unknown".
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}


def map_finish_reason(reason: str | None) -> FinishReason:
    """litellm's finish reason as the AI SDK names it (never ``unknown``)."""
    return _FINISH.get(reason or "", "other")


@dataclass(slots=True)
class _PartialCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)
    announced: bool = False


_MISSING = object()


_CONTENT_FIELDS = ("content", "reasoning_content", "refusal", "tool_calls")


def has_content(raw: Any) -> bool:
    """A streamed chunk carries content (text, reasoning, a refusal, tool calls): what the
    ``first_chunk`` limit waits for. A role-only or empty delta, a finish reason or usage
    alone do not count."""
    choices = read_field(raw, "choices")
    if not choices:
        return False
    delta = read_field(choices[0], "delta")
    return delta is not None and any(read_field(delta, name) for name in _CONTENT_FIELDS)


def read_field(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, fast for litellm's pydantic objects.

    litellm keeps most streamed fields in ``__pydantic_extra__`` and *deletes* unset ones, so a
    plain ``getattr`` of a missing field goes through pydantic's ``__getattr__`` and an
    exception — microseconds per chunk, on the hot path. Dict lookups first; the ordinary
    lookup only for what the class itself declares, or for objects without a ``__dict__``.
    """
    values = getattr(obj, "__dict__", None)
    if values is None:
        return getattr(obj, name, None)
    value = values.get(name, _MISSING)
    if value is not _MISSING:
        return value
    cls = type(obj)
    extra = obj.__pydantic_extra__ if _declares(cls, "__pydantic_extra__") else None
    if extra:
        value = extra.get(name, _MISSING)
        if value is not _MISSING:
            return value
    return getattr(obj, name, None) if _declares(cls, name) else None


_DECLARED: dict[type, dict[str, bool]] = {}


def _declares(cls: type, name: str) -> bool:
    """Whether ``cls`` itself has ``name`` (cached per class: a class does not change; keyed
    by class, then name, so that a lookup on the hot path allocates nothing)."""
    known = _DECLARED.get(cls)
    if known is None:
        known = _DECLARED[cls] = {}
    found = known.get(name)
    if found is None:
        found = known[name] = hasattr(cls, name)
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseInfo:
    """Who answered a model call, as litellm reports it on the stream's first chunk.

    Attributes:
        id: The provider's response id (``gen_ai.response.id``).
        model: The model that answered, as litellm names it (for a Router, the deployment's
            model: a fallback's model when a fallback answered).
        provider: litellm's provider name for it (``openai``, ``anthropic``, ...).
        deployment_id: The Router deployment that answered (its ``model_info.id``, or the
            id litellm derived for it); ``None`` without a Router.
        api_base: The URL the request went to, when litellm reports it.
    """

    id: str | None = None
    model: str | None = None
    provider: str | None = None
    deployment_id: str | None = None
    api_base: str | None = None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def read_usage(usage: Any) -> Usage:
    """litellm's usage object (or dict) as a :class:`~helix_stream.chunks.Usage`.

    Cached input tokens come from ``prompt_tokens_details.cached_tokens`` (OpenAI, and where
    litellm maps Anthropic's and DeepSeek's counters), else Anthropic's
    ``cache_read_input_tokens``; cache writes from Anthropic's ``cache_creation_input_tokens``
    (litellm also copies them to ``prompt_tokens_details.cache_write_tokens``); reasoning
    tokens from ``completion_tokens_details.reasoning_tokens``. Absent counters are 0.

    ``total_tokens`` is ``input_tokens + output_tokens``, as litellm's stream wrapper computes
    it, whatever total the provider sent (xAI's counts reasoning tokens that are not in its
    ``completion_tokens``): the same figure on every path.
    """
    get = usage.get if isinstance(usage, dict) else (lambda name: read_field(usage, name))
    prompt = get("prompt_tokens_details")
    completion = get("completion_tokens_details")
    pget = _getter(prompt)
    cached = _int(pget("cached_tokens")) or _int(get("cache_read_input_tokens"))
    created = _int(get("cache_creation_input_tokens")) or _int(pget("cache_write_tokens"))
    prompt_tokens, completion_tokens = _int(get("prompt_tokens")), _int(get("completion_tokens"))
    return Usage(
        input_tokens=prompt_tokens,
        output_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        cached_input_tokens=cached,
        cache_creation_input_tokens=created,
        reasoning_tokens=_int(_getter(completion)("reasoning_tokens")),
    )


def _getter(obj: Any) -> Any:
    if obj is None:
        return lambda name: None
    if isinstance(obj, dict):
        return obj.get
    return lambda name: read_field(obj, name)


def _hidden_params(raw: Any) -> dict[str, Any]:
    """litellm's ``_hidden_params`` of a chunk (a pydantic private attribute: read from the
    private dict, which skips pydantic's slow attribute path)."""
    private = getattr(raw, "__pydantic_private__", None)
    hidden = private.get("_hidden_params") if isinstance(private, dict) else None
    if hidden is None:
        hidden = getattr(raw, "_hidden_params", None)
    return hidden if isinstance(hidden, dict) else {}


def _response_info(raw: Any) -> ResponseInfo:
    hidden = _hidden_params(raw)
    model = read_field(raw, "model")
    response_id = read_field(raw, "id")
    deployment = hidden.get("model_id")
    api_base = hidden.get("api_base")
    provider = hidden.get("custom_llm_provider")
    return ResponseInfo(
        id=response_id if isinstance(response_id, str) and response_id else None,
        model=model if isinstance(model, str) and model else None,
        provider=provider if isinstance(provider, str) and provider else None,
        deployment_id=deployment if isinstance(deployment, str) and deployment else None,
        api_base=api_base if isinstance(api_base, str) and api_base else None,
    )


def parse_arguments(text: str) -> Any:
    """A tool call's arguments: the parsed JSON, ``{}`` for none, the raw text if invalid."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _unexpected(what: str, value: Any) -> errors.ModelError:
    return errors.ModelError(
        f"The model stream sent a {what} of type {type(value).__name__} where text was "
        "expected; helix cannot read it."
    )


def _string(value: Any, what: str) -> Any:
    """``value`` if it is text or nothing; a typed error otherwise."""
    if value is None or isinstance(value, str):
        return value
    raise _unexpected(what, value)


def _arguments(value: Any) -> Any:
    """A tool call's arguments fragment as text (a JSON object sent as one is its JSON)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    raise _unexpected("tool call arguments", value)


def _thinking_texts(value: Any, what: str) -> list[str]:
    """The texts of a thinking block's ``thinking``: a string, or a list of text blocks."""
    if isinstance(value, str):
        return [value] if value else []
    if not isinstance(value, list):
        if value is None:
            return []
        raise _unexpected(what, value)
    texts = []
    for part in value:
        text = part.get("text") if isinstance(part, dict) else part
        if not isinstance(text, str):
            raise _unexpected(what, part)
        if text:
            texts.append(text)
    return texts


class StepParser:
    """Feed it the litellm chunks of one model call; it returns the chunks to emit."""

    __slots__ = (
        "_calls",
        "_reasoning_id",
        "_reasoning_parts",
        "_skipped",
        "_sources",
        "_text_id",
        "finish_reason",
        "reasoning",
        "response",
        "sources",
        "step_number",
        "text",
        "usage",
    )

    def __init__(self, step_number: int) -> None:
        self.step_number = step_number
        self._text_id: str | None = None
        self._reasoning_id: str | None = None
        self._reasoning_parts = 0
        self._calls: dict[int, _PartialCall] = {}
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.response: ResponseInfo | None = None
        self._sources: set[str] = set()
        self.sources: list[SourceUrl] = []  # the step's cited sources, as emitted
        self._skipped = False  # an unknown content block was logged

    @property
    def response_model(self) -> str | None:
        """The model that answered, as litellm names it (see :class:`ResponseInfo`)."""
        return self.response.model if self.response is not None else None

    def feed(self, raw: Any) -> list[Chunk]:
        """The chunks one litellm streaming chunk makes."""
        out: list[Chunk] = []
        choices = read_field(raw, "choices")
        if choices:
            choice = choices[0]
            delta = read_field(choice, "delta")
            if delta is not None:
                self._feed_delta(delta, out)
            finish_reason = read_field(choice, "finish_reason")
            if finish_reason:
                self.finish_reason = finish_reason
        citations = read_field(raw, "citations")
        if citations:
            self._feed_citations(citations, out)
        usage = read_field(raw, "usage")
        if usage is not None:  # one chunk near the end: the details are read only here
            self.usage = read_usage(usage)
        if self.response is None:
            self.response = _response_info(raw)
        return out

    def _feed_delta(self, delta: Any, out: list[Chunk]) -> None:
        reasoning = read_field(delta, "reasoning_content")
        if reasoning:
            if reasoning.__class__ is str:
                self._feed_reasoning(reasoning, out)
            else:
                for piece in _thinking_texts(reasoning, "reasoning"):
                    self._feed_reasoning(piece, out)
        content = read_field(delta, "content")
        if content:
            if content.__class__ is str:
                self._feed_text(content, out)
            else:
                self._feed_blocks(content, out)
        refusal = read_field(delta, "refusal")
        if refusal:
            self._feed_text(_string(refusal, "refusal"), out)
        tool_calls = read_field(delta, "tool_calls")
        if tool_calls:
            self._feed_tool_calls(tool_calls, out)
        annotations = read_field(delta, "annotations")
        if annotations:
            self._feed_annotations(annotations, out)
        fields = read_field(delta, "provider_specific_fields")
        if fields and isinstance(fields, dict):
            cited = fields.get("citation")
            if isinstance(cited, dict):  # Anthropic's citations, as litellm passes them on
                self._source(cited.get("url"), cited.get("title"), out)

    def _feed_text(self, content: str, out: list[Chunk]) -> None:
        if self._reasoning_id is not None:
            # Reasoning comes before the answer; a later burst is a new part.
            out.append(ReasoningEnd(id=self._reasoning_id))
            self._reasoning_id = None
        if self._text_id is None:
            self._text_id = f"text-{self.step_number}"
            out.append(TextStart(id=self._text_id))
        self.text.append(content)
        out.append(TextDelta(id=self._text_id, delta=content))

    def _feed_blocks(self, content: Any, out: list[Chunk]) -> None:
        """A content list of typed blocks (Mistral's reasoning models): text and thinking."""
        if not isinstance(content, list):
            raise _unexpected("content", content)
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                text = _string(block.get("text"), "text block")
                if text:
                    self._feed_text(text, out)
            elif kind == "thinking":
                for piece in _thinking_texts(block.get("thinking"), "thinking block"):
                    self._feed_reasoning(piece, out)
            elif not self._skipped:
                self._skipped = True
                logger.warning(
                    "Skipped a content block of type %r in a model stream (step %d); "
                    "only text and thinking blocks are read. Later unknown blocks of this "
                    "stream are skipped silently.",
                    kind,
                    self.step_number,
                )

    def _source(self, url: Any, title: Any, out: list[Chunk]) -> None:
        # Once per URL and step: providers repeat a citation for every passage that uses it.
        if isinstance(url, str) and url and url not in self._sources:
            self._sources.add(url)
            source_id = f"source-{self.step_number}-{len(self._sources)}"
            title = title if isinstance(title, str) and title else None
            source = SourceUrl(source_id=source_id, url=url, title=title)
            self.sources.append(source)
            out.append(source)

    def _feed_annotations(self, annotations: Any, out: list[Chunk]) -> None:
        """OpenAI-style ``url_citation`` annotations on the message delta."""
        for annotation in annotations:
            if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
                continue
            cited = annotation.get("url_citation") or {}
            self._source(cited.get("url"), cited.get("title"), out)

    def _feed_citations(self, citations: Any, out: list[Chunk]) -> None:
        """A provider's list of cited URLs (Perplexity's ``citations``, passed on by litellm)."""
        for citation in citations:
            if isinstance(citation, str):
                self._source(citation, None, out)
            elif isinstance(citation, dict):
                self._source(citation.get("url"), citation.get("title"), out)

    def _feed_reasoning(self, reasoning: str, out: list[Chunk]) -> None:
        if self._reasoning_id is None:
            self._reasoning_parts += 1
            n = self._reasoning_parts
            self._reasoning_id = f"reasoning-{self.step_number}" + (f"-{n}" if n > 1 else "")
            out.append(ReasoningStart(id=self._reasoning_id))
        self.reasoning.append(reasoning)
        out.append(ReasoningDelta(id=self._reasoning_id, delta=reasoning))

    def _feed_tool_calls(self, fragments: Any, out: list[Chunk]) -> None:
        for position, fragment in enumerate(fragments):
            index = getattr(fragment, "index", None)
            if not isinstance(index, int):
                index = position
            fn = getattr(fragment, "function", None)
            if fn is not None:
                name, arguments = getattr(fn, "name", None), getattr(fn, "arguments", None)
            else:  # a "custom" tool call: name and input instead of a function
                custom = getattr(fragment, "custom", None)
                name, arguments = getattr(custom, "name", None), getattr(custom, "input", None)
            name, arguments = _string(name, "tool name"), _arguments(arguments)
            call = self._calls.get(index)
            if call is None:
                # Providers that send no id still need a unique one: ids key call sites,
                # rewinds and sub-agent sessions.
                call_id = getattr(fragment, "id", None) or f"call_{uuid.uuid4().hex[:24]}"
                call = self._calls[index] = _PartialCall(id=call_id, name="")
            if name and not call.name:
                call.name = name
            if arguments:
                call.arguments.append(arguments)
            if call.name and not call.announced:
                call.announced = True
                out.append(ToolInputStart(tool_call_id=call.id, tool_name=call.name))
                if call.arguments:  # including fragments that came before the name
                    out.append(ToolInputDelta(tool_call_id=call.id, delta="".join(call.arguments)))
            elif arguments and call.announced:
                out.append(ToolInputDelta(tool_call_id=call.id, delta=arguments))

    def finish(self) -> tuple[list[Chunk], list[ToolCall]]:
        """Close open parts; return the closing chunks and the complete tool calls."""
        out: list[Chunk] = []
        if self._reasoning_id is not None:
            out.append(ReasoningEnd(id=self._reasoning_id))
        if self._text_id is not None:
            out.append(TextEnd(id=self._text_id))
        calls: list[ToolCall] = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            if not partial.name:
                continue  # a call without a name can be neither shown nor run
            arguments = "".join(partial.arguments)
            parsed = parse_arguments(arguments)
            if not partial.announced:
                out.append(ToolInputStart(tool_call_id=partial.id, tool_name=partial.name))
            out.append(
                ToolInputAvailable(tool_call_id=partial.id, tool_name=partial.name, input=parsed)
            )
            calls.append(
                ToolCall(id=partial.id, name=partial.name, input=parsed, arguments=arguments)
            )
        return out, calls

    def assistant_message(self, calls: list[ToolCall]) -> dict[str, Any]:
        """The assistant message in the OpenAI format litellm expects next time."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments or "{}"},
                }
                for call in calls
            ]
        return message
