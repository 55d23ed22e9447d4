"""CPU per chunk of helix's serving layers alone, without a model, litellm or a socket.

Run: ``.venv/bin/python bench/bench_serving_layers.py [--chunks N] [--rounds R]``.

The end-to-end figure of ``bench_serving.py`` is dominated by litellm and the OpenAI SDK
(about 0.5 ms a chunk), and on a shared machine its noise is larger than one layer's cost. This
bench isolates the layers between the loop's chunks and the ASGI ``send``, so that each change
to them can be measured on its own. A source yields N text deltas, each after one event-loop
turn (as a network read would); each case is driven by a bare ASGI call whose ``send`` keeps
nothing. Cases, each on top of the previous one:

* ``mapper``: ``UIChunkMapper.handle`` per chunk, plus ``encode_sse``;
* ``to_ui_message_stream``: the UI stream generator;
* ``+ UIMessageStreamResponse``: the SSE response as ``to_sse_response()`` serves it;
* ``+ StreamRegistry.record``: the chat route's resumable stream (pump task, queue);
* ``+ RunningTurns.track``: the chat route's whole path — the stop route's registration of the
  turn, and the response's ``on_disconnect="continue"``.

CPU time (``time.process_time``), median of interleaved rounds, µs per chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from _common import interleaved, median

from helix_stream.chunks import Finish, FinishStep, Start, StartStep, TextDelta, TextEnd, TextStart


def make_source(chunks: int) -> Callable[[], AsyncIterator[Any]]:
    deltas = [TextDelta(id="t", delta=f"w{i} ") for i in range(chunks)]

    async def source() -> AsyncIterator[Any]:
        yield Start()
        yield StartStep(step_number=0)
        yield TextStart(id="t")
        for delta in deltas:
            await asyncio.sleep(0)  # one event-loop turn, as a network read costs
            yield delta
        yield TextEnd(id="t")
        yield FinishStep(step_number=0, finish_reason="stop")
        yield Finish(finish_reason="stop")

    return source


async def drive(app: Callable[..., Awaitable[None]]) -> int:
    """Call an ASGI app once; the number of body messages it sent."""
    sent = 0
    request_read = False
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal request_read
        if not request_read:
            request_read = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await never.wait()  # no disconnect
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        nonlocal sent
        sent += message["type"] == "http.response.body"

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [],
        "asgi": {"version": "3.0"},
    }
    await app(scope, receive, send)
    return sent


def cases(chunks: int) -> dict[str, Callable[[], Awaitable[Any]]]:
    from helix_stream.server import RunningTurns, StreamRegistry
    from helix_stream.transformers import UIMessageStreamResponse, encode_sse, to_ui_message_stream
    from helix_stream.transformers._mapper import UIChunkMapper

    source = make_source(chunks)

    async def mapper() -> None:
        m = UIChunkMapper(
            client_version=5, send_reasoning=True, send_start=True, send_finish=True,
            message_metadata=None, message_id=None, generate_message_id=None, on_error=None,
            continued_message=None, fold=None,
        )  # fmt: skip
        async for chunk in source():
            for out in m.handle(chunk):
                encode_sse(out).encode()

    async def ui_stream() -> None:
        async for out in to_ui_message_stream(source()):
            encode_sse(out).encode()

    async def response() -> None:
        await drive(UIMessageStreamResponse(to_ui_message_stream(source())))

    registry = StreamRegistry()

    async def recorded() -> None:
        ui = to_ui_message_stream(source())
        await drive(UIMessageStreamResponse(registry.record("s", ui)))

    turns = RunningTurns()

    async def tracked() -> None:
        ui = to_ui_message_stream(turns.track(turns.reserve("s"), source()))
        response = UIMessageStreamResponse(registry.record("s", ui), on_disconnect="continue")
        await drive(response)

    return {
        "mapper + encode_sse": mapper,
        "to_ui_message_stream + encode_sse": ui_stream,
        "+ UIMessageStreamResponse": response,
        "+ StreamRegistry.record": recorded,
        "+ RunningTurns.track": tracked,
    }


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    async def bare() -> None:
        async for _ in make_source(args.chunks)():
            pass

    todo = {"source alone": bare, **cases(args.chunks)}
    times = await interleaved(todo, args.rounds, clock=time.process_time)
    base = median(times["source alone"])
    print(f"{args.chunks} chunks, {args.rounds} interleaved rounds, CPU µs per chunk (median)")
    for name, values in times.items():
        per = median(values) / args.chunks * 1e6
        over = (median(values) - base) / args.chunks * 1e6
        extra = "" if name == "source alone" else f"   (+{over:5.1f} over the source)"
        print(f"  {name:36s} {per:6.1f}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
