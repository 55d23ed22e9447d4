"""Telemetry on OpenTelemetry (see ``TelemetrySettings``)."""

from __future__ import annotations

from ._recorder import NOOP_RECORDER, Recorder

__all__ = ["NOOP_RECORDER", "Recorder"]


def recorder_for(settings: object | None, **_: object) -> Recorder:
    """The recorder for these settings (placeholder until the OTel recorder lands)."""
    return NOOP_RECORDER
