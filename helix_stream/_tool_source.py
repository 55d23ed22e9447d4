"""Where a run's tools come from: one small protocol, :class:`ToolSource`, that every tool
provider implements — a list of function tools (:class:`FunctionTools`), an MCP server
(``hs.MCPServer``) and an agent's skills (the ``load_skill`` tool, ``sandbox/_skill_set.py``).

A source is asked once per turn, in the run's setup (:func:`resolve_sources`), with a
:class:`ToolRequest`: its ``tools_context`` entry, the caller, how a listing resolves its token,
and the offer the session stored of it. It answers with :class:`SourcedTools`: the tools, each
of which runs its own call (``Tool.execute``: the source's ``call_tool``), and a new offer to
store when it made one. A source with a stored offer builds its tools from it without asking
its server (an MCP server is listed once per session, at its first turn); a tool the server has
since removed is answered ``tool_unavailable`` when it is called
(:class:`~helix_stream.tools.ToolUnavailable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .auth._cache import DEFAULT_AUTH, AuthSettings
from .tools import Tool

if TYPE_CHECKING:
    from .state import SessionInfo

__all__ = ["FunctionTools", "SourcedTools", "ToolRequest", "ToolSource", "resolve_sources"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRequest:
    """What a source is asked with, once per turn.

    Attributes:
        context: The source's ``tools_context`` entry (per-request credentials), if any.
        offer: The offer the session stored of this source (``None``: none yet).
        session: The caller, for a listing that needs the caller's token.
        auth: How a listing resolves its token (it never parks for a sign-in).
    """

    context: Any = None
    offer: str | None = None
    session: SessionInfo | None = None
    auth: AuthSettings = DEFAULT_AUTH


@dataclass(frozen=True, slots=True, kw_only=True)
class SourcedTools:
    """What a source answers: its tools, in order, and a new offer for the session to store
    (``None``: nothing new to store)."""

    tools: tuple[Tool, ...]
    offer: str | None = None


class ToolSource(Protocol):
    """A provider of tools (see the module docstring)."""

    @property
    def name(self) -> str:
        """The source's name: its ``tools_context`` entry and its stored offer's key."""
        ...

    async def get_tools(self, request: ToolRequest) -> SourcedTools:
        """The source's tools for one turn."""
        ...


@dataclass(frozen=True, slots=True)
class FunctionTools:
    """Function tools as a source (``hs.tool(...)``): they are what they are, every turn."""

    tools: tuple[Tool, ...]
    name: str = ""

    async def get_tools(self, request: ToolRequest) -> SourcedTools:
        return SourcedTools(tools=self.tools)


async def resolve_sources(
    sources: Sequence[ToolSource],
    contexts: Mapping[str, Any],
    offers: Mapping[str, str],
    *,
    session: SessionInfo | None = None,
    auth: AuthSettings = DEFAULT_AUTH,
) -> tuple[list[Tool], dict[str, str]]:
    """Ask each source once, in order: the tools (in the sources' order) and the new offers
    they made, by source name. ``contexts`` and ``offers`` are by source name."""
    tools: list[Tool] = []
    taken: dict[str, str] = {}
    for source in sources:
        name = source.name
        request = ToolRequest(
            context=contexts.get(name) if name else None,
            offer=offers.get(name) if name else None,
            session=session,
            auth=auth,
        )
        got = await source.get_tools(request)
        tools.extend(got.tools)
        if got.offer is not None:
            taken[name] = got.offer
    return tools, taken
