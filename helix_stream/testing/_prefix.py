"""``assert_prefix_stable``: a test's check that every request kept the cached prefix.

A provider's prompt cache reads a request's prefix only if it is byte for byte the prefix of an
earlier request. :func:`assert_prefix_stable` takes the request bodies a test recorded (a
:class:`~helix_stream.testing.ScriptedModel`'s ``.requests``, a loopback server's bodies) and
fails on the first request that is not a strict extension of the one before it, naming the
request and the segment that broke (``"tools"``, ``"system"``, ``"message N"``): the same
segments, compared the same way, as the cache ledger's ``StepResult.cache.diverged_at``
(``helix_stream/models/_cache_segments.py``, the one owner of the rule). Cache markers are not
part of the comparison: they move from request to request by design.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..models._cache_segments import fingerprint, first_divergence

__all__ = ["assert_prefix_stable"]

_SHOWN = 160  # characters of a changed segment the message quotes


def _body(request: Any) -> Mapping[str, Any]:
    """A recorded request as a dict: a mapping, JSON bytes or text, or an object with a
    ``json()`` method (a recorded HTTP request)."""
    if isinstance(request, Mapping):
        return request
    if isinstance(request, (bytes, bytearray, str)):
        parsed = json.loads(request)
    elif callable(getattr(request, "json", None)):
        parsed = request.json()
    else:
        raise TypeError(
            f"assert_prefix_stable() takes request bodies, not {type(request).__name__}"
        )
    if not isinstance(parsed, Mapping):
        raise TypeError("assert_prefix_stable() takes request bodies that are JSON objects")
    return parsed


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or ():
        if isinstance(tool, Mapping):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
            names.append(str(name))
    return names


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _detail(segment: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What the message shows of the change: tool names, or the segment's text before and after."""
    if segment == "tools":
        return f"tools before: {_tool_names(before)}, after: {_tool_names(after)}"
    if segment == "system":
        return f"system before: {_shown(before.get('system'))}" if "system" in before else ""
    index = int(segment.removeprefix("message "))
    old, new = before.get("messages") or [], after.get("messages") or []
    was = _shown(old[index]) if index < len(old) else "(none)"
    now = _shown(new[index]) if index < len(new) else "(none: the request is shorter)"
    return f"before: {was}\n  after:  {now}"


def assert_prefix_stable(requests: Iterable[Any]) -> None:
    """Fail unless each request is a strict extension of the one before it.

    Each request's tools, system prompt and earlier messages must be those of the request
    before it (cache markers aside), so that the provider's prompt cache reads them back. The
    requests are compared in order, one conversation to one model: pass the bodies of one
    session's requests.

    Args:
        requests: Request bodies: dicts (``ScriptedModel.requests``), JSON bytes or text, or
            recorded requests with a ``json()`` method. The OpenAI, Anthropic, Bedrock and
            Gemini body formats are understood.

    Raises:
        AssertionError: naming the first request that broke the prefix (0-based, in the order
            given), the one before it, and the first segment that changed: ``"tools"`` (a
            description changed, a tool was added, removed or re-ordered), ``"system"``, or
            ``"message N"`` (``N`` the index in the request's ``messages``).

    Example::

        from helix_stream.testing import ScriptedModel, assert_prefix_stable

        model = ScriptedModel([{"text": "Hi!"}, {"text": "Sure."}])
        await executor.run(agent, "s1", "Hello").text()
        await executor.run(agent, "s1", "Again").text()
        assert_prefix_stable(model.requests)
    """
    previous: Mapping[str, Any] | None = None
    for number, request in enumerate(requests):
        body = _body(request)
        if previous is not None:
            segment = first_divergence(fingerprint(previous), fingerprint(body))
            if segment is not None:
                detail = _detail(segment, previous, body)
                raise AssertionError(
                    f"request {number} breaks the cached prefix of request {number - 1} at "
                    f"{segment!r}: every later request must repeat the earlier one's tools, "
                    f"system prompt and messages byte for byte"
                    + (f"\n  {detail}" if detail else "")
                )
        previous = body
