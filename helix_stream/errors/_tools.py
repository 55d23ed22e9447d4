"""Errors of the things tools use: a tool call that failed, an MCP server that cannot be used or
refuses the credentials, a sandbox, a skill."""

from __future__ import annotations

from ._base import HelixError

__all__ = [
    "SandboxError",
    "SandboxFileNotFoundError",
    "SandboxNotFoundError",
    "SandboxPathError",
    "SandboxTimeoutError",
    "SkillError",
    "SkillFormatError",
    "SkillNotFoundError",
    "ToolFailedError",
    "ToolProviderAuthError",
    "ToolProviderError",
]


class ToolFailedError(HelixError):
    """A tool call ended in an error (invalid input, or its body raised).

    The loop does not raise it — the model sees the error text and carries on. The UI
    transformer hands it to ``on_error`` so that the text a chat UI shows is chosen there
    (masked by default, like every error).

    Example::

        from helix_stream.errors import HelixError, ToolFailedError
        from helix_stream.transformers import to_ui_message_stream

        def on_error(error: BaseException) -> str:          # what the chat UI shows
            if isinstance(error, ToolFailedError):
                return "A tool failed; the assistant carries on without it."
            return error.message if isinstance(error, HelixError) else "An error occurred."

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        ui = to_ui_message_stream(result, on_error=on_error)
    """

    code = "tool_failed"
    http_status = 500

    def __init__(self, message: str, *, error_type: str | None = None) -> None:
        super().__init__(message)
        # Telemetry's ``error.type`` when the class name is not what a dashboard should group
        # by: an MCP tool's ``isError`` result is ``tool_error`` (OpenTelemetry semconv).
        self.error_type = error_type


class ToolProviderError(HelixError):
    """A source of tools (an MCP server) cannot be used: it did not start, cannot be reached,
    or dropped the connection; nothing of the call ran on it.

    The message names the server and what to check. Raised to the app when the tools are
    first needed (``await server.tools()``); inside a run, a tool call that meets it becomes
    an error result the model sees, and the next use connects again.

    Attributes:
        server: The server's name.

    Example::

        from helix_stream.errors import ToolProviderError

        server = hs.MCPServer.http("http://127.0.0.1:9/mcp", name="weather")
        try:
            tools = await server.tools()
        except ToolProviderError as exc:           # not reachable: names the server, what to check
            print(exc.server, exc.retryable)       # weather True
    """

    code = "tool_provider_unavailable"
    http_status = 503
    retryable = True

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class ToolProviderAuthError(ToolProviderError):
    """The tool provider refused the credentials (HTTP 401 or 403): trying again with the
    same ones will not help.

    Attributes:
        status: The HTTP status it answered.
        challenge: Its ``WWW-Authenticate`` header (an OAuth challenge names where to sign
            in), or ``None``.

    Example::

        from helix_stream.errors import ToolProviderAuthError

        server = hs.MCPServer.http("https://mcp.example.com/mcp", name="github",
                                   request_headers={"Authorization"})
        try:
            tools = await server.tools(context={"headers": {"Authorization": "Bearer expired"}})
        except ToolProviderAuthError as exc:       # 401/403: the same credentials will not help
            print(exc.status, exc.challenge)
    """

    code = "tool_provider_unauthorized"
    http_status = 502
    retryable = False

    def __init__(
        self, message: str, *, server: str, status: int, challenge: str | None = None
    ) -> None:
        super().__init__(message, server=server)
        self.status = status
        self.challenge = challenge


class SandboxError(HelixError):
    """A sandbox refused or failed an operation (the subclasses say which).

    Example::

        from helix_stream.errors import SandboxError

        @hs.tool
        async def run_tests(path: str, ctx: hs.ToolContext) -> str:
            sandbox = await ctx.get_sandbox()
            try:
                result = await sandbox.run(f"python3 -m pytest -q {path}", timeout=60)
            except SandboxError as exc:            # any of the subclasses: a path, a timeout, ...
                return f"could not run the tests: {exc.message}"
            return result.stdout
    """

    code = "sandbox_error"
    http_status = 500


class SandboxPathError(SandboxError):
    """A path leaves ``/workspace`` (``..``, an absolute path elsewhere, a symbolic link out),
    or names the wrong kind of file (a directory where a file is needed).

    Example::

        from helix_stream.errors import SandboxPathError

        try:
            await sandbox.read_file("/workspace/../etc/passwd")
        except SandboxPathError as exc:            # leaves /workspace: refused
            print(exc.code)                        # sandbox_path_refused
    """

    code = "sandbox_path_refused"
    http_status = 400


class SandboxNotFoundError(SandboxError):
    """No sandbox has this id (never created, closed, or another session's).

    Example::

        from helix_stream.errors import SandboxNotFoundError

        provider = hs.LocalSandbox("/var/tmp/helix-sandboxes")
        try:
            sandbox = await provider.attach(session, "closed-sandbox-id")
        except SandboxNotFoundError:               # closed, never made, or another session's
            sandbox = await provider.create(session, "coder")
    """

    code = "sandbox_not_found"
    http_status = 404


class SandboxFileNotFoundError(SandboxError):
    """A ``/workspace`` path names no file (or, as a working directory, no directory).

    Example::

        from helix_stream.errors import SandboxFileNotFoundError

        try:
            data = await sandbox.read_file("/workspace/missing.txt")
        except SandboxFileNotFoundError:
            data = b""
    """

    code = "sandbox_file_not_found"
    http_status = 404


class SandboxTimeoutError(SandboxError):
    """A command ran past its timeout and was killed, with every process it started.

    Attributes:
        timeout: The timeout in seconds.
        stdout: What the command wrote to stdout before it was killed (capped like a result).
        stderr: The same for stderr.

    Example::

        from helix_stream.errors import SandboxTimeoutError

        try:
            await sandbox.run("sleep 600", timeout=5)
        except SandboxTimeoutError as exc:         # killed with every process it started
            print(exc.timeout, exc.stdout[-200:])
    """

    code = "sandbox_timeout"
    http_status = 504

    def __init__(self, timeout: float, *, stdout: str = "", stderr: str = "") -> None:
        super().__init__(
            f"The command ran longer than its timeout of {timeout:g} s and was killed. Pass "
            "a larger timeout= to run(), or split the work into shorter commands."
        )
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr


class SkillError(HelixError):
    """A skill could not be read or used (the subclasses say why).

    Example::

        from helix_stream.errors import SkillError

        try:
            skills = hs.skills_from_dir("skills/")
        except SkillError as exc:                  # SkillFormatError or SkillNotFoundError
            print(exc.code, exc.message)
    """

    code = "skill_error"
    http_status = 500


class SkillFormatError(SkillError):
    """A skill is malformed (its ``SKILL.md``, its name, a file of it); the message names it.

    Example::

        from helix_stream.errors import SkillFormatError

        try:
            hs.Skill("Not A Valid Name!", "What it does.", "How to do it.")
        except SkillFormatError as exc:            # names what is malformed
            print(exc.message)
    """

    code = "skill_invalid"
    http_status = 400


class SkillNotFoundError(SkillError):
    """No skill has this name, or the skill has no file at this path.

    Example::

        from helix_stream.errors import SkillNotFoundError

        @hs.tool
        async def checklist(ctx: hs.ToolContext) -> str:
            try:
                return await ctx.get_skill("code-review").file("references/checklist.md").text()
            except SkillNotFoundError:
                return "no checklist"
    """

    code = "skill_not_found"
    http_status = 404
