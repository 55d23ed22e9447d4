"""One call's secret bookkeeping: every string its spans must not show, and the scrubbing.

What the filters keep out of the call's runtime context and tools contexts, plus the
credentials its requests carried, form the call's secret set. It is computed when first
needed and again only when the runtime context changes or a new credential is seen.
Recorded content (messages, tool arguments and results, row contents) and exception text
pass through :meth:`CallSecrets.scrub` before they reach a span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._filters import (
    context_attributes,
    credential_strings,
    input_messages,
    redact,
    secret_strings,
    to_json,
)
from ._semconv import system_parts
from ._settings import TelemetrySettings

__all__ = ["CallSecrets"]


class CallSecrets:
    """The strings one call's spans must not show, and the runtime context they come from."""

    def __init__(
        self,
        settings: TelemetrySettings,
        *,
        runtime_context: Mapping[str, Any],
        tools_context: Mapping[str, Any],
    ) -> None:
        self._settings = settings
        self.tools_include = settings.include_tools_context or {}
        self._runtime = runtime_context
        self._tools_context = tools_context
        self._credentials: set[str] = set()
        self._secrets: set[str] | None = None  # computed when first needed

    def set_runtime(self, runtime_context: Mapping[str, Any]) -> None:
        """Use ``runtime_context`` from now on (the secret set is recomputed if it changed)."""
        if runtime_context is not self._runtime:
            self._runtime = runtime_context
            self._secrets = None

    def runtime_attributes(self) -> dict[str, str | bool | int | float]:
        """The runtime context's entries the filter lets onto a span."""
        include = self._settings.include_runtime_context
        return context_attributes("helix.runtime_context.", self._runtime, include)

    def remember_credentials(self, params: Mapping[str, Any]) -> None:
        """Keep the credentials a request carries (``api_key`` and the like) out of spans."""
        found = credential_strings(params)
        if not found <= self._credentials:
            self._credentials |= found
            self._secrets = None

    def secret_set(self) -> set[str]:
        """Every string this call's filters keep out of its spans, plus its credentials."""
        if self._secrets is None:
            secrets = set(self._credentials)
            secrets |= secret_strings(self._runtime, self._settings.include_runtime_context)
            for name, entry in self._tools_context.items():
                secrets |= secret_strings(entry, self.tools_include.get(name))
            self._secrets = secrets
        return self._secrets

    def scrub(self, text: str) -> str:
        """``text`` with every secret of the call redacted."""
        secrets = self.secret_set()
        return redact(text, secrets) if secrets else text

    def content(self, value: Any) -> str:
        """``value`` as the JSON a content attribute holds, scrubbed."""
        return self.scrub(to_json(value))

    def input_content(self, messages: Any, system: Any) -> dict[str, str]:
        """The ``gen_ai.input.messages`` (and ``gen_ai.system_instructions``) attributes."""
        content = {"gen_ai.input.messages": self.content(input_messages(messages))}
        if system:
            content["gen_ai.system_instructions"] = self.content(system_parts(system))
        return content
