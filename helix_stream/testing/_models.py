"""Models for tests: answers from a script or a function, over real HTTP, with no network.

This module owns :class:`ScriptedModel` and :class:`FunctionModel`. Each is a
:class:`~helix_stream.WrappedModel` (so it goes wherever a model does: ``stream_text``,
``Agent``, the chat server, ``wrap_model``) pointing litellm at a server on 127.0.0.1
(:mod:`._server`) that speaks the chosen provider's wire format. litellm builds, sends and reads
every request as it would against the provider; ``.requests`` holds the bodies the server got.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..middleware import WrappedModel, default_settings
from ._replies import Reply, parse_reply
from ._server import ScriptServer
from ._wire import Wire

__all__ = ["FunctionModel", "ScriptedModel"]

# What litellm is told: a model name its map knows (for defaults such as Anthropic's
# max_tokens), the server's address and a key (litellm refuses a call without one).
_ROUTES: dict[str, tuple[str, str]] = {
    "openai": ("openai/gpt-4o-mini", "/v1"),
    "anthropic": ("anthropic/claude-sonnet-4-5", ""),
}


def _set(model: WrappedModel, **values: Any) -> None:
    for name, value in values.items():
        object.__setattr__(model, name, value)


class FunctionModel(WrappedModel):
    """A model whose every reply is computed by ``fn`` from the request body.

    ``fn(request)`` gets the body as the provider's server received it (a dict: ``messages``,
    ``tools``, ``model``, ...) and returns a reply dict, as :class:`ScriptedModel` takes them.

    Args:
        fn: The function (sync).
        wire: The provider's wire format: ``"openai"`` (chat completions) or ``"anthropic"``
            (Messages).

    Example::

        from helix_stream.testing import FunctionModel

        echo = FunctionModel(lambda request: {"text": request["messages"][-1]["content"]})
        assert (await hs.generate_text(model=echo, prompt="hi")).text == "hi"
    """

    # Set through object.__setattr__ (see _set); declared for type checkers.
    wire: Wire
    _fn: Callable[[dict[str, Any]], Mapping[str, Any]]
    _calls: int
    _count: threading.Lock
    _server: ScriptServer

    def __init__(
        self, fn: Callable[[dict[str, Any]], Mapping[str, Any]], *, wire: Wire = "openai"
    ) -> None:
        if wire not in _ROUTES:
            raise ValueError(f"wire must be 'openai' or 'anthropic', not {wire!r}")
        # WrappedModel is a frozen dataclass: its __setattr__ refuses, object's does not.
        _set(self, _fn=fn, _calls=0, _count=threading.Lock(), wire=wire)
        _set(self, _server=ScriptServer(wire, self._reply_for))
        name, path = _ROUTES[wire]
        settings = default_settings(api_base=self._server.origin + path, api_key="sk-scripted")
        super().__init__(name, (settings,))

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The request bodies the server received, in order."""
        return list(self._server.requests)

    def close(self) -> None:
        """Stop the server (it is a daemon thread: a test need not)."""
        self._server.close()

    def _reply_for(self, body: dict[str, Any]) -> Reply | str:
        with self._count:
            number = self._calls
            _set(self, _calls=number + 1)
        try:
            return self._answer(body, number)
        except Exception as exc:  # the test's function failed: the call fails, saying why
            return f"{type(self).__name__} reply {number} failed: {type(exc).__name__}: {exc}"

    def _answer(self, body: dict[str, Any], number: int) -> Reply:
        return parse_reply(self._fn(body), number=number)


class ScriptedModel(FunctionModel):
    """A model that answers each call with the next reply of a script.

    Each entry of ``replies`` is one model call's answer, a dict:

    - ``{"text": "..."}``, ``{"reasoning": "...", "text": "..."}``;
    - ``{"tool_calls": [{"name": "...", "arguments": {...}}]}`` (with ``"text"`` too, if wanted;
      an ``"id"`` per call is optional);
    - ``{"usage": {"input_tokens": n, "output_tokens": m, "cached_input_tokens": k}}`` beside
      any of them (default 10 and 5);
    - ``{"error": 429}``: that HTTP status, with the provider's error body (the loop's
      retries apply: a retry takes the next reply);
    - ``{"stall": seconds}`` beside an answer: silence after the stream opens;
    - ``{"cut_after": n}`` beside an answer: the body ends after ``n`` events, unfinished.

    A call without ``stream`` gets the reply as one JSON response. A call past the end of the
    script fails with a 400 that says so.

    Args:
        replies: The script.
        wire: ``"openai"`` or ``"anthropic"``: the wire format the server speaks and litellm
            reads.

    Example::

        from helix_stream.testing import ScriptedModel

        model = ScriptedModel([
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            {"text": "Sunny in Paris."},
        ])
        result = await hs.generate_text(model=model, prompt="Weather?", tools=[get_weather])
        assert result.text == "Sunny in Paris."
        assert model.requests[1]["messages"][-1]["role"] == "tool"
    """

    _script: list[Reply]

    def __init__(self, replies: Sequence[Mapping[str, Any]], *, wire: Wire = "openai") -> None:
        # Checked now, not at the call that reaches a bad entry.
        _set(self, _script=[parse_reply(r, number=i) for i, r in enumerate(replies)])
        super().__init__(lambda body: {}, wire=wire)

    def _answer(self, body: dict[str, Any], number: int) -> Reply:
        if number >= len(self._script):
            raise LookupError(
                f"the script has {len(self._script)} replies; this is call {number + 1}"
            )
        return self._script[number]
