"""The embedded demo model, ``model="helix/demo"``: no network, no key, deterministic.

It streams its reply word by word. When tools are offered and the last user message names
what a tool does (a word of the tool's name, e.g. "weather" for ``get_weather``), it calls that
tool with arguments taken from the message; when the tool results come back it answers from
them. Asked about its instructions, it lists the instruction context rows it was sent, and
every answer says which instruction it follows — so a person can watch context rows work.

``helix/demo-slow`` is the same model with a short pause between words (for the demo page).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .._messages import message_text

__all__ = ["DemoReply", "demo_reply", "register_demo"]

_WORD = re.compile(r"\S+\s*")
_CONTEXT = re.compile(
    r'<context kind="(?P<kind>[a-z-]+)" source="(?P<source>[a-z-]+)">\n?(?P<body>.*?)\n?</context>',
    re.S,
)
_NAMED = re.compile(r"\b(?:in|for|of|about|to|named|called)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
_QUOTED = re.compile(r"[\"“']([^\"”']+)[\"”']")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(slots=True)
class DemoReply:
    """What the demo model answers: text, or tool calls (name, JSON arguments).

    Example::

        reply = demo_reply([{"role": "user", "content": "Hello"}], tools=None)
        assert isinstance(reply, DemoReply) and reply.text and not reply.tool_calls
    """

    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)


def _instructions(messages: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for m in messages:
        for match in _CONTEXT.finditer(message_text(m)):
            if match["kind"] == "instruction":
                found.append(match["body"].strip())
    return found


def _argument(schema: dict[str, Any], text: str) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        lowered = text.lower()
        return next((v for v in schema["enum"] if str(v).lower() in lowered), schema["enum"][0])
    if kind in ("integer", "number"):
        number = _NUMBER.search(text)
        if number is None:
            return schema.get("default", 1)
        return int(float(number[0])) if kind == "integer" else float(number[0])
    if kind == "boolean":
        return True
    if (m := _QUOTED.search(text)) is not None:
        return m[1]
    if (m := _NAMED.search(text)) is not None:
        return m[1]
    words = re.findall(r"[\w'-]+", text)
    return words[-1] if words else ""


def _pick_tool(tools: list[dict[str, Any]], text: str) -> tuple[str, str] | None:
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", text)}
    for entry in tools:
        fn = entry.get("function", {})
        name = fn.get("name", "")
        if name.startswith("__"):
            continue
        tokens = [t for t in re.split(r"[_\W]+", name.lower()) if len(t) > 2 and t != "get"]
        if not any(t in words or t.rstrip("s") in words for t in tokens):
            continue
        params = fn.get("parameters", {})
        props = params.get("properties", {})
        args = {key: _argument(spec, text) for key, spec in props.items()}
        return name, json.dumps(args, ensure_ascii=False)
    return None


def demo_reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> DemoReply:
    """Decide the demo model's reply (pure function; see the module docstring).

    Example::

        tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
        reply = demo_reply([{"role": "user", "content": "Use get_weather for Paris"}], tools)
        print(reply.tool_calls)                           # [("get_weather", '{"city": ...}')]
    """
    instructions = _instructions(messages)
    follow = f" (Following the instruction: {instructions[-1]})" if instructions else ""
    last = messages[-1] if messages else {"role": "user", "content": ""}
    if last.get("role") == "tool":
        names = {
            call["id"]: call["function"]["name"]
            for m in messages
            if m.get("role") == "assistant"
            for call in m.get("tool_calls") or []
        }
        results = []
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            results.append(
                f"{names.get(m.get('tool_call_id'), 'the tool')} returned {message_text(m)}"
            )
        return DemoReply(text="Done: " + "; ".join(reversed(results)) + "." + follow)
    user = next(
        (
            m
            for m in reversed(messages)
            if m.get("role") == "user" and not _CONTEXT.search(message_text(m))
        ),
        None,
    )
    text = message_text(user).strip() if user else ""
    if tools and (call := _pick_tool(tools, text)) is not None:
        return DemoReply(tool_calls=[call])
    if "instruction" in text.lower():
        if not instructions:
            return DemoReply(text="I have no instructions beyond my system prompt.")
        listed = " ".join(f"{i}. {body}" for i, body in enumerate(instructions, 1))
        return DemoReply(text=f"My active instructions: {listed}")
    return DemoReply(text=f"You said: {text}{follow}" if text else "Hello! Ask me anything.")


def _call_id(messages: list[dict[str, Any]], index: int, name: str) -> str:
    # Unique within a conversation (ids repeat across turns otherwise), and deterministic.
    turn = sum(1 for m in messages if m.get("role") == "user")
    return f"call_demo_{turn}_{index}_{name}"


def _events(
    reply: DemoReply, prompt_words: int, messages: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    words = _WORD.findall(reply.text)
    for word in words:
        yield {
            "text": word,
            "tool_use": None,
            "is_finished": False,
            "finish_reason": "",
            "usage": None,
            "index": 0,
        }
    for i, (name, args) in enumerate(reply.tool_calls):
        call = {
            "id": _call_id(messages, i, name),
            "type": "function",
            "function": {"name": name, "arguments": args},
            "index": i,
        }
        yield {
            "text": "",
            "tool_use": call,
            "is_finished": False,
            "finish_reason": "",
            "usage": None,
            "index": 0,
        }
    output = len(words) + 10 * len(reply.tool_calls)
    yield {
        "text": "",
        "tool_use": None,
        "is_finished": True,
        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": output,
            "total_tokens": prompt_words + output,
        },
        "index": 0,
    }


def _response(
    litellm: ModuleType,
    model: str,
    messages: list[dict[str, Any]],
    reply: DemoReply,
    prompt_words: int,
) -> Any:
    """The demo's answer without a stream, as litellm's ``ModelResponse``."""
    calls = [
        {
            "id": _call_id(messages, i, name),
            "type": "function",
            "function": {"name": name, "arguments": a},
        }
        for i, (name, a) in enumerate(reply.tool_calls)
    ]
    output = len(_WORD.findall(reply.text))
    return litellm.ModelResponse(
        model=model,
        created=int(time.time()),
        choices=[
            {
                "index": 0,
                "finish_reason": "tool_calls" if calls else "stop",
                "message": {
                    "role": "assistant",
                    "content": reply.text or None,
                    "tool_calls": calls or None,
                },
            }
        ],
        usage={
            "prompt_tokens": prompt_words,
            "completion_tokens": output,
            "total_tokens": prompt_words + output,
        },
    )


def register_demo(litellm: ModuleType) -> None:
    """Register the ``helix`` provider with litellm (idempotent).

    Only plain litellm calls need it: helix_stream's own calls know ``helix/demo``.

    Example::

        import litellm
        from helix_stream.models.demo import register_demo

        register_demo(litellm)
        await litellm.acompletion(model="helix/demo", messages=[{"role": "user", "content": "Hi"}])
    """

    class DemoLLM(litellm.CustomLLM):  # type: ignore[name-defined,misc]
        def _plan(
            self, model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any]
        ) -> tuple[DemoReply, int, float]:
            reply = demo_reply(messages, optional_params.get("tools"))
            prompt_words = sum(len(message_text(m).split()) for m in messages)
            delay = 0.03 if model.endswith("slow") else 0.0
            return reply, prompt_words, delay

        async def astreaming(
            self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
        ) -> AsyncIterator[dict[str, Any]]:
            reply, prompt_words, delay = self._plan(
                model, messages, kwargs.get("optional_params") or {}
            )
            for event in _events(reply, prompt_words, messages):
                if delay:
                    await asyncio.sleep(delay)
                yield event

        def streaming(
            self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
        ) -> Iterator[dict[str, Any]]:
            reply, prompt_words, _ = self._plan(
                model, messages, kwargs.get("optional_params") or {}
            )
            yield from _events(reply, prompt_words, messages)

        def completion(
            self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
        ) -> Any:
            reply, prompt_words, _ = self._plan(
                model, messages, kwargs.get("optional_params") or {}
            )
            return _response(litellm, model, messages, reply, prompt_words)

        async def acompletion(
            self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
        ) -> Any:
            return self.completion(model, messages, *args, **kwargs)

    provider_map: list[dict[str, Any]] = litellm.custom_provider_map
    others = [m for m in provider_map if m.get("provider") != "helix"]
    handlers = [*others, {"provider": "helix", "custom_handler": DemoLLM()}]
    # setattr: litellm's module attributes are not visible to the type checker.
    setattr(litellm, "custom_provider_map", handlers)  # noqa: B010
