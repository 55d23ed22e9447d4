"""OpenAI-compatible stream bodies, one per quirk real servers are known to send.

Each body is written here by hand to reproduce one server's habits (the field names, nulls,
extra objects, framing and ordering it uses), with invented content. ``QUIRKS`` maps a
readable id to the body; test_stream_quirks.py replays each one.
"""

from __future__ import annotations

import json
from typing import Any


def chunk(
    delta: dict[str, Any] | None = None,
    finish: Any = None,
    *,
    choice: dict[str, Any] | None = None,
    no_finish_key: bool = False,
    **top: Any,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice (``delta=None``: no choices at all)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-q",
        "object": "chat.completion.chunk",
        "created": 1760000000,
        "model": "m",
    }
    if delta is not None:
        one: dict[str, Any] = {"index": 0, "delta": delta, **(choice or {})}
        if not no_finish_key:
            one["finish_reason"] = finish
        body["choices"] = [one]
    else:
        body["choices"] = []
    body.update(top)
    return body


def usage(prompt: int, completion: int, **extra: Any) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion, **extra}  # fmt: skip


def sse(*events: Any, done: bool = True, prefix: str = "data: ", end: str = "\n") -> bytes:
    """Events framed as server-sent events (a str event is written as it is)."""
    out = []
    for event in events:
        text = event if isinstance(event, str) else prefix + json.dumps(event)
        out.append(text + end + end)
    if done:
        out.append(prefix + "[DONE]" + end + end)
    return "".join(out).encode()


def call(index: Any, arguments: Any = None, *, id: Any = None, name: Any = None, **kw: Any) -> Any:
    fragment: dict[str, Any] = {**({} if index is None else {"index": index}), **kw}
    if id is not None:
        fragment["id"] = id
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    fragment["function"] = function
    return fragment


def _text_pieces(*texts: str, **extra: Any) -> list[dict[str, Any]]:
    return [chunk({"content": t, **extra}) for t in texts]


ROLE = chunk({"role": "assistant", "content": ""})
ERROR_EVENT = 'event: error\ndata: {"error": {"message": "Tool choice is required", "type": "invalid_request_error"}}'

