"""What a step's result and the chunk stream share: the finish reason, the usage, a cited
source and an app's data part. They are chunks' vocabulary (re-exported by
:mod:`helix_stream.chunks`), kept here so that :mod:`helix_stream.steps` builds on them and
``chunks`` can name a step's result (``FinishStep.step``) without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

__all__ = ["DataChunk", "FinishReason", "SourceUrl", "Usage"]

# The AI SDK's finish reasons (never "unknown": AI SDK v6+ clients reject it).
FinishReason = Literal["stop", "length", "content-filter", "tool-calls", "error", "other"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts as the provider reported them (litellm's estimate for a stream that reported
    none; README, "Your litellm setup as it is: Router, retries, usage, structured output").

    Attributes:
        input_tokens: Prompt tokens, cached ones included (as litellm reports them: for
            Anthropic, litellm adds the cache reads and writes into the prompt count).
        output_tokens: Completion tokens, reasoning tokens included.
        total_tokens: ``input_tokens + output_tokens``, as litellm computes it, not a total
            the provider sent (README, "Your litellm setup as it is: Router, retries, usage,
            structured output").
        cached_input_tokens: Input tokens read from the provider's prompt cache (OpenAI's
            ``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens``).
        cache_creation_input_tokens: Input tokens written to the prompt cache (Anthropic's
            ``cache_creation_input_tokens``; 0 for providers that cache implicitly).
        reasoning_tokens: Output tokens spent on reasoning
            (``completion_tokens_details.reasoning_tokens``).

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        print(await result.text())
        usage = result.usage                      # an hs.Usage, summed over the run's model calls
        print(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens + other.cache_creation_input_tokens
            ),
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceUrl:
    """A source the model cited (a URL annotation, or a provider's ``citations``).

    Example::

        from helix_stream.chunks import SourceUrl

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, SourceUrl):
                print(chunk.title, chunk.url)            # a citation
    """

    type: ClassVar[Literal["source-url"]] = "source-url"
    source_id: str
    url: str
    title: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DataChunk:
    """An app-defined ``data-<name>`` part.

    Example::

        from helix_stream.chunks import DataChunk

        @hs.tool
        async def report(topic: str, ctx: hs.ToolContext) -> str:
            ctx.write_data("progress", {"percent": 50})   # a data-progress part in the UI stream
            return f"report on {topic}"

        result = hs.stream_text(model="helix/demo", prompt="Report on tea", tools=[report])
        async for chunk in result:
            if isinstance(chunk, DataChunk):
                print(chunk.type, chunk.data)             # data-progress {'percent': 50}
    """

    name: str
    data: Any
    id: str | None = None
    transient: bool = False

    @property
    def type(self) -> str:
        return f"data-{self.name}"
