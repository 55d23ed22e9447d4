"""Structured output building blocks: the mode per model, partial objects, validation.

The streamed answers come from the loopback server through litellm (real HTTP): the JSON as
text under a ``response_format``, or as a finish-tool call's arguments.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from helix_stream import chunks as c, errors
from helix_stream.models._litellm import acompletion
from helix_stream.models._output import (
    OutputStream,
    check_output_schema,
    output_from_value,
    output_spec,
    parse_output,
    response_format,
)
from helix_stream.models._parse import StepParser
from helix_stream.models._partial_json import PartialJSON, parse_partial_json
from tests.loopback import LoopbackServer, Reply, text, tool_calls


class City(BaseModel):
    name: str
    population: int
    tags: list[str] = []


ANSWER = {"name": "Paris", "population": 2102650, "tags": ["capital", "seine"]}


async def stream_chunks(**params: Any) -> list[c.Chunk]:
    stream = await acompletion(
        messages=[{"role": "user", "content": "a city"}], stream=True, **params
    )
    parser = StepParser(0)
    out: list[c.Chunk] = []
    async for raw in stream:
        out.extend(parser.feed(raw))
    out.extend(parser.finish()[0])
    return out


async def test_a_model_with_json_schema_support_gets_response_format_and_streams_partials(
    loopback: LoopbackServer,
) -> None:
    spec = output_spec(City, model="openai/gpt-4o-mini")
    assert spec.mode == "json_schema"
    raw = json.dumps(ANSWER)
    loopback.script(Reply(deltas=[{"content": raw[i : i + 7]} for i in range(0, len(raw), 7)]))
    chunks = await stream_chunks(
        model="openai/gpt-4o-mini",
        api_base=loopback.api_base,
        api_key="sk-loopback",
        **spec.request_params(),
    )
    sent = loopback.bodies()[0]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "City"
    assert sent["json_schema"]["schema"]["required"] == ["name", "population"]

    output = OutputStream(City)
    deltas = [x.delta for x in chunks if isinstance(x, c.TextDelta)]
    assert deltas[:3] == ['{"name"', ': "Pari', 's", "po']
    partials = [p for d in deltas if (p := output.feed(d)) is not None]
    paris = {"name": "Paris"}
    assert partials == [
        {},
        {"name": "Pari"},
        paris,  # '"po' is a key without a value yet: no change, nothing emitted
        {**paris, "population": 210},
        {**paris, "population": 2102650},
        {**paris, "population": 2102650, "tags": ["capit"]},
        {**paris, "population": 2102650, "tags": ["capital", "s"]},
        ANSWER,
    ]
    assert output.partial == ANSWER
    assert output.finish() == City(**ANSWER)


async def test_a_model_without_it_uses_the_finish_tool_whose_arguments_stream_as_partials(
    loopback: LoopbackServer,
) -> None:
    spec = output_spec(City, model="openai/loopback")
    assert spec.mode == "tool" and spec.request_params() == {}
    loopback.script(tool_calls(("__finish__", ANSWER), fragment=5))
    chunks = await stream_chunks(**loopback.llm())
    output = OutputStream(City)
    partials = [
        p
        for x in chunks
        if isinstance(x, c.ToolInputDelta)
        if (p := output.feed(x.delta)) is not None
    ]
    assert len(partials) > 5 and partials[-1] == ANSWER
    (available,) = [x for x in chunks if isinstance(x, c.ToolInputAvailable)]
    assert output_from_value(available.input, City) == City(**ANSWER)
    assert output.finish() == City(**ANSWER)


async def test_invalid_output_raises_a_typed_error_with_the_raw_text(
    loopback: LoopbackServer,
) -> None:
    reply = '{"name": "Paris", "population": "lots"}'
    loopback.script(text(reply))
    chunks = await stream_chunks(**loopback.llm())
    answer = "".join(x.delta for x in chunks if isinstance(x, c.TextDelta))
    with pytest.raises(errors.OutputValidationError) as info:
        parse_output(answer, City)
    error = info.value
    assert error.text == reply
    assert error.schema_name == "City" and "population" in error.errors
    assert (error.code, error.http_status, error.retryable) == ("output_invalid", 502, False)
    assert isinstance(error, errors.ModelError)
    with pytest.raises(errors.OutputValidationError) as info:
        parse_output("Sorry, I cannot answer that.", City)
    assert info.value.text == "Sorry, I cannot answer that."
    with pytest.raises(errors.OutputValidationError) as info:
        output_from_value({"name": "x"}, City, text='{"name": "x"}')
    assert info.value.text == '{"name": "x"}' and "population" in info.value.errors


def test_a_fenced_answer_is_accepted() -> None:
    fenced = "```json\n" + json.dumps(ANSWER) + "\n```"
    assert parse_output(fenced, City) == City(**ANSWER)
    assert parse_partial_json(fenced[:42]) == {"name": "Paris", "population": 21}


def test_only_a_pydantic_model_class_is_an_output_schema() -> None:
    assert check_output_schema(City) is City
    for wrong in (City(**ANSWER), dict, {"type": "object"}):
        with pytest.raises(errors.InvalidRequestError) as info:
            check_output_schema(wrong, argument="output_schema")
        assert info.value.message.startswith("output_schema= takes a pydantic model class")


def test_response_format_names_are_sanitised() -> None:
    class Weird(BaseModel):
        x: int

    Weird.__name__ = "My Weird.Model"
    assert response_format(Weird)["json_schema"]["name"] == "My_Weird_Model"


@pytest.mark.parametrize(
    ("prefix", "value"),
    [
        ('{"a": "hel', {"a": "hel"}),
        ('{"a": ', {}),
        ('{"a": t', {"a": True}),
        ('{"a": nu', {"a": None}),
        ("[1, 2", [1, 2]),
        ("[1, ", [1]),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": -', {}),
        ('{"a": 1.5e', {"a": 1.5}),
        ('{"a": "x\\', {"a": "x"}),
        ('{"a": "x\\u00', {"a": "x"}),
        ('{"a": "x\\u00e9', {"a": "xé"}),
        ('{"k\\"ey": 1', {'k"ey': 1}),
        ('{"a": {"b": [1, {"c": "d"', {"a": {"b": [1, {"c": "d"}]}}),
        ('{"a": 1} and some words', {"a": 1}),
        ("no json at all", None),
    ],
)
def test_partial_json_repairs_a_prefix(prefix: str, value: Any) -> None:
    assert parse_partial_json(prefix) == value


def test_every_prefix_of_a_json_text_parses_and_the_whole_gives_the_value() -> None:
    value = {
        "s": 'quote " backslash \\ unicode é \u2603',
        "n": [-1.5e-3, 0, 42, True, False, None],
        "nested": {"empty": {}, "list": [[], [{}], "x"]},
    }
    for ensure_ascii in (True, False):
        raw = json.dumps(value, ensure_ascii=ensure_ascii)
        for end in range(1, len(raw) + 1):
            assert parse_partial_json(raw[:end]) is not None, raw[:end]
        for size in (1, 3, 11):
            partial = PartialJSON()
            for i in range(0, len(raw), size):
                partial.feed(raw[i : i + size])
            assert partial.value == value and partial.text == raw
