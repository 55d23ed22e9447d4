"""``examples/react_chat`` (``@ai-sdk/react``'s ``useChat``, ai@7) in chromium against the server:
a reload mid-answer resumes it, Stop ends it on the server and marks it interrupted.

The example is installed with npm into ``<repo>/.cache/react-example`` the first time (reused
afterwards) and built with its own vite; the server serves the build beside the chat routes, on
one origin. Skipped, with the reason, without chromium (see ``_browser.py``) or Node.js.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.server import lifespan, routes
from helix_stream.server._demo import demo_agent
from tests.browser._browser import browser, new_page
from tests.conformance._client import missing_node_reason, serve_app

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import Page, expect

expect.set_options(timeout=20_000)
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "react_chat"
BUILD = ROOT / ".cache" / "react-example"
SOURCES = ("package.json", "vite.config.js", "index.html", "src/main.jsx", "src/App.jsx")
LONG = " ".join(f"word{i}" for i in range(200))


def _run(command: list[str], cwd: Path) -> None:
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:  # a failure to install or build fails the test, never skips it
        raise RuntimeError(
            f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )


def _build() -> Path:
    """The example's build (``dist/``), installed and built again when its sources changed."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD.parent / ".react-example.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        changed = False
        for name in SOURCES:
            source, copy = EXAMPLE / name, BUILD / name
            if not copy.exists() or copy.read_bytes() != source.read_bytes():
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_bytes(source.read_bytes())
                changed = True
        npm = shutil.which("npm") or "npm"
        if changed or not (BUILD / "node_modules" / ".bin" / "vite").exists():
            _run([npm, "install", "--no-audit", "--no-fund"], BUILD)
        if changed or not (BUILD / "dist" / "index.html").exists():
            _run([str(BUILD / "node_modules" / ".bin" / "vite"), "build"], BUILD)
    return BUILD / "dist"


@contextmanager
def _site(tmp_path: Path, agent: hs.Agent) -> Iterator[tuple[str, Any]]:
    with browser() as (launched, watch):
        reason = missing_node_reason()
        if reason is not None:
            pytest.skip(reason)
        dist = _build()
        litellm_module()
        executor = hs.Executor(store=hs.SQLiteStore(str(tmp_path / "react.db")))
        app = Starlette(
            routes=[
                *routes(executor, agent),
                Mount("/", StaticFiles(directory=dist, html=True)),
            ],
            lifespan=lifespan,
        )
        with serve_app(app) as base_url:
            page = new_page(launched, watch)
            page.goto(f"{base_url}/#react-1")
            expect(page.locator("#status")).to_have_text("ready")
            yield base_url, page
        assert watch.scripts_clean() == []
        assert watch.failed == []


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    with _site(tmp_path, demo_agent("helix/demo-slow")) as opened:
        yield opened


class Target(BaseModel):
    target: str


@pytest.fixture
def approvals(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    deploy = hs.tool(
        name="deploy",
        input_schema=Target,
        execute=lambda t: f"deployed {t.target}",
        needs_approval=True,
    )
    with _site(tmp_path, hs.Agent(name="ops", model="helix/demo", tools=[deploy])) as opened:
        yield opened


def _send(page: Page, text: str) -> None:
    page.locator("#input").fill(text)
    page.locator("#send").click()


def _stored(base_url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = httpx.get(f"{base_url}/api/chat/react-1/messages").json()
    return messages


def test_use_chat_resumes_after_a_reload_and_stops_on_the_server(site: tuple[str, Any]) -> None:
    base_url, page = site
    _send(page, LONG)
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".text")).to_contain_text("word5 ")
    page.reload()  # useChat's resume: true follows the running answer to its end
    expect(page.locator(".msg.assistant .text")).to_have_text(f"You said: {LONG}")
    expect(page.locator("#status")).to_have_text("ready")
    expect(page.locator(".interrupted")).to_have_count(0)
    assert page.locator(".msg").count() == 2
    assert _stored(base_url)[1]["parts"][-1]["text"] == f"You said: {LONG}"

    _send(page, LONG)
    expect(page.locator(".msg.assistant").last.locator(".text")).to_contain_text("word5 ")
    page.locator("#stop").click()
    expect(page.locator("#status")).to_have_text("ready")
    cut = page.locator(".msg.assistant").last
    expect(cut.locator(".interrupted")).to_have_count(1)  # live, from the stream's metadata
    shown = cut.locator(".text").text_content()
    stored = _stored(base_url)
    assert stored[-1]["metadata"] == {"interrupted": True}
    assert stored[-1]["parts"][-1]["text"] == shown
    page.reload()  # the same screen after a reload
    expect(page.locator(".msg")).to_have_count(4)
    expect(page.locator(".msg.assistant").last.locator(".interrupted")).to_have_count(1)
    assert page.locator(".msg.assistant").last.locator(".text").text_content() == shown


def test_use_chat_approves_and_a_call_left_waiting_ends_on_its_own_message(
    approvals: tuple[str, Any],
) -> None:
    base_url, page = approvals
    _send(page, "Please deploy to Production")
    asked = page.locator(".msg.assistant").nth(0).locator(".tool")
    expect(asked).to_have_attribute("data-state", "approval-requested")
    asked.get_by_role("button", name="Approve").click()  # sent back by sendAutomaticallyWhen
    expect(asked).to_have_attribute("data-state", "output-available")
    expect(page.locator(".msg.assistant")).to_have_count(1)

    _send(page, "Please deploy to Staging")
    waiting = page.locator(".msg.assistant").nth(1).locator(".tool")
    expect(waiting).to_have_attribute("data-state", "approval-requested")
    _send(page, "Thanks, never mind")  # instead of an answer
    expect(page.locator(".msg.assistant")).to_have_count(3)
    expect(page.locator("#status")).to_have_text("ready")
    expect(waiting).to_have_attribute("data-state", "output-error")
    expect(waiting).to_contain_text("cancelled: a new message was sent")
    expect(waiting.get_by_role("button")).to_have_count(0)
    expect(page.locator(".msg.assistant").nth(2).locator(".tool")).to_have_count(0)
    before = page.locator(".msg").all_inner_texts()
    stored = _stored(base_url)
    assert stored[3]["parts"][1]["errorText"] == "cancelled: a new message was sent"

    page.reload()  # the same screen after a reload
    expect(page.locator(".msg")).to_have_count(6)
    assert page.locator(".msg").all_inner_texts() == before
