"""litellm is imported at a server's startup, never while it serves a request.

Each case runs in a fresh interpreter: this test process has long imported litellm.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# One chat turn through the app, in-process; prints what the checks below read.
_CHAT = """
import asyncio, json, sys
import httpx

async def chat(app):
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        body = {"id": "s1", "messages": [{"id": "u1", "role": "user",
                "parts": [{"type": "text", "text": "Hello"}]}]}
        response = await client.post("/api/chat", json=body)
        return [json.loads(line[6:]) for line in response.text.split("\\n")
                if line.startswith("data: {")]
"""


def _run(code: str) -> str:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_create_app_loads_litellm_at_startup_before_the_first_request() -> None:
    out = _run(
        _CHAT
        + """
import helix_stream as hs
from helix_stream.server import create_app

app = create_app(hs.Executor(), hs.Agent(name="a", model="helix/demo"))
print("after create_app:", "litellm" in sys.modules)

async def main():
    async with app.router.lifespan_context(app):
        print("after startup:", "litellm" in sys.modules)
        chunks = await chat(app)
        print("text:", "".join(c.get("delta", "") for c in chunks if c["type"] == "text-delta") != "")

asyncio.run(main())
"""
    )
    assert out.splitlines() == [
        "after create_app: False",
        "after startup: True",
        "text: True",
    ]


def test_routes_without_load_litellm_import_it_off_the_event_loop_with_a_warning() -> None:
    out = _run(
        _CHAT
        + """
import logging, threading
import helix_stream as hs
from starlette.applications import Starlette
from helix_stream.server import routes

records = []
logging.getLogger("helix_stream.models").addHandler(
    type("H", (logging.Handler,), {"emit": lambda self, r: records.append(r)})())
main_thread = threading.get_ident()
importer = []
real_import = __builtins__.__import__ if hasattr(__builtins__, "__import__") else __import__

def spy(name, *args, **kwargs):
    if name == "litellm" and "litellm" not in sys.modules:
        importer.append(threading.get_ident())
    return real_import(name, *args, **kwargs)

import builtins
builtins.__import__ = spy
app = Starlette(routes=routes(hs.Executor(), hs.Agent(name="a", model="helix/demo")))
chunks = asyncio.run(chat(app))
builtins.__import__ = real_import
print("text:", any(c["type"] == "text-delta" for c in chunks))
print("imported on the event loop thread:", importer[0] == main_thread)
print("warned:", any("load_litellm" in r.getMessage() for r in records))
"""
    )
    assert out.splitlines() == [
        "text: True",
        "imported on the event loop thread: False",
        "warned: True",
    ]


def test_routes_with_the_documented_one_liner_load_litellm_before_serving() -> None:
    out = _run(
        """
import sys
from helix_stream.models import load_litellm
print("before:", "litellm" in sys.modules)
load_litellm()
print("after:", "litellm" in sys.modules)
"""
    )
    assert out.splitlines() == ["before: False", "after: True"]


def test_importing_litellm_first_then_helix_stream_works() -> None:
    # The order users write: their litellm code first, then this package.
    out = _run(
        _CHAT
        + """
import warnings
warnings.simplefilter("error")          # a warning during a turn must not break it
import litellm
import helix_stream as hs
from helix_stream.server import create_app

async def main():
    result = await hs.generate_text(model="helix/demo", prompt="Hello")
    print("generate_text:", bool(result.text))
    app = create_app(hs.Executor(), hs.Agent(name="a", model="helix/demo"))
    async with app.router.lifespan_context(app):
        chunks = await chat(app)
    print("chat:", [c["type"] for c in chunks][-1], any(c["type"] == "error" for c in chunks))

asyncio.run(main())
"""
    )
    assert out.splitlines() == ["generate_text: True", "chat: finish False"]
