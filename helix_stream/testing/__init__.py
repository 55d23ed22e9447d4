"""The test kit: models that answer from a script, and a replay of stored sessions.

Test an agent with no network and no API key, through the code paths it runs in production:
a :class:`ScriptedModel` or :class:`FunctionModel` serves a provider's wire format (OpenAI's or
Anthropic's) on 127.0.0.1, litellm sends it real HTTP requests, and ``.requests`` shows what
the provider would have received. :func:`replay` re-runs a stored session against its own
answers and reports what changed (README, "Testing your agent"); :func:`assert_prefix_stable`
fails a test whose requests break the provider's cached prefix.

Example::

    import helix_stream as hs
    from helix_stream.testing import ScriptedModel

    model = ScriptedModel([{"text": "Hello!"}])
    assert (await hs.generate_text(model=model, prompt="Hi")).text == "Hello!"
"""

from __future__ import annotations

from ._models import FunctionModel, ScriptedModel
from ._prefix import assert_prefix_stable
from ._replay import Difference, ReplayReport, replay

__all__ = [
    "Difference",
    "FunctionModel",
    "ReplayReport",
    "ScriptedModel",
    "assert_prefix_stable",
    "replay",
]
