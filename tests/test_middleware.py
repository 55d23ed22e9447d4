"""Model middleware: order, wrap_model, the wrap_acompletion drop-in, shipped middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import helix_stream as hs
from tests.loopback import LoopbackServer, text


class Recording(hs.ModelMiddleware):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def transform_params(self, params: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        self.log.append(f"{self.name}.transform")
        return {**params, "metadata": {**params.get("metadata", {}), self.name: True}}

    async def wrap_stream(
        self, *, do_generate: Any, do_stream: Any, params: dict[str, Any]
    ) -> AsyncIterator[Any]:
        self.log.append(f"{self.name}.stream>")
        inner = await do_stream(params)
        self.log.append(f"<{self.name}.stream")
        return inner

    async def wrap_generate(
        self, *, do_generate: Any, do_stream: Any, params: dict[str, Any]
    ) -> Any:
        self.log.append(f"{self.name}.generate>")
        out = await do_generate(params)
        self.log.append(f"<{self.name}.generate")
        return out


async def test_first_middleware_is_outermost(loopback: LoopbackServer) -> None:
    log: list[str] = []
    model = hs.wrap_model(loopback.llm()["model"], [Recording("a", log), Recording("b", log)])
    loopback.script(text("ok"))
    out = await hs.generate_text(model=model, api_base=loopback.api_base, api_key="k", prompt="x")
    assert out.text == "ok"
    assert log == ["a.transform", "b.transform", "a.stream>", "b.stream>", "<b.stream", "<a.stream"]


async def test_wrapping_a_wrapped_model_puts_the_new_middleware_outside(
    loopback: LoopbackServer,
) -> None:
    log: list[str] = []
    inner = hs.wrap_model("openai/loopback", [Recording("inner", log)])
    outer = hs.wrap_model(inner, [Recording("outer", log)])
    loopback.script(text("ok"))
    await hs.generate_text(model=outer, api_base=loopback.api_base, api_key="k", prompt="x")
    assert log[:2] == ["outer.transform", "inner.transform"]


async def test_default_settings_lose_to_explicit_params(loopback: LoopbackServer) -> None:
    model = hs.wrap_model("openai/loopback", [hs.default_settings(temperature=0.2, max_tokens=50)])
    loopback.script(text("ok"), text("ok"))
    await hs.generate_text(model=model, api_base=loopback.api_base, api_key="k", prompt="x")
    await hs.generate_text(
        model=model, api_base=loopback.api_base, api_key="k", prompt="x", temperature=0.9
    )
    first, second = loopback.bodies()
    assert (first["temperature"], first["max_tokens"]) == (0.2, 50)
    assert (second["temperature"], second["max_tokens"]) == (0.9, 50)


async def test_wrap_acompletion_is_a_drop_in_for_streaming_and_not(
    loopback: LoopbackServer,
) -> None:
    import litellm

    log: list[str] = []
    acompletion = hs.wrap_acompletion(
        litellm.acompletion, [Recording("a", log), hs.default_settings(temperature=0.4)]
    )
    loopback.script(text("streamed", pieces=2), text("whole"))
    stream = await acompletion(
        model="openai/loopback",
        messages=[{"role": "user", "content": "x"}],
        api_base=loopback.api_base,
        api_key="k",
        stream=True,
    )
    parts = [
        ch.choices[0].delta.content
        async for ch in stream
        if ch.choices and ch.choices[0].delta.content
    ]
    response = await acompletion(
        "openai/loopback",
        [{"role": "user", "content": "x"}],
        api_base=loopback.api_base,
        api_key="k",
    )
    assert "".join(parts) == "streamed"
    assert response.choices[0].message.content == "whole"
    assert log == [
        "a.transform",
        "a.stream>",
        "<a.stream",
        "a.transform",
        "a.generate>",
        "<a.generate",
    ]
    assert [b["temperature"] for b in loopback.bodies()] == [0.4, 0.4]
    assert [b.get("stream", False) for b in loopback.bodies()] == [True, False]


async def test_simulate_streaming_makes_one_non_streaming_call() -> None:
    model = hs.wrap_model("helix/demo", [hs.simulate_streaming()])
    result = hs.stream_text(model=model, prompt="hello there")
    chunks = [ch async for ch in result]
    assert await result.text() == "You said: hello there"
    assert [ch.type for ch in chunks] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
