"""The litellm internals helix's stream readers rely on are there, in the shape they expect.

The direct readers (``_direct_*.py``) and the lightened wrapper (``_lean_stream.py``) take
over from litellm after it built, signed and sent the request, so they depend on how litellm
holds a stream: its wrapper's attributes, each provider's iterator or decoder, and the helpers
that keep helix's figures the same as litellm's. A litellm release that moves one of them fails
here, naming the installed version, before any reader reads a stream wrongly. (Each reader also
checks what it takes over and leaves a stream it does not recognise to litellm.)
"""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import version
from typing import Any

import pytest

from helix_stream.models._litellm import litellm_module

VERSION = version("litellm")

# module: {class (or "" for the module itself): names it must have}
NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "litellm.litellm_core_utils.streaming_handler": {
        "CustomStreamWrapper": (
            "fetch_stream", "_handle_stream_fallback_error", "_stream_eof_error",
            "_async_build_complete_streaming_response", "__anext__", "aclose",
        ),
    },
    "litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini": {
        "": ("make_call",),
        "ModelResponseIterator": (
            "chunk_parser", "_common_chunk_parsing_logic", "handle_accumulated_json_chunk",
            "accumulated_json",
        ),
        "VertexGeminiConfig": ("check_finish_reason",),
        "VertexLLM": ("async_streaming",),
    },
    "litellm.llms.bedrock.chat.invoke_handler": {
        "": ("_EventStreamTally", "get_bedrock_stream_event_statuses"),
        "AWSEventStreamDecoder": (
            "aiter_bytes", "chunk_parser", "_parse_message_from_event",
            "_initialize_converse_response_id", "_thinking_block_index_for",
        ),
        "_EventStreamTally": ("add_chunk", "add_event", "undecoded_stream_error"),
    },
    "litellm.llms.anthropic.chat.handler": {
        "ModelResponseIterator": ("chunk_parser",),
        "": ("AnthropicConfig", "AnthropicError", "map_finish_reason"),
    },
    "litellm.llms.anthropic.common_utils": {"": ("refusal_params",)},
    "litellm.llms.anthropic.chat.transformation": {"AnthropicConfig": ("calculate_usage",)},
    "litellm.exceptions": {"": ("MidStreamFallbackError",)},
    "litellm.types.utils": {"": ("CompletionTokensDetailsWrapper", "ModelResponseStream")},
    "litellm": {"": ("token_counter", "stream_chunk_builder", "acompletion")},
    "botocore.eventstream": {"": ("EventStreamBuffer",)},
}  # fmt: skip

# Functions whose parameters the readers pass by name (or read from a generator's frame).
PARAMETERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("litellm.llms.bedrock.chat.invoke_handler", "AWSEventStreamDecoder.aiter_bytes"): (
        "self", "iterator",
    ),
    ("litellm.llms.anthropic.chat.transformation", "AnthropicConfig.calculate_usage"): (
        "usage_object", "reasoning_content", "speed",
    ),
    ("litellm.litellm_core_utils.streaming_chunk_builder_utils", "ChunkProcessor.calculate_usage"): (
        "chunks", "reasoning_tokens",
    ),
    ("litellm", "token_counter"): ("text", "count_response_tokens"),
    ("litellm", "stream_chunk_builder"): ("chunks", "messages", "logging_obj"),
}  # fmt: skip


def _changed(what: str) -> str:
    return (
        f"litellm {VERSION}: {what}. helix's stream readers rely on it; pin litellm to the "
        "range the tests pass on, or update the readers (helix_stream/models/_direct_*.py, "
        "_lean_stream.py) to this version."
    )


def _resolve(module: str, dotted: str) -> Any:
    value: Any = importlib.import_module(module)
    for part in dotted.split(".") if dotted else ():
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("module", sorted(NAMES))
def test_the_names_the_readers_use_exist(module: str) -> None:
    litellm_module()
    for owner, names in NAMES[module].items():
        try:
            target = _resolve(module, owner)
        except (ImportError, AttributeError):
            pytest.fail(_changed(f"{module}.{owner or ''} is gone"))
        missing = [n for n in names if not hasattr(target, n)]
        assert not missing, _changed(f"{module}.{owner} has no {', '.join(missing)}")


@pytest.mark.parametrize(("module", "function"), sorted(PARAMETERS))
def test_the_parameters_the_readers_pass_exist(module: str, function: str) -> None:
    litellm_module()
    parameters = inspect.signature(_resolve(module, function)).parameters
    missing = [p for p in PARAMETERS[module, function] if p not in parameters]
    assert not missing, _changed(f"{module}.{function} takes no {', '.join(missing)}")


def test_bedrock_reads_its_stream_in_a_generator_over_the_response() -> None:
    # The Bedrock reader finds litellm's decoder and the response in the arguments of the
    # decoder's unstarted aiter_bytes generator; its first statement makes the buffer.
    module = importlib.import_module("litellm.llms.bedrock.chat.invoke_handler")
    source = inspect.getsource(module.AWSEventStreamDecoder.aiter_bytes)
    assert inspect.isasyncgenfunction(module.AWSEventStreamDecoder.aiter_bytes), _changed(
        "AWSEventStreamDecoder.aiter_bytes is no longer an async generator"
    )
    assert "event_stream_buffer" in source and "_decode_event" in source, _changed(
        "AWSEventStreamDecoder.aiter_bytes reads the event stream differently"
    )


def test_gemini_streams_open_when_first_read() -> None:
    # The Gemini reader asks litellm's wrapper to make the request (fetch_stream) and knows
    # the call by the function litellm's VertexLLM.async_streaming gives the wrapper.
    module = importlib.import_module(
        "litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini"
    )
    source = inspect.getsource(module.VertexLLM.async_streaming)
    assert "completion_stream=None" in source and "make_call=" in source, _changed(
        "VertexLLM.async_streaming no longer hands the wrapper a call to make when first read"
    )
    init = inspect.getsource(module.ModelResponseIterator.__init__)
    for name in ("self.response", "self.chunk_type", "self.has_seen_tool_calls", "_output_cap"):
        assert name in init, _changed(f"Gemini's ModelResponseIterator has no {name}")


# Attributes the readers read or set on litellm's per-stream objects (set in their code).
ATTRIBUTES: dict[tuple[str, str], tuple[str, ...]] = {
    ("litellm.llms.anthropic.chat.handler", "ModelResponseIterator"): (
        "self.sync_stream", "self.json_mode", "self.response_format_schema",
        "self.tool_name_reverse_map", "self._response", "self.response_id", "self.speed",
    ),
    ("litellm.llms.bedrock.chat.invoke_handler", "AWSEventStreamDecoder"): (
        "self.json_mode", "self.response_id", "self._thinking_ran", "self.content_blocks",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("module", "owner"), sorted(ATTRIBUTES))
def test_the_attributes_the_readers_read_are_set(module: str, owner: str) -> None:
    source = inspect.getsource(_resolve(module, owner))
    missing = [a for a in ATTRIBUTES[module, owner] if a not in source]
    assert not missing, _changed(f"{module}.{owner} sets no {', '.join(missing)}")
