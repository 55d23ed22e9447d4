"""Test an agent without a network or an API key: helix_stream.testing.

A ``ScriptedModel`` answers each model call with the next reply of a script, over real HTTP on
127.0.0.1 in the provider's wire format, so the agent runs exactly as it does in production;
``model.requests`` shows what the provider would have received. ``replay`` re-runs a stored
session against its own answers and reports where the agent now behaves differently.

Run it:

    python examples/testing_an_agent.py          # the checks, then "all checks passed"
    python examples/testing_an_agent.py --once   # the same (what the tests run)
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Sequence

import helix_stream as hs
from helix_stream.testing import ScriptedModel, replay


@hs.tool
def get_weather(city: str) -> dict[str, object]:
    """The current weather in a city."""
    return {"city": city, "forecast": "sunny", "temp_c": 21}


def weather_agent(model: str | hs.WrappedModel) -> hs.Agent:
    return hs.Agent(
        name="weather", system="Answer in one sentence.", model=model, tools=[get_weather]
    )


async def checks() -> list[str]:
    seen: list[str] = []
    # 1. The agent calls its tool and answers with what it returned.
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            {"text": "It is sunny in Paris, 21 °C."},
        ]
    )
    executor = hs.Executor()
    agent = weather_agent(model)
    answer = await executor.run(agent, "s1", "What is the weather in Paris?").text()
    assert answer == "It is sunny in Paris, 21 °C."
    tool_message = model.requests[1]["messages"][-1]  # what the provider got back from the tool
    assert json.loads(tool_message["content"])["forecast"] == "sunny"
    seen.append(f"answer: {answer}")

    # 2. A rate limit is retried, and the retry gets the next reply.
    flaky = ScriptedModel([{"error": 429}, {"text": "Back again."}], wire="anthropic")
    assert (await hs.generate_text(model=flaky, prompt="Hi")).text == "Back again."
    seen.append(f"after a 429: {len(flaky.requests)} requests")

    # 3. Replay the stored session against a changed tool: the difference is reported.
    @hs.tool(name="get_weather")
    def broken_weather(city: str) -> dict[str, object]:
        """The current weather in a city."""
        return {"city": city, "forecast": "unknown"}

    assert (await replay(executor, "s1", agent)).ok
    report = await replay(executor, "s1", dataclasses.replace(agent, tools=[broken_weather]))
    assert not report.ok and report.differences[0].what == "tool_result"
    seen.append(f"replay: {report.differences[0]}")
    return seen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="run the checks once (the default)")
    parser.parse_args(argv)
    for line in asyncio.run(checks()):
        print(line)
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
