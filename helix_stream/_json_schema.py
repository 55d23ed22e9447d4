"""Tool input described by a JSON schema instead of a pydantic model.

The loop validates a tool's arguments with ``input_schema.model_validate`` and offers
``input_schema.model_json_schema()`` to the model. :func:`json_schema_model` makes a model class
that does both from a JSON schema itself, so a tool whose schema comes as JSON (an MCP server's,
or one an app writes by hand) goes through the same path as any other tool:

- the schema is offered as it was given: pydantic does not rewrite it;
- arguments are checked with ``jsonschema``, in the dialect the schema names with ``$schema``
  (JSON Schema 2020-12 when it names none, as the MCP specification says); every violation
  becomes one entry of a pydantic ``ValidationError``, so the model reads the same kind of
  "Invalid input" text as for any tool;
- the validated value's ``.root`` is the arguments dict, unchanged.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import RootModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from .errors import InvalidRequestError

__all__ = ["JsonSchemaInput", "json_schema_model"]


class JsonSchemaInput(RootModel[dict[str, Any]]):
    """A tool's arguments, validated against a JSON schema (see the module docstring)."""

    json_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    json_validator: ClassVar[Any] = None

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> JsonSchemaInput:
        """Check ``obj`` against the JSON schema, then wrap it (``.root`` is ``obj``)."""
        problems = sorted(cls.json_validator.iter_errors(obj), key=_where)
        if problems:
            raise ValidationError.from_exception_data(
                cls.__name__, [_line_error(problem) for problem in problems]
            )
        return super().model_validate(obj, *args, **kwargs)

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The JSON schema as given (a copy: callers may edit it)."""
        return copy.deepcopy(cls.json_schema)


def _where(problem: Any) -> tuple[str, ...]:
    return tuple(str(part) for part in problem.absolute_path)


def _line_error(problem: Any) -> InitErrorDetails:
    message = str(problem.message)
    return {
        "type": PydanticCustomError("json_schema", "{message}", {"message": message}),
        "loc": tuple(problem.absolute_path),
        "input": problem.instance,
    }


def json_schema_model(schema: Mapping[str, Any], *, name: str) -> type[JsonSchemaInput]:
    """A model class for ``input_schema=`` that validates against a JSON schema.

    Args:
        schema: A JSON schema of an object (``{"type": "object", "properties": ...}``).
        name: The class name (the tool's name reads best in errors).

    Raises:
        InvalidRequestError: ``schema`` is not JSON, not an object schema, or not a valid
            schema of its dialect.
    """
    from jsonschema import Draft202012Validator, SchemaError, validators

    try:
        # A JSON round trip: the stored schema is plain data, whatever mapping it came in.
        plain = json.loads(json.dumps(schema))
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(f"the input schema of {name!r} is not JSON: {exc}") from None
    if not isinstance(plain, dict) or plain.get("type", "object") != "object":
        raise InvalidRequestError(
            f"the input schema of {name!r} must describe an object ({{'type': 'object', ...}})"
        )
    validator_class = validators.validator_for(plain, default=Draft202012Validator)
    try:
        validator_class.check_schema(plain)
    except SchemaError as exc:
        raise InvalidRequestError(
            f"the input schema of {name!r} is not a valid JSON schema: {exc.message}"
        ) from None
    namespace = {
        "__module__": __name__,
        "json_schema": plain,
        "json_validator": validator_class(plain),
    }
    return type(name, (JsonSchemaInput,), namespace)
