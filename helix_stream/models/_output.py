"""Structured output: how a call asks for a pydantic model, and how the answer becomes one.

``stream_text(output=City)`` and ``Agent(output_schema=City)`` ask the model for a ``City``.
Two ways exist, chosen per call by :func:`output_spec`:

- ``json_schema``: the provider takes a JSON-schema ``response_format`` (litellm's model map
  says so, for every deployment a Router may pick): the answer's text is the JSON;
- ``tool``: otherwise the loop offers the finish tool with the schema as its input, and
  forces it on the last step; the tool call's arguments are the JSON.

Either way the JSON streams in: :class:`OutputStream` turns its text deltas into partial
objects (plain dicts, as the AI SDK's partial output stream gives), and
:func:`parse_output` validates the final text into the model, or raises
:class:`~helix_stream.errors.OutputValidationError` carrying the raw text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ..errors import InvalidRequestError, OutputValidationError, describe_validation
from ._partial_json import PartialJSON

__all__ = [
    "OutputMode",
    "OutputSpec",
    "OutputStream",
    "check_output_schema",
    "output_from_value",
    "output_spec",
    "parse_output",
    "response_format",
]

OutputMode = Literal["json_schema", "tool"]


def check_output_schema(schema: Any, *, argument: str = "output") -> type[BaseModel]:
    """``schema`` if it is a pydantic model class, else InvalidRequestError naming ``argument``."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    raise InvalidRequestError(
        f"{argument}= takes a pydantic model class (class City(BaseModel): ...), not "
        f"{type(schema).__name__ if not isinstance(schema, type) else schema.__name__}."
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputSpec:
    """How one call asks for its structured output.

    Attributes:
        schema: The pydantic model the answer must validate into.
        mode: ``json_schema`` (``response_format``) or ``tool`` (the finish tool).
    """

    schema: type[BaseModel]
    mode: OutputMode

    def request_params(self) -> dict[str, Any]:
        """The litellm params this mode adds to each model call (none for ``tool``: the loop
        offers the finish tool)."""
        if self.mode == "json_schema":
            return {"response_format": response_format(self.schema)}
        return {}


def output_spec(
    schema: Any, *, model: str, router: Any = None, argument: str = "output"
) -> OutputSpec:
    """Choose how to ask ``model`` for ``schema``: the provider's JSON schema where litellm
    reports support for it, the finish tool otherwise. Needs litellm loaded.

    Raises:
        InvalidRequestError: ``schema`` is not a pydantic model class.
    """
    checked = check_output_schema(schema, argument=argument)
    from ._litellm import supports_response_schema

    mode: OutputMode = "json_schema" if supports_response_schema(model, router) else "tool"
    return OutputSpec(schema=checked, mode=mode)


_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI-style JSON-schema ``response_format`` for ``schema`` (litellm translates it
    for other providers). Not ``strict``: pydantic's optional fields and defaults do not fit
    OpenAI's strict subset, and validation happens here anyway."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": _NAME.sub("_", schema.__name__)[:64] or "output",
            "schema": schema.model_json_schema(),
            "strict": False,
        },
    }


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)


def parse_output(text: str, schema: type[BaseModel]) -> BaseModel:
    """Validate a model's final JSON text into ``schema``.

    A Markdown code fence around the JSON is tolerated (some models add one even when asked
    for JSON).

    Raises:
        OutputValidationError: the text is not JSON, or not a valid ``schema``; it carries
            the raw text unchanged.
    """
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        return schema.model_validate_json(body)
    except ValidationError as exc:
        raise OutputValidationError(
            text, schema_name=schema.__name__, errors=describe_validation(exc)
        ) from exc


def output_from_value(value: Any, schema: type[BaseModel], *, text: str | None = None) -> BaseModel:
    """Validate an already parsed value (the finish tool's input) into ``schema``.

    Raises:
        OutputValidationError: with ``text`` (the tool call's raw arguments) when given.
    """
    if isinstance(value, schema):
        return value
    try:
        return schema.model_validate(value)
    except ValidationError as exc:
        raw = text if text is not None else _as_text(value)
        raise OutputValidationError(
            raw, schema_name=schema.__name__, errors=describe_validation(exc)
        ) from exc


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


class OutputStream:
    """Partial objects of a structured answer as its JSON streams in.

    Feed it the text deltas of the answer (``json_schema`` mode) or the argument deltas of the
    finish tool call (``tool`` mode); each :meth:`feed` returns the new partial object (a
    dict, not validated: fields appear as they arrive) when it changed, else ``None``.
    :meth:`finish` validates the whole text into the schema.
    """

    __slots__ = ("_json", "schema")

    def __init__(self, schema: type[BaseModel]) -> None:
        self.schema = schema
        self._json = PartialJSON()

    def feed(self, delta: str) -> Any:
        return self._json.feed(delta)

    @property
    def partial(self) -> Any:
        """The latest partial object (``None`` before the first one)."""
        return self._json.value

    @property
    def text(self) -> str:
        return self._json.text

    def finish(self) -> BaseModel:
        """The validated output (raises OutputValidationError with the raw text)."""
        return parse_output(self._json.text, self.schema)
