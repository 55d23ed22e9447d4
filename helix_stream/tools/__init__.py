"""Tools: ``tool()`` / :class:`Tool`, the per-call :class:`ToolContext`, context_schema resolution.

A tool's input is validated against its ``input_schema`` (a pydantic model, or one made from a
JSON schema) before ``execute`` runs. A tool with a ``context_schema`` receives in
``ctx.context`` only its own entry of ``tools_context``, validated and frozen: a tool
never sees the runtime context or another tool's context.

A tool with ``auth=`` (a strategy from :mod:`helix_stream.auth`) gets its token through
``await ctx.get_token()``; the loop gives its context the step's token cache. The context
itself (:class:`ToolContext`) is defined in ``helix_stream/_tool_context.py``, below the
token cache and the sandbox, and re-exported here.
"""

from __future__ import annotations

from .._public_home import claim_classes

# ``X as X``: names the module held before it became a package, importable from here still
# (not in __all__).
from .._tool_context import ContextT as ContextT, ToolContext
from ._define import AsyncExecute as AsyncExecute, SyncExecute as SyncExecute, ToolDecorator, tool
from ._helpers import (
    FINISH_TOOL_NAME,
    approval_id,
    dump_output,
    finish_tool,
    resolve_contexts,
    tools_by_name,
)
from ._tool import (
    DescriptionFn as DescriptionFn,
    ExecuteFn as ExecuteFn,
    InputT as InputT,
    OutputT as OutputT,
    Tool,
    ToolUnavailable,
)

__all__ = [
    "FINISH_TOOL_NAME",
    "Tool",
    "ToolContext",
    "ToolDecorator",
    "ToolUnavailable",
    "approval_id",
    "dump_output",
    "finish_tool",
    "resolve_contexts",
    "tool",
    "tools_by_name",
]

claim_classes(globals())  # their module is this package, not the private one (_public_home.py)
