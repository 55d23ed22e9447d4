"""The litellm stream parser's field reader: fast paths that must still read every field."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from helix_stream.models._fields import read_field
from helix_stream.models._litellm import litellm_module
from helix_stream.models._parse import StepParser


def litellm_types() -> Any:
    # Through the package's own import, at test time, as every other test does: importing
    # litellm at collection time made the browser test's demo chat fail in a full run (the
    # cause is not pinned down yet; a plain script that imports litellm first works).
    return litellm_module().types.utils


class Slotted:
    __slots__ = ("content",)

    def __init__(self) -> None:
        self.content = "slot"


def test_read_field_reads_litellm_objects_plain_objects_and_slots() -> None:
    t = litellm_types()
    Delta, ModelResponseStream, Usage = t.Delta, t.ModelResponseStream, t.Usage
    delta = Delta(content="hi", reasoning_content="think")
    assert (read_field(delta, "content"), read_field(delta, "reasoning_content")) == ("hi", "think")
    assert read_field(Delta(content="x"), "reasoning_content") is None  # deleted by litellm
    chunk = ModelResponseStream(id="c", model="m", choices=[])
    chunk.usage = Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3)
    assert read_field(chunk, "usage").total_tokens == 3
    assert read_field(SimpleNamespace(content="ns"), "content") == "ns"
    assert read_field(Slotted(), "content") == "slot"
    assert read_field(SimpleNamespace(), "missing") is None


def test_the_parser_reads_real_litellm_chunks() -> None:
    t = litellm_types()
    Delta, ModelResponseStream, StreamingChoices = (
        t.Delta,
        t.ModelResponseStream,
        t.StreamingChoices,
    )
    parser = StepParser(0)
    chunks = [
        ModelResponseStream(
            id="c",
            model="m",
            choices=[StreamingChoices(index=0, delta=Delta(reasoning_content="a"))],
        ),
        ModelResponseStream(
            id="c", model="m", choices=[StreamingChoices(index=0, delta=Delta(content="b"))]
        ),
        ModelResponseStream(
            id="c",
            model="m",
            choices=[StreamingChoices(index=0, delta=Delta(), finish_reason="stop")],
        ),
    ]
    out = [c.type for chunk in chunks for c in parser.feed(chunk)]
    assert out == [
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
    ]
    assert (parser.text, parser.reasoning, parser.finish_reason) == (["b"], ["a"], "stop")