QUIRKS: dict[str, bytes] = {
    # OpenAI: the first tool delta has id, name and "" arguments beside content/refusal null;
    # the arguments come in pieces with only an index; logprobs null and extra fields.
    "tool call, empty first arguments, extra fields": sse(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [call(0, "", id="call_a", name="capital", type="function")],
            },
            choice={"logprobs": None},
            service_tier="default",
            obfuscation="x1",
        ),
        *[
            chunk({"tool_calls": [call(0, p)]}, choice={"logprobs": None}, obfuscation="y")
            for p in ('{"', "country", '":"', "UK", '"}')
        ],
        chunk({}, "tool_calls", choice={"logprobs": None}),
        chunk(None, usage=usage(53, 15, prompt_tokens_details={"cached_tokens": 0})),
    ),
    # OpenAI with moderation: a chunk after the usage chunk, with usage null.
    "a chunk after the usage chunk": sse(
        ROLE,
        *_text_pieces("Par", "is."),
        chunk({}, "stop", system_fingerprint=None),
        chunk(None, usage=usage(13, 11)),
        chunk(None, usage=None, moderation={"flagged": False, "categories": {"hate": False}}),
    ),
    # OpenAI before include_usage: two parallel calls one after the other, escaped quotes.
    "two tool calls, no usage": sse(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call(0, "", id="call_1", name="search", type="function")],
            }
        ),
        *[chunk({"tool_calls": [call(0, p)]}) for p in ('{"q', 'uery": "a \\"b', '\\""}')],
        chunk({"tool_calls": [call(1, "", id="call_2", name="search", type="function")]}),
        *[chunk({"tool_calls": [call(1, p)]}) for p in ('{"query"', ': "c"}')],
        chunk({}, "tool_calls"),
    ),
    # A Go proxy: `data:` without a space, `data:[DONE]`, no usage.
    "data without a space, no usage": sse(
        ROLE, *_text_pieces("Hi! ", "How can I help?"), chunk({}, "stop"), prefix="data:"
    ),
    # Azure's model router: a first chunk with no choices and empty id/model; filter results.
    "azure prompt filter results": sse(
        {
            "id": "",
            "object": "",
            "created": 0,
            "model": "",
            "choices": [],
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
        },
        *[
            chunk({"content": t}, choice={"content_filter_results": {"hate": {"filtered": False}}})
            for t in ("Capital ", "of Denmark.")
        ],
        chunk({}, "stop", choice={"content_filter_results": {}}),
        chunk(None, usage=usage(15, 78, completion_tokens_details={"reasoning_tokens": 64})),
    ),
    # SGLang-style (Azure AI Foundry): nulls in every delta, matched_stop, odd usage.
    "nulls in every delta": sse(
        *[
            chunk({"role": None, "content": None, "reasoning_content": r, "tool_calls": None})
            for r in ("We think", " about it.")
        ],
        *[
            chunk({"role": None, "content": t, "reasoning_content": None, "tool_calls": None})
            for t in ("An ", "answer.")
        ],
        chunk(
            {"role": None, "content": None, "reasoning_content": None, "tool_calls": None},
            "stop",
            choice={"matched_stop": 1},
            usage={**usage(19, 40), "prompt_tokens_details": None, "reasoning_tokens": 0},
        ),
    ),
    # DeepSeek: reasoning_content then content; prompt_cache_hit/miss counters.
    "reasoning then text, cache hit counters": sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        *[chunk({"content": None, "reasoning_content": r}) for r in ("Hmm, ", "a greeting.")],
        *_text_pieces("Hello ", "there! 😊"),
        chunk(
            {"content": ""},
            "stop",
            usage=usage(
                6,
                21,
                prompt_cache_hit_tokens=0,
                prompt_cache_miss_tokens=6,
                completion_tokens_details={"reasoning_tokens": 8},
            ),
        ),
    ),
    # DeepSeek: reasoning then a tool call in many pieces; usage on the finish chunk.
    "reasoning then a tool call, usage on the finish chunk": sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": "Use the tool."}),
        chunk({"tool_calls": [call(0, "", id="call_w", name="weather", type="function")]}),
        *[chunk({"tool_calls": [call(0, p)]}) for p in ('{"loc', 'ation": "SF"', "}")],
        chunk({}, "tool_calls", usage=usage(339, 83, prompt_tokens_details={"cached_tokens": 320})),
    ),
    # Groq: `reasoning` (not reasoning_content) with a channel; the whole call in one chunk;
    # usage both in x_groq and at the top level of the finish chunk.
    "groq reasoning field, whole call in one chunk": sse(
        chunk({"role": "assistant", "content": None}, x_groq={"id": "req_1"}),
        *[chunk({"reasoning": r, "channel": "analysis"}) for r in ("Call it ", "with a name.")],
        chunk(
            {"tool_calls": [call(0, '{"name":"example"}', id="fc_1", name="get", type="function")]}
        ),
        chunk(
            {},
            "tool_calls",
            x_groq={"id": "req_1", "usage": usage(304, 49)},
            usage={**usage(304, 49), "queue_time": 0.1, "prompt_time": 0.02},
        ),
    ),
    # Groq: an error event inside a 200 stream, after reasoning; no [DONE].
    "an error event after reasoning": sse(
        chunk({"role": "assistant", "content": None}),
        chunk({"reasoning": "Thinking"}),
        ERROR_EVENT,
        done=False,
    ),
    # Groq: text, then an error event; no [DONE].
    "an error event after text": sse(ROLE, *_text_pieces("Some ", "text"), ERROR_EVENT, done=False),
    # OpenRouter → Minimax: processing comments, reasoning_details, "length" twice, then an error
    # object beside choices and usage.
    "length twice, then an error object": sse(
        ": OPENROUTER PROCESSING",
        ": OPENROUTER PROCESSING",
        chunk(
            {
                "role": "assistant",
                "content": "",
                "reasoning": "Long",
                "reasoning_details": [{"type": "reasoning.text", "text": "Long"}],
            }
        ),
        chunk({"content": "", "reasoning": None}, "length"),
        chunk({"content": "", "reasoning": None}, "length"),
        chunk(
            {"content": ""},
            "error",
            error={"message": "Token limit reached", "code": 502},
            usage=usage(10, 100),
        ),
    ),
    # OpenRouter → Claude: reasoning_details with signatures; the usage chunk after the finish
    # chunk has finish_reason null and cost fields.
    "usage after finish with cost": sse(
        ": OPENROUTER PROCESSING",
        chunk(
            {
                "role": "assistant",
                "content": "",
                "reasoning": "Simple sum.",
                "reasoning_details": [
                    {"type": "reasoning.text", "text": "Simple sum.", "signature": "s"}
                ],
            }
        ),
        *_text_pieces("2 + 2 ", "= 4"),
        chunk({"content": ""}, "stop"),
        chunk({"content": ""}, None, usage={**usage(43, 36), "cost": 0.0006, "is_byok": False}),
    ),
    # OpenRouter web search: url_citation annotations on deltas.
    "url citation annotations": sse(
        chunk({"role": "assistant", "content": "The URL is "}),
        chunk(
            {
                "content": "here",
                "annotations": [
                    {
                        "type": "url_citation",
                        "url_citation": {
                            "url": "https://example.org/repo",
                            "title": "Repo",
                            "content": "page text",
                            "start_index": 0,
                            "end_index": 4,
                        },
                    }
                ],
            }
        ),
        chunk({"content": ""}, "stop"),
        chunk(None, usage={**usage(2317, 53), "cost": 0.01, "cost_details": {"x": 1}}),
    ),
    # OpenRouter → Claude (Bedrock): text in the first chunk; cache_write_tokens and video tokens.
    "cache write tokens, text in the first chunk": sse(
        chunk({"role": "assistant", "content": "Hello!"}),
        chunk({"content": ""}, "stop"),
        chunk(
            None,
            usage=usage(
                254,
                5,
                prompt_tokens_details={
                    "cached_tokens": 0,
                    "cache_write_tokens": 240,
                    "video_tokens": 0,
                },
                cost=0.001,
            ),
        ),
    ),
    # Mistral (magistral): thinking as a content list of blocks, then string content.
    "content list: thinking blocks, then text": sse(
        ROLE,
        chunk({"content": ""}),
        *[
            chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": t}]}]})
            for t in ("Okay", ", the user asks.")
        ],
        *_text_pieces("To cross, ", "look both ways."),
        chunk({"content": ""}, "stop", usage=usage(10, 40)),
    ),
    # Mistral (magistral): thinking and the answer both as content lists.
    "content list: thinking and text blocks": sse(
        chunk(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "The user asks"}]}
                ],
            }
        ),
        chunk(
            {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": " for 2+2."}]}]}
        ),
        chunk({"content": [{"type": "text", "text": "2 + 2 = 4"}]}),
        chunk({"content": ""}, "stop", usage=usage(10, 46)),
    ),
    # Mistral: a tool call without index or type; the call, finish and usage in one chunk.
    "tool call without index, all in one chunk": sse(
        ROLE,
        chunk(
            {
                "tool_calls": [
                    {
                        "id": "Abc123XyZ",
                        "function": {"name": "weather", "arguments": '{"location": "SF"}'},
                    }
                ]
            },
            "tool_calls",
            usage=usage(124, 22),
        ),
    ),
    # Mistral (GLM): a continuation fragment with "name": "" and no id; an index in the delta.
    "continuation with an empty name": sse(
        ROLE,
        chunk(
            {
                "index": 0,
                "tool_calls": [call(0, '{"query": ', id="c1", name="webSearch", type="function")],
            }
        ),
        chunk({"index": 0, "tool_calls": [call(0, '"Berlin"}', name="")]}),
        chunk(
            {"content": ""},
            "tool_calls",
            usage=usage(171, 14, prompt_tokens_details={"cached_tokens": 128}),
        ),
    ),
    # xAI: chunks without a finish_reason key; a total that counts reasoning outside completion.
    "no finish_reason key; a total beyond prompt + completion": sse(
        chunk({"role": "assistant", "reasoning_content": "First, "}, no_finish_key=True),
        chunk({"reasoning_content": "the user is"}, no_finish_key=True),
        chunk(
            {
                "tool_calls": [
                    call(0, '{"location":"SF"}', id="call_x", name="weather", type="function")
                ]
            },
            no_finish_key=True,
        ),
        chunk(
            {},
            "tool_calls",
            usage={
                **usage(291, 26),
                "total_tokens": 513,
                "completion_tokens_details": {"reasoning_tokens": 196},
                "num_sources_used": 0,
            },
        ),
    ),
    # Perplexity: usage and citations on every chunk, growing; role repeated; an odd last object.
    "usage and citations on every chunk": sse(
        *[
            chunk(
                {"role": "assistant", "content": t},
                no_finish_key=True,
                citations=["https://a.example/", "https://b.example/"],
                usage=usage(10, n),
            )
            for n, t in ((1, "The population "), (2, "is large."))
        ],
        {
            **chunk(
                {"role": "assistant", "content": ""},
                "stop",
                citations=["https://a.example/"],
                usage=usage(10, 3),
            ),
            "object": "chat.completion.done",
        },
    ),
    # Alibaba (DashScope): continuation fragments with "id": ""; a trailing empty fragment.
    "continuations with an empty id, a trailing empty fragment": sse(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call(0, '{"loc', id="call_q", name="weather", type="function")],
            }
        ),
        chunk({"tool_calls": [call(0, 'ation": "SF"}', id="", type="function")]}),
        chunk({"tool_calls": [call(0, "", id="", type="function")]}, no_finish_key=True),
        chunk({}, "tool_calls"),
        chunk(None, usage=usage(295, 22)),
    ),
    # vLLM with continuous usage stats: usage on every chunk; stop_reason on the finish chunk.
    "continuous usage, stop_reason": sse(
        *[chunk({"content": t}, usage=usage(46, n)) for n, t in ((1, "Hello "), (2, "Sam."))],
        chunk({"content": ""}, "stop", choice={"stop_reason": None}, usage=usage(46, 3)),
        chunk(None, usage=usage(46, 3)),
    ),
    # vLLM (Qwen tool parser): model ""; the first fragment has no arguments key; no usage.
    "name-only first fragment, no usage": sse(
        {**chunk({"role": "assistant", "content": ""}), "model": ""},
        {
            **chunk(
                {"tool_calls": [call(0, None, id="chatcmpl-tool-1", name="run", type="function")]}
            ),
            "model": "",
        },
        *[{**chunk({"tool_calls": [call(0, p)]}), "model": ""} for p in ('{"command": ', '"ls"}')],
        {**chunk({"content": ""}, "tool_calls", choice={"stop_reason": None}), "model": ""},
    ),
    # Ollama: two complete calls, content "" beside them; finish in its own chunk; no usage.
    "two complete calls beside empty content, no usage": sse(
        chunk(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    call(0, '{"command":"ls"}', id="call_o1", name="run", type="function")
                ],
            }
        ),
        chunk(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    call(1, '{"command":"pwd"}', id="call_o2", name="run", type="function")
                ],
            }
        ),
        chunk({"role": "assistant", "content": ""}, "tool_calls"),
    ),
    # Snowflake: never a finish_reason; usage mid-stream and at the end; refusal "".
    "never a finish reason": sse(
        chunk(
            {"content": "Hi", "refusal": ""},
            no_finish_key=True,
            id="",
            created=0,
            choice={"logprobs": {"content": None}},
        ),
        chunk(None, usage=usage(12, 1)),
        chunk({"content": " there", "refusal": ""}, no_finish_key=True, id=""),
        chunk(None, usage=usage(12, 3)),
    ),
    # Snowflake (thinking): reasoning only in reasoning_details; no finish_reason.
    "reasoning only in reasoning_details, no finish": sse(
        chunk(
            {"reasoning_details": [{"type": "reasoning.text", "text": "Hmm"}]}, no_finish_key=True
        ),
        chunk({"content": "4"}, no_finish_key=True),
    ),
    # Z.ai: no finish_reason key until the last chunk, which carries usage.
    "finish and usage only on the last chunk": sse(
        *[
            chunk({"role": "assistant", "reasoning_content": r}, no_finish_key=True)
            for r in ("1. ", "Add.")
        ],
        chunk({"role": "assistant", "content": "4"}, no_finish_key=True),
        chunk(
            {"role": "assistant", "content": ""},
            "stop",
            usage=usage(13, 20, completion_tokens_details={"reasoning_tokens": 18}),
        ),
    ),
    # SambaNova: JSON with spaces, timing fields in the usage chunk, no finish reason anywhere.
    "json with spaces, no finish reason": (
        b'data: {"id": "s1", "object": "chat.completion.chunk", "created": 1, "model": "llama", '
        b'"choices": [{"index": 0, "delta": {"content": "I am a bot"}, "logprobs": null}]}\n\n'
        b'data: {"id": "s1", "object": "chat.completion.chunk", "created": 1, "model": "llama", '
        b'"choices": [], "usage": {"prompt_tokens": 21, "completion_tokens": 4, '
        b'"total_tokens": 25, "is_last_response": true, "time_to_first_token": 0.1}}\n\n'
        b"data: [DONE]\n\n"
    ),
    # Proton Lumo: `data:` with and without a space; no id, model or created; role null.
    "mixed data prefixes, no id or model": (
        b'data:{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":null,'
        b'"content":"Hel"},"finish_reason":null}]}\n\n'
        b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},'
        b'"finish_reason":null}]}\n\n'
        b'data:{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
        b'"finish_reason":"stop"}],"usage":{"prompt_tokens":77,"completion_tokens":7,"total_tokens":84}}\n\n'
        b"data:[DONE]\n\n"
    ),
    # No recording shows these; each is what the provider's documentation describes.
    "CRLF line endings": sse(
        ROLE,
        *_text_pieces("line ", "ends"),
        chunk({}, "stop"),
        chunk(None, usage=usage(3, 2)),
        end="\r\n",
    ),
    "a refusal delta": sse(
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        *[chunk({"refusal": t}) for t in ("I can't ", "help with that.")],
        chunk({}, "stop"),
        chunk(None, usage=usage(9, 6)),
    ),
    "an azure content_filter finish": sse(
        ROLE,
        chunk({"content": "Here is "}),
        chunk(
            {},
            "content_filter",
            choice={
                "content_filter_results": {"violence": {"filtered": True, "severity": "medium"}}
            },
        ),
        chunk(None, usage=usage(20, 3)),
    ),
    "interleaved parallel tool-call fragments": sse(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    call(0, "", id="call_p0", name="weather", type="function"),
                    call(1, "", id="call_p1", name="time", type="function"),
                ],
            }
        ),
        chunk({"tool_calls": [call(1, '{"tz": '), call(0, '{"city": ')]}),
        chunk({"tool_calls": [call(0, '"Oslo"}')]}),
        chunk({"tool_calls": [call(1, '"UTC"}')]}),
        chunk({}, "tool_calls"),
        chunk(None, usage=usage(30, 20)),
    ),
    "logprobs on every chunk": sse(
        *[
            chunk(
                {"content": t},
                choice={
                    "logprobs": {
                        "content": [
                            {
                                "token": t,
                                "logprob": -0.1,
                                "bytes": list(t.encode()),
                                "top_logprobs": [],
                            }
                        ]
                    }
                },
            )
            for t in ("Yes", ".")
        ],
        chunk({}, "stop", choice={"logprobs": None}),
        chunk(None, usage=usage(4, 2)),
    ),
    "text then a tool call, no usage chunk": sse(
        ROLE,
        *_text_pieces("Let me look ", "that up."),
        chunk({"tool_calls": [call(0, '{"q": "x"}', id="call_t", name="lookup", type="function")]}),
        chunk({}, "tool_calls"),
    ),
}
