"""A sandbox command cannot read the server process's secrets (issue 36 part 6): a real uvicorn
process, started with ``OPENAI_API_KEY`` and an app secret in its environment (as root here, as
in many containers), runs an agent whose tool runs what the model asks in its sandbox; the
loopback model asks for ``/proc/$PPID/environ`` and every ``/proc/*/environ``. Neither secret
reaches the command's output, the chat's stream or the model; the command's own environment
does (the scan really ran). Per sandbox provider, where this machine can run it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from helix_stream.sandbox._confine import bwrap_path, confinement
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server._live import server_process

API_KEY = "sk-server-key-0123456789abcdef"
APP_SECRET = "app-secret-9876543210fedcba"
SCAN = "cat /proc/$PPID/environ; cat /proc/*/environ; echo; ls /proc"

APP = textwrap.dedent(
    """
    import sys, uvicorn
    import helix_stream as hs
    from helix_stream.server import create_app

    port, provider, root, api_base = sys.argv[1:5]
    Provider = {"local": hs.LocalSandbox, "bubblewrap": hs.BubblewrapSandbox}[provider]

    @hs.tool
    async def shell(command: str, ctx: hs.ToolContext) -> str:
        \"\"\"Run a shell command in the sandbox.\"\"\"
        result = await (await ctx.get_sandbox()).run(command)
        return result.stdout.replace("\\0", "\\n")

    agent = hs.Agent(name="coder", model="openai/loopback", tools=[shell], max_retries=0,
                     sandbox=Provider(root, env={"MARK": "the-commands-own"}),
                     settings={"api_base": api_base, "api_key": "k"})
    app = create_app(hs.Executor(store=hs.MemoryStore()), agent)
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")
    """
)


@pytest.fixture(params=["local", "bubblewrap"])
def server(
    request: pytest.FixtureRequest, loopback: LoopbackServer, tmp_path: Path
) -> Iterator[str]:
    if confinement() == "none":
        pytest.skip("this machine cannot make namespaces (not Linux, or forbidden)")
    if request.param == "bubblewrap" and bwrap_path() is None:
        pytest.skip("bubblewrap cannot run here (apt-get install bubblewrap)")
    secrets = {"OPENAI_API_KEY": API_KEY, "HELIX_APP_SECRET": APP_SECRET}
    root = str(tmp_path / "boxes")
    with server_process(APP, request.param, root, loopback.api_base, env=secrets) as url:
        yield url


def test_a_command_reading_proc_finds_none_of_the_servers_secrets(
    server: str, loopback: LoopbackServer
) -> None:
    loopback.script(tool_calls(("shell", {"command": SCAN})), text("done"))
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "look around"}]}
    body = {"id": "s", "trigger": "submit-message", "messages": [message]}
    response = httpx.post(f"{server}/api/chat", json=body, timeout=60)
    assert response.status_code == 200
    assert "tool-output-available" in response.text, response.text[-2000:]
    assert "MARK=the-commands-own" in response.text  # the scan read environments: its own
    sent = b"".join(loopback.requests)
    assert b"MARK=the-commands-own" in sent  # and the model got that output
    for secret in (API_KEY, APP_SECRET):
        assert secret not in response.text
        assert secret.encode() not in sent
