"""The offer: a frozen snapshot of the tools an MCP server offers, and the rule that uses it.

A server may change its tool list at any time. Offering whatever it lists now would change
the request's tool list between turns, and with it every byte after it: the provider's prompt
cache would miss. So the tools a session offers come from an :class:`MCPOffer`, taken once
(the session's first turn) and stored with the session (:meth:`MCPOffer.encode` /
:meth:`MCPOffer.decode`). Later turns build the same tools, in the same order, from the same
bytes, whatever the server lists by then:

- a tool the offer has and the server no longer lists stays offered, but a call to it gets a
  ``tool_unavailable`` result without reaching the server (:meth:`MCPOffer.unavailable`);
- a tool the server added is not offered until the session takes a new offer.

Everything here is pure: no connection, no ``mcp`` package.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import (
    InvalidRequestError,
    ToolProviderAuthError,
    ToolProviderError,
    describe_validation,
)
from ._names import check_server_name, offered_names

__all__ = ["OFFER_FORMAT", "MCPOffer", "MCPToolSpec", "make_offer", "offer_and_gone"]

_log = logging.getLogger("helix_stream.mcp")

OFFER_FORMAT = "helix.mcp.offer/1"


def _json(value: Any) -> str:
    # Key order kept as the server sent it: the model is offered the schema in that order,
    # and a decoded offer must give back exactly the bytes it was encoded from.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPToolSpec:
    """One offered tool, as the model sees it and as the server knows it.

    Attributes:
        name: The name offered to the model (``github__search_issues``).
        remote_name: The tool's name on the server (``search_issues``).
        description: Its description.
        schema_json: Its input JSON schema, as JSON text (kept as text: frozen, and the exact
            bytes the model is offered).
        annotations_json: The server's hints (``readOnlyHint``, ``destructiveHint``...) as
            JSON text; ``"{}"`` when it gave none.

    Example::

        weather = hs.MCPServer.stdio("python", ["weather_server.py"], name="weather")
        offer = await weather.offer()
        for spec in offer.tools:            # offered name, then its name on the server
            print(spec.name, spec.remote_name, spec.description)
    """

    name: str
    remote_name: str
    description: str
    schema_json: str
    annotations_json: str = "{}"

    @property
    def input_schema(self) -> dict[str, Any]:
        """The input schema (a fresh dict each time)."""
        value: dict[str, Any] = json.loads(self.schema_json)
        return value

    @property
    def annotations(self) -> dict[str, Any]:
        """The server's hints, e.g. ``{"destructiveHint": True}``. Hints only: a server you do
        not trust can claim anything."""
        value: dict[str, Any] = json.loads(self.annotations_json)
        return value


class _WireTool(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    remote_name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]


class _WireOffer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str
    server: str
    tools: list[_WireTool]


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPOffer:
    """The tools one server offers a session, in a stable order (by offered name).

    Attributes:
        server: The server's name.
        tools: The offered tools, sorted by ``name``.

    Example::

        weather = hs.MCPServer.stdio("python", ["weather_server.py"], name="weather")
        offer = await weather.offer()                    # a snapshot: store it with the session
        stored = offer.encode()
        tools = await weather.tools(MCPOffer.decode(stored))   # exactly those tools, in that order
    """

    server: str
    tools: tuple[MCPToolSpec, ...]

    def __post_init__(self) -> None:
        check_server_name(self.server)
        names = [spec.name for spec in self.tools]
        if names != sorted(set(names)):
            raise InvalidRequestError("an MCPOffer's tools must have distinct names, in order")

    def names(self) -> tuple[str, ...]:
        """The offered names, in order."""
        return tuple(spec.name for spec in self.tools)

    def unavailable(self, listed: Iterable[str]) -> frozenset[str]:
        """The offered names whose tool the server no longer lists (``listed``: the names the
        server lists now, as it spells them). A call to one gets ``tool_unavailable``."""
        present = set(listed)
        return frozenset(spec.name for spec in self.tools if spec.remote_name not in present)

    def encode(self) -> str:
        """The offer as JSON text, to store with the session. ``decode`` gives it back, and
        the same offer always encodes to the same text."""
        tools = [
            {
                "name": spec.name,
                "remote_name": spec.remote_name,
                "description": spec.description,
                "input_schema": json.loads(spec.schema_json),
                "annotations": json.loads(spec.annotations_json),
            }
            for spec in self.tools
        ]
        return _json({"format": OFFER_FORMAT, "server": self.server, "tools": tools})

    @classmethod
    def decode(cls, text: str | bytes) -> MCPOffer:
        """An offer from :meth:`encode`'s text.

        Raises:
            InvalidRequestError: the text is not an encoded offer (naming what is wrong).
        """
        try:
            wire = _WireOffer.model_validate_json(text)
        except ValidationError as exc:
            raise InvalidRequestError(
                f"not an encoded MCP offer: {describe_validation(exc)}"
            ) from None
        if wire.format != OFFER_FORMAT:
            raise InvalidRequestError(
                f"not an encoded MCP offer: format {wire.format!r}, expected {OFFER_FORMAT!r}"
            )
        specs = (
            MCPToolSpec(
                name=tool.name,
                remote_name=tool.remote_name,
                description=tool.description,
                schema_json=_json(tool.input_schema),
                annotations_json=_json(tool.annotations),
            )
            for tool in wire.tools
        )
        return cls(server=wire.server, tools=tuple(specs))


def make_offer(server: str, prefix: str, listed: Iterable[Mapping[str, Any]]) -> MCPOffer:
    """The offer of the tools a server lists now.

    Args:
        server: The server's name.
        prefix: The prefix of the offered names (``""``: the server's names, made valid).
        listed: The listed tools in MCP's wire form (``name``, ``description``,
            ``inputSchema``, ``annotations``).
    """
    by_name: dict[str, Mapping[str, Any]] = {}
    for tool in listed:  # a name listed twice (overlapping pages) counts once: the first
        by_name.setdefault(str(tool["name"]), tool)
    tools = list(by_name.values())
    names = offered_names(prefix, (str(tool["name"]) for tool in tools))
    specs = sorted(
        (
            MCPToolSpec(
                name=names[str(tool["name"])],
                remote_name=str(tool["name"]),
                description=str(tool.get("description") or ""),
                schema_json=_json(tool.get("inputSchema") or {"type": "object"}),
                annotations_json=_json(tool.get("annotations") or {}),
            )
            for tool in tools
        ),
        key=lambda spec: spec.name,
    )
    return MCPOffer(server=server, tools=tuple(specs))


async def offer_and_gone(
    server: str, stored: MCPOffer | None, list_now: Callable[[], Awaitable[MCPOffer]]
) -> tuple[MCPOffer, frozenset[str]]:
    """The offer to build tools from, and its names the server no longer lists.

    ``stored``: a session's offer (its tools, in its order, are what is offered), else the
    server's list now. A server that cannot be listed now does not fail a turn with a stored
    offer: its tools are offered all the same, and their calls fail until it is back (logged
    at WARNING on ``helix_stream.mcp``). Refused credentials always raise.

    Raises:
        InvalidRequestError: ``stored`` is another server's.
        ToolProviderError: without a stored offer, the server cannot be listed.
    """
    if stored is not None and stored.server != server:
        raise InvalidRequestError(f"that offer is MCP server {stored.server!r}'s, not {server!r}'s")
    try:
        current = await list_now()
    except ToolProviderAuthError:
        raise
    except ToolProviderError as exc:
        if stored is None:
            raise
        _log.warning("%s; offering the stored tools, whose calls fail until it is back", exc)
        current = stored
    offer = stored or current
    return offer, offer.unavailable(spec.remote_name for spec in current.tools)
