"""The GenAI client metrics: token usage, operation duration, time to first chunk.

Histograms as the OpenTelemetry GenAI semantic conventions define them (names, units and the
advised bucket boundaries of ``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration``
and ``gen_ai.client.operation.time_to_first_chunk``). They are recorded per model call
(``gen_ai.operation.name`` ``chat``); the duration also for the whole call (``invoke_agent``),
whose tokens are not recorded again (they are the model calls' tokens: counting them twice
would double a sum over the metric).

Instruments are created once per meter provider (creating one per call would make the SDK
warn about duplicates and cost time on every call).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from opentelemetry import metrics
from opentelemetry.metrics import Histogram, MeterProvider

from ._filters import AttributeValue

__all__ = ["CallMeter", "Instruments", "call_meter", "instruments_for", "meters_nothing"]

_SCOPE = "helix_stream"
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"

# Advised bucket boundaries (semconv "gen_ai.client.token.usage" and "...operation.duration").
_TOKEN_BUCKETS = [4.0**i for i in range(14)]  # 1, 4, 16, ... 67108864
_SECONDS_BUCKETS = [0.01 * 2.0**i for i in range(14)]  # 0.01, 0.02, ... 81.92


@dataclass(frozen=True, slots=True)
class Instruments:
    token_usage: Histogram
    duration: Histogram
    time_to_first_chunk: Histogram

    def tokens(self, usage: Any, attrs: Mapping[str, AttributeValue]) -> None:
        """Record a model call's input and output tokens (``gen_ai.token.type``)."""
        for token_type, field in (("input", "input_tokens"), ("output", "output_tokens")):
            value = int(getattr(usage, field, 0) or 0)
            self.token_usage.record(value, {**attrs, "gen_ai.token.type": token_type})


_CACHE: WeakKeyDictionary[MeterProvider, Instruments] = WeakKeyDictionary()
_LOCK = threading.Lock()


def instruments_for(provider: MeterProvider | None) -> Instruments:
    """The instruments on ``provider`` (the global meter provider when ``None``)."""
    provider = provider or metrics.get_meter_provider()
    found = _CACHE.get(provider)
    if found is not None:
        return found
    with _LOCK:
        found = _CACHE.get(provider)
        if found is None:
            meter = provider.get_meter(_SCOPE, schema_url=_SCHEMA_URL)
            found = Instruments(
                token_usage=meter.create_histogram(
                    "gen_ai.client.token.usage",
                    unit="{token}",
                    description="Number of input and output tokens used.",
                    explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
                ),
                duration=meter.create_histogram(
                    "gen_ai.client.operation.duration",
                    unit="s",
                    description="GenAI operation duration.",
                    explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
                ),
                time_to_first_chunk=meter.create_histogram(
                    "gen_ai.client.operation.time_to_first_chunk",
                    unit="s",
                    description="Time to receive the first chunk of a streamed response.",
                    explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
                ),
            )
            _CACHE[provider] = found
    return found


def meters_nothing(provider: MeterProvider | None) -> bool:
    """True when no meter provider is configured (the global one is OpenTelemetry's no-op)."""
    if provider is not None:
        return False
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    return isinstance(
        metrics.get_meter_provider(), (metrics.NoOpMeterProvider, _ProxyMeterProvider)
    )


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's qualified class name (``cancelled`` for an abort), or
    the low-cardinality name an error gives itself in an ``error_type`` attribute (semconv
    names some: ``tool_error`` for an MCP tool's ``isError`` result)."""
    if isinstance(error, (asyncio.CancelledError, GeneratorExit)):
        return "cancelled"
    named = getattr(error, "error_type", None)
    if isinstance(named, str) and named:
        return named
    return class_name(error)


def class_name(error: BaseException) -> str:
    """The exception's qualified class name (``exception.type``)."""
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class CallMeter:
    """The metrics of one call: each model call (``chat``) and the whole call
    (``invoke_agent``), with the attributes semconv gives them."""

    __slots__ = ("_call", "_call_t0", "_instruments", "_step", "_step_t0")

    def __init__(self, instruments: Instruments) -> None:
        self._instruments = instruments
        self._call: dict[str, AttributeValue] | None = None
        self._call_t0 = 0.0
        self._step: dict[str, AttributeValue] | None = None
        self._step_t0 = 0.0

    def call_started(self, provider: str, request_model: str) -> None:
        self._call = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": request_model,
        }
        self._call_t0 = time.perf_counter()

    def step_started(self, attrs: Mapping[str, AttributeValue]) -> None:
        """A model call starts; ``attrs``: operation, provider, request model, server."""
        self._step = dict(attrs)
        self._step_t0 = time.perf_counter()

    def first_chunk(self, elapsed: float) -> None:
        """The first content-bearing chunk came ``elapsed`` seconds into the model call."""
        if self._step is not None:
            self._instruments.time_to_first_chunk.record(elapsed, self._step)

    def step_finished(self, usage: Any, answered: Mapping[str, AttributeValue]) -> None:
        """The model call ended: its tokens and duration, attributed to who answered."""
        attrs = self._step
        if attrs is None:
            return
        for key in ("gen_ai.provider.name", "gen_ai.response.model", "server.address"):
            if key in answered:
                attrs[key] = answered[key]
        if "server.port" in answered:
            attrs["server.port"] = answered["server.port"]
        self._instruments.tokens(usage, attrs)
        self._instruments.duration.record(time.perf_counter() - self._step_t0, attrs)
        self._step = None

    def call_finished(self, response_model: str | None) -> None:
        if self._call is None:
            return
        if response_model:
            self._call["gen_ai.response.model"] = response_model
        self._instruments.duration.record(time.perf_counter() - self._call_t0, self._call)
        self._call = None

    def failed(self, error: BaseException) -> None:
        """The call ended with ``error``: the open model call and the call, with error.type."""
        kind = error_type(error)
        if self._step is not None:
            attrs = {**self._step, "error.type": kind}
            self._instruments.duration.record(time.perf_counter() - self._step_t0, attrs)
            self._step = None
        if self._call is not None:
            attrs = {**self._call, "error.type": kind}
            self._instruments.duration.record(time.perf_counter() - self._call_t0, attrs)
            self._call = None


class _NoMeter(CallMeter):
    """The meter of a call whose metrics go nowhere: every moment is a no-op."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def call_started(self, provider: str, request_model: str) -> None:
        pass

    def step_started(self, attrs: Mapping[str, AttributeValue]) -> None:
        pass

    def first_chunk(self, elapsed: float) -> None:
        pass

    def step_finished(self, usage: Any, answered: Mapping[str, AttributeValue]) -> None:
        pass

    def call_finished(self, response_model: str | None) -> None:
        pass

    def failed(self, error: BaseException) -> None:
        pass


_NO_METER = _NoMeter()


def call_meter(provider: MeterProvider | None) -> CallMeter:
    """One call's meter; one that does nothing (and builds nothing) when no meter provider is
    configured."""
    if meters_nothing(provider):
        return _NO_METER
    return CallMeter(instruments_for(provider))
