"""Gemini and Bedrock Converse stream bodies, one per shape their real servers send.

Each body is written here by hand to reproduce what the servers send (the field names, the
usage on every Gemini event, thought parts and signatures, grounding metadata, the Converse
events and their binary frames), with invented content. ``GEMINI`` and ``BEDROCK`` map a
readable id to the body; test_gemini_bedrock_paths.py replays each one.
"""

from __future__ import annotations

import json
from typing import Any

from tests.providers.bedrock_server import event_frame, frame

MODEL = "gemini-2.5-flash"


def gemini_event(
    *parts: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    """One ``GenerateContentResponse`` with one candidate."""
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate.update(extra.pop("candidate", {}))
    event: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        event["usageMetadata"] = usage
    event.update({"modelVersion": MODEL, "responseId": "resp-g1", **extra})
    return event


def usage(prompt: int, candidates: int | None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"promptTokenCount": prompt, **extra}
    if candidates is not None:
        out["candidatesTokenCount"] = candidates
    out["totalTokenCount"] = prompt + (candidates or 0) + extra.get("thoughtsTokenCount", 0)
    return out


def sse(*events: dict[str, Any]) -> bytes:
    """Gemini's framing: ``data:`` lines ending in CRLF, no ``[DONE]``."""
    return "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in events).encode()


def call(name: str, args: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if signature:
        part["thoughtSignature"] = signature
    return part


SAFETY = [{"category": c, "probability": "NEGLIGIBLE"} for c in
          ("HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_DANGEROUS_CONTENT")]  # fmt: skip
GROUNDING = {
    "webSearchQueries": ["oslo weather"],
    "searchEntryPoint": {"renderedContent": "<div>search</div>"},
    "groundingChunks": [
        {"web": {"uri": "https://example.org/oslo", "title": "example.org"}},
        {"web": {"uri": "https://example.net/norway", "title": "example.net"}},
    ],
    "groundingSupports": [
        {"segment": {"startIndex": 0, "endIndex": 11, "text": "It is cold."},
         "groundingChunkIndices": [0, 1]},
    ],
}  # fmt: skip

GEMINI: dict[str, bytes] = {
    # Gemini 2.5 with thinking: thought parts first, usage (with thoughtsTokenCount) on every
    # event, a thought signature on the first text part.
    "thoughts, then text with a signature": sse(
        gemini_event(
            {"text": "**Weighing it**\n\nThe user", "thought": True},
            usage=usage(9, None, thoughtsTokenCount=21),
        ),
        gemini_event(
            {"text": " greets me.", "thought": True}, usage=usage(9, None, thoughtsTokenCount=40)
        ),
        gemini_event(
            {"text": "Hello", "thoughtSignature": "c2lnbmF0dXJl"},
            usage=usage(9, 1, thoughtsTokenCount=40),
        ),
        gemini_event({"text": " there, héllo ✓"}, usage=usage(9, 4, thoughtsTokenCount=40)),
        gemini_event(
            {"text": "!"},
            finish="STOP",
            usage=usage(
                9,
                5,
                thoughtsTokenCount=40,
                promptTokensDetails=[{"modality": "TEXT", "tokenCount": 9}],
            ),
        ),
    ),
    "plain text, usage only at the end": sse(
        gemini_event({"text": "One "}),
        gemini_event({"text": "two "}),
        gemini_event({"text": "three."}, finish="STOP", usage=usage(4, 3)),
    ),
    "text in several parts of one event": sse(
        gemini_event({"text": "a"}, {"text": "b"}, {"text": "c", "thought": False}),
        gemini_event({"text": ""}, finish="STOP", usage=usage(4, 3)),
    ),
    # A function call whole in one part, with its thought signature; the finish reason in an
    # event of its own with an empty text part.
    "a function call with a signature, then the finish": sse(
        gemini_event(call("weather", {"city": "Oslo"}, "c2ln"), usage=usage(30, None)),
        gemini_event({"text": ""}, finish="STOP", usage=usage(30, 7)),
    ),
    "text, then two function calls in one event": sse(
        gemini_event({"text": "Looking both up."}, usage=usage(30, 4)),
        gemini_event(
            call("weather", {"city": "Oslo"}),
            call("time", {"tz": "UTC"}),
            finish="STOP",
            usage=usage(30, 20),
        ),
    ),
    # Google Search grounding: the metadata on the last event.
    "grounded answer with search sources": sse(
        gemini_event({"text": "It is cold."}, usage=usage(12, 4)),
        gemini_event(
            {"text": ""},
            finish="STOP",
            usage=usage(12, 4),
            candidate={"groundingMetadata": GROUNDING},
        ),
    ),
    # Older models: safety ratings on every event; the answer cut at the token limit.
    "safety ratings on every event, max tokens": sse(
        gemini_event({"text": "A long"}, candidate={"safetyRatings": SAFETY}),
        gemini_event(
            {"text": " answer"},
            finish="MAX_TOKENS",
            usage=usage(5, 2),
            candidate={"safetyRatings": SAFETY},
        ),
    ),
    "cached prompt tokens in the usage": sse(
        gemini_event(
            {"text": "Cached."}, finish="STOP", usage=usage(2000, 2, cachedContentTokenCount=1800)
        ),
    ),
    "a prompt blocked before any answer": sse(
        {
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": usage(7, None),
            "modelVersion": MODEL,
            "responseId": "resp-b",
        },
    ),
    "no finish reason before the end": sse(
        gemini_event({"text": "Cut "}, usage=usage(3, 1)),
        gemini_event({"text": "off"}, usage=usage(3, 2)),
    ),
    # One response's JSON cut across two events (a proxy that re-chunks the body): litellm's
    # iterator joins the pieces.
    "one JSON value cut across two events": (
        sse(gemini_event({"text": "Whole "}))
        + b"data: "
        + json.dumps(gemini_event({"text": "then joined"})).encode()[:25]
        + b"\r\n\r\ndata: "
        + json.dumps(gemini_event({"text": "then joined"})).encode()[25:]
        + b"\r\n\r\n"
        + sse(gemini_event({"text": "."}, finish="STOP", usage=usage(3, 4)))
    ),
    "an error event mid-stream": sse(
        gemini_event({"text": "Part"}),
        {"error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}},
    ),
}

# Gemini 3 with streamed function-call arguments: the arguments come as partial JSON-path
# values over several events. litellm 1.110 cannot read them (KeyError 'args').
PARTIAL_ARGS = sse(
    gemini_event({"functionCall": {"name": "weather", "willContinue": True, "partialArgs": [
        {"jsonPath": "$.city", "stringValue": "Os", "willContinue": True}]}}),
    gemini_event({"functionCall": {"willContinue": True, "partialArgs": [
        {"jsonPath": "$.city", "stringValue": "lo"}]}}),
    gemini_event({"functionCall": {}}, finish="STOP", usage=usage(30, 7)),
)  # fmt: skip


def converse(*events: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(event_frame(name, payload) for name, payload in events)


def _start(index: int, start: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "contentBlockStart", {"contentBlockIndex": index, "start": start}


def _delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    # Bedrock pads each event with a "p" field of random length (against traffic analysis).
    return "contentBlockDelta", {"contentBlockIndex": index, "delta": delta, "p": "abcdefgh"}


def _stop(index: int) -> tuple[str, dict[str, Any]]:
    return "contentBlockStop", {"contentBlockIndex": index}


def _end(reason: str, **used: int) -> list[tuple[str, dict[str, Any]]]:
    tokens = {"inputTokens": 10, "outputTokens": 20, **used}
    tokens["totalTokens"] = tokens["inputTokens"] + tokens["outputTokens"]
    return [
        ("messageStop", {"stopReason": reason}),
        ("metadata", {"usage": tokens, "metrics": {"latencyMs": 321}}),
    ]


_MESSAGE_START = ("messageStart", {"role": "assistant"})

BEDROCK: dict[str, bytes] = {
    "text with cache reads and writes": converse(
        _MESSAGE_START,
        _delta(0, {"text": "Hello"}),
        _delta(0, {"text": " there ✓"}),
        _stop(0),
        *_end("end_turn", cacheReadInputTokens=1200, cacheWriteInputTokens=300),
    ),
    # Claude thinking on Bedrock: reasoning text, its signature, then the answer. Bedrock does
    # not report reasoning tokens: litellm counts them from the reasoning text.
    "reasoning with a signature, then text": converse(
        _MESSAGE_START,
        _delta(0, {"reasoningContent": {"text": "The user says hi. "}}),
        _delta(0, {"reasoningContent": {"text": "I should greet them back politely."}}),
        _delta(0, {"reasoningContent": {"signature": "EqoBCkgIARABGAIiQL"}}),
        _stop(0),
        _delta(1, {"text": "Hi!"}),
        _stop(1),
        *_end("end_turn", outputTokens=60),
    ),
    "redacted reasoning, then text": converse(
        _MESSAGE_START,
        _delta(0, {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}),
        _stop(0),
        _delta(1, {"text": "Done."}),
        _stop(1),
        *_end("end_turn"),
    ),
    "text, then two tool calls, one without input": converse(
        _MESSAGE_START,
        _delta(0, {"text": "Checking."}),
        _stop(0),
        _start(1, {"toolUse": {"toolUseId": "tooluse_a", "name": "weather"}}),
        _delta(1, {"toolUse": {"input": '{"ci'}}),
        _delta(1, {"toolUse": {"input": 'ty": "Oslo"}'}}),
        _stop(1),
        _start(2, {"toolUse": {"toolUseId": "tooluse_b", "name": "now"}}),
        _delta(2, {"toolUse": {"input": ""}}),
        _stop(2),
        *_end("tool_use"),
    ),
    "max tokens": converse(
        _MESSAGE_START,
        _delta(0, {"text": "A long answer"}),
        _stop(0),
        *_end("max_tokens"),
    ),
    # An exception event inside the 200 stream, after some text.
    "a modelStreamErrorException after text": converse(
        _MESSAGE_START,
        _delta(0, {"text": "Partial"}),
    )
    + frame(
        {
            ":message-type": "exception",
            ":exception-type": "modelStreamErrorException",
            ":content-type": "application/json",
        },
        {"message": "The model stream failed.", "originalStatusCode": 500},
    ),
    "a throttlingException before any content": converse(_MESSAGE_START)
    + frame(
        {
            ":message-type": "exception",
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
        },
        {"message": "Too many requests, please wait before trying again."},
    ),
}
