"""Context items: what an app, a hook or a tool adds, validated when it is added.

Items are plain dicts on the way in (``hs.instruction("...")`` builds one) and are validated
against the discriminated union below: an unknown kind, an unknown field, a tools item that
switches ``__finish__`` off, an item over 32 KiB (the UTF-8 bytes of its JSON), an item with a
lone surrogate in its text, or more than ``MAX_ITEMS_PER_CALL`` (100) items in one call is
refused with :class:`~helix_stream.errors.ContextValidationError` — all items of the call or
none.

An item that is valid but names a tool the agent does not have is not refused — a row switching
off (or on) a name the agent lacks changes nothing, and an MCP server's tools or a later version
of the agent may bring the name — but :func:`unknown_tools` words a warning for it, decided
before anything is written (:class:`ContextAdded`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, model_validator

from .._limits import MAX_ITEMS_PER_CALL, text_problem
from ..errors import ContextValidationError, describe_validation
from ..tools import FINISH_TOOL_NAME

__all__ = [
    "APP_SOURCE",
    "LATE_ANSWER_SOURCE",
    "MAX_ITEMS_PER_CALL",
    "MAX_ITEM_BYTES",
    "MEMORY_SOURCE",
    "STEP_CONTEXT_SOURCE",
    "TOOL_SOURCE",
    "ContextAdded",
    "ContextItem",
    "ContextItemLike",
    "Source",
    "disable_tools",
    "enable_tools",
    "instruction",
    "item_size",
    "memory",
    "notice",
    "unknown_tools",
    "validate_items",
]

MAX_ITEM_BYTES = 32 * 1024
Source = Literal["app", "hook", "tool", "memory", "late-answer"]

# A row's source says who added it. The values are stored with each row and sent to the model
# in its envelope, so they never change; the names say who each one is. Two read alike:
# "hook" is the step_context hook's alone, while a lifecycle hook (define_hook) acts for the
# app, so its items are "app" rows whose origin says {"type": "hook", "event": ...}.
APP_SOURCE: Source = "app"  # add_context, and define_hook handlers
STEP_CONTEXT_SOURCE: Source = "hook"  # the step_context hook, and nothing else
TOOL_SOURCE: Source = "tool"  # a tool's ctx.add_context (forced, whatever the items say)
MEMORY_SOURCE: Source = "memory"  # memory auto-inject
LATE_ANSWER_SOURCE: Source = "late-answer"  # a client tool's answer that came too late
ContextItemLike = Mapping[str, Any] | BaseModel


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source: Source | None = None


class InstructionItem(_Item):
    """Something the model should do from now on (system form when the app adds it)."""

    kind: Literal["instruction"]
    content: str = Field(min_length=1)


class NoticeItem(_Item):
    """A fact the model should know (a late tool answer, a finished upload)."""

    kind: Literal["notice"]
    content: str = Field(min_length=1)


class ToolsItem(_Item):
    """Tools switched off (``disable``) or back on (``enable``) from the next model call on."""

    kind: Literal["tools"]
    disable: list[str] = Field(default_factory=list)
    enable: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> ToolsItem:
        if not self.disable and not self.enable:
            raise ValueError("a tools item needs a non-empty 'disable' or 'enable' list")
        if FINISH_TOOL_NAME in self.disable:
            raise ValueError(f"{FINISH_TOOL_NAME} can never be switched off")
        return self


class Memory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    content: str


class MemoryItem(_Item):
    """Recalled memories (the runtime writes these when memory auto-inject is on)."""

    kind: Literal["memory"]
    memories: list[Memory] = Field(default_factory=list)


class ContextItem(
    RootModel[
        Annotated[
            InstructionItem | NoticeItem | ToolsItem | MemoryItem, Field(discriminator="kind")
        ]
    ]
):
    """Any context item; ``ContextItem.model_validate({...}).root`` is the typed item.

    Example::

        item = ContextItem.model_validate({"kind": "instruction", "content": "Be brief."}).root
        assert item.kind == "instruction"
    """


def instruction(text: str) -> dict[str, Any]:
    """``{"kind": "instruction", "content": text}``: something the model should do from now on.

    Keep tool output, documents and web content out of instructions: an app's instruction
    is sent with operator authority (a system message or the application's envelope, by
    provider: README, "Rows on each provider"). Put such text in a :func:`notice`.

    Example::

        await executor.add_context("chat-42", [hs.instruction("Answer in French.")])
    """
    return {"kind": "instruction", "content": text}


def notice(text: str) -> dict[str, Any]:
    """``{"kind": "notice", "content": text}``: a fact the model should know.

    Example::

        await executor.add_context("chat-42", [hs.notice("Order #1234 has shipped.")])
    """
    return {"kind": "notice", "content": text}


def disable_tools(names: Sequence[str]) -> dict[str, Any]:
    """``{"kind": "tools", "disable": [...]}``: switch tools off from the next model call on.

    Example::

        await executor.add_context("chat-42", [hs.disable_tools(["web_search"])])
    """
    return {"kind": "tools", "disable": list(names)}


def enable_tools(names: Sequence[str]) -> dict[str, Any]:
    """``{"kind": "tools", "enable": [...]}``: switch tools back on (only the app and hooks may).

    Example::

        await executor.add_context("chat-42", [hs.enable_tools(["web_search"])])
    """
    return {"kind": "tools", "enable": list(names)}


def memory(memories: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """``{"kind": "memory", "memories": [{"id", "content"}, ...]}``.

    Example::

        hs.memory([{"id": "m1", "content": "The user prefers metric units."}])
    """
    return {"kind": "memory", "memories": [dict(m) for m in memories]}


def item_size(item: Mapping[str, Any]) -> int:
    """The UTF-8 bytes of an item's compact JSON (what the 32 KiB limit counts).

    Raises:
        ValueError: a string of the item holds a lone surrogate (it has no UTF-8 form).

    Example::

        assert item_size(hs.instruction("Be brief.")) < 32 * 1024   # the per-item limit
    """
    text = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    problem = text_problem(text)
    if problem is not None:
        raise ValueError(f"its JSON {problem}")
    return len(text.encode())


def validate_items(
    items: Sequence[ContextItemLike],
    *,
    default_source: Source = APP_SOURCE,
    forced_source: Source | None = None,
    allow_hook: bool = False,
    max_items: int = MAX_ITEMS_PER_CALL,
) -> list[dict[str, Any]]:
    """Validate every item; return them as dicts with their ``source`` set.

    Raises:
        ContextValidationError: any item is invalid, or there are more than ``max_items``
            (the message says which and why); nothing has been queued.

    Example::

        items = validate_items([hs.instruction("Be brief."), hs.disable_tools(["search"])])
        assert [item["source"] for item in items] == ["app", "app"]
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise ContextValidationError(
            "items must be a list of context items, e.g. [hs.instruction('...')]"
        )
    if len(items) > max_items:
        # Refused before any item is looked at: every item added becomes a row that each
        # later model call of the session carries.
        raise ContextValidationError(
            f"{len(items)} items in one call; the limit is {max_items}. Nothing was queued. "
            "Send fewer, or merge them into fewer items."
        )
    out: list[dict[str, Any]] = []
    for index, raw in enumerate(items):
        data = raw.model_dump(exclude_none=True) if isinstance(raw, BaseModel) else raw
        if not isinstance(data, Mapping):
            raise ContextValidationError(f"item {index} is not an object: {type(raw).__name__}")
        try:
            item = ContextItem.model_validate(dict(data)).root
        except ValidationError as exc:
            raise ContextValidationError(
                f"item {index} is invalid: {describe_validation(exc, root='item', skip=1)}"
            ) from None
        source = forced_source or item.source or default_source
        if source == STEP_CONTEXT_SOURCE and not allow_hook and forced_source is None:
            raise ContextValidationError(
                f"item {index}: source 'hook' is reserved for the step_context hook; "
                "leave source out (it defaults to 'app')"
            )
        clean = item.model_dump(exclude_none=True, exclude_defaults=True, exclude={"source"})
        clean["kind"] = item.kind
        if isinstance(item, ToolsItem):
            clean = {
                "kind": "tools",
                **({"disable": item.disable} if item.disable else {}),
                **({"enable": item.enable} if item.enable else {}),
            }
        clean["source"] = source
        try:
            size = item_size(clean)
        except ValueError as exc:
            raise ContextValidationError(f"item {index}: {exc}; send valid Unicode") from None
        if size > MAX_ITEM_BYTES:
            raise ContextValidationError(
                f"item {index} is {size} bytes of JSON; the limit is {MAX_ITEM_BYTES} (32 KiB). "
                "Split it or shorten it."
            )
        out.append(clean)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextAdded:
    """What adding context items did (``Executor.add_context_for``; ``POST /context``).

    Attributes:
        recorded: How many items were recorded (0 for a retry under the same key).
        warnings: What the items say that the agent cannot act on, e.g. ``"unknown tool
            'x'"``. The items were recorded all the same.

    Example::

        added = await executor.add_context_for(agent, "session-1", [hs.disable_tools(["serach"])])
        print(added.recorded, added.warnings)       # 1 ("unknown tool 'serach'",)
    """

    recorded: int
    warnings: tuple[str, ...] = ()


def unknown_tools(items: Sequence[Mapping[str, Any]], tools: Collection[str]) -> tuple[str, ...]:
    """A warning for each tool that validated ``items`` switch off or on and ``tools`` lacks
    (once a name, in order): ``"unknown tool 'x'"``.

    Example::

        items = validate_items([hs.disable_tools(["serach"])])
        assert unknown_tools(items, ["search"]) == ("unknown tool 'serach'",)
    """
    names = (n for item in items if item["kind"] == "tools" for n in _switched(item))
    unknown = dict.fromkeys(n for n in names if n not in tools)
    return tuple(f"unknown tool {name!r}" for name in unknown)


def _switched(item: Mapping[str, Any]) -> list[str]:
    return [*item.get("disable", ()), *item.get("enable", ())]
