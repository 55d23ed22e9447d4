"""``examples/react_chat`` (``@ai-sdk/react``'s ``useChat``, ai@7) in chromium against the server:
a reload mid-answer resumes it, Stop ends it on the server and marks it interrupted, approvals,
a refusal shown in words (the message taken out of the list), a sign-in link that continues the
turn by itself.

The example is copied, with the package's ``helix_stream/static/refusal.js`` it imports, into
``<repo>/.cache/react-example`` (the repository's layout), installed with npm the first time
(reused afterwards) and built with its own vite; the server serves the build beside the chat
routes, on one origin. Skipped, with the reason, without chromium (see ``_browser.py``) or
Node.js. The answers a test holds open come from the loopback server, gated: the test decides
when they go on, instead of racing a timed model.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import threading
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
from tests.auth._session import SECRET, Calendar, agent as calendar_agent
from tests.auth.oauth_server import OAuthServer
from tests.browser._browser import Watch, browser, layout_width, new_page
from tests.conformance._client import missing_node_reason, serve_app
from tests.conformance.test_authorization import ServedCallback
from tests.loopback import LoopbackServer, Reply, text, tool_calls

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import Page, expect

expect.set_options(timeout=20_000)
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "react_chat"
CACHE = ROOT / ".cache" / "react-example"
BUILD = CACHE / "examples" / "react_chat"
SOURCES = {
    f"examples/react_chat/{name}": f"examples/react_chat/{name}"
    for name in (
        "package.json",
        "vite.config.js",
        "index.html",
        "src/main.jsx",
        "src/App.jsx",
        "src/styles.css",
    )
} | {"helix_stream/static/refusal.js": "helix_stream/static/refusal.js"}
WORDS = [f"word{i} " for i in range(40)]
ANSWER = "".join(WORDS)


def _run(command: list[str], cwd: Path) -> None:
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:  # a failure to install or build fails the test, never skips it
        raise RuntimeError(
            f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )


def _build() -> Path:
    """The example's build (``dist/``), installed and built again when its sources changed."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / ".react-example.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        changed = False
        for name, target in SOURCES.items():
            source, copy = ROOT / name, CACHE / target
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
def _site(tmp_path: Path, agent: hs.Agent, **options: Any) -> Iterator[tuple[str, Any, Watch]]:
    with browser() as (launched, watch):
        reason = missing_node_reason()
        if reason is not None:
            pytest.skip(reason)
        dist = _build()
        litellm_module()
        store = hs.SQLiteStore(str(tmp_path / "react.db"))
        executor = hs.Executor(store=store, auth_secret=SECRET)
        app = Starlette(
            routes=[
                *routes(executor, agent, **options),
                Mount("/", StaticFiles(directory=dist, html=True)),
            ],
            lifespan=lifespan,
        )
        with serve_app(app) as base_url:
            page = new_page(launched, watch)
            page.goto(f"{base_url}/#react-1")
            expect(page.locator("#status")).to_have_text("ready")
            yield base_url, page, watch
        assert watch.scripts_clean() == []
        assert watch.failed == []


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    with _site(tmp_path, demo_agent("helix/demo-slow")) as (base_url, page, _):
        yield base_url, page


def _gated(gate: threading.Event) -> Reply:
    """An answer of 40 words that holds after the sixth until the test sets ``gate``."""
    return Reply(deltas=[{"content": w} for w in WORDS], gate=gate, gate_at=6)


@pytest.fixture
def gated(tmp_path: Path, loopback: LoopbackServer) -> Iterator[tuple[str, Any]]:
    agent = hs.Agent(
        name="gated",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        max_retries=0,
    )
    with _site(tmp_path, agent) as (base_url, page, _):
        yield base_url, page


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
        yield opened[:2]


def _send(page: Page, text: str) -> None:
    page.locator("#input").fill(text)
    page.locator("#send").click()


def _stored(base_url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = httpx.get(f"{base_url}/api/chat/react-1/messages").json()
    return messages


def test_use_chat_resumes_after_a_reload_and_stops_on_the_server(
    gated: tuple[str, Any], loopback: LoopbackServer
) -> None:
    base_url, page = gated
    first, second = threading.Event(), threading.Event()
    loopback.script(_gated(first), _gated(second))
    try:
        _send(page, "Tell me a story")
        answer = page.locator(".msg.assistant").last
        expect(answer.locator(".text")).to_have_text("".join(WORDS[:6]))  # held open here
        page.reload()  # useChat's resume: true follows the running answer
        expect(page.locator(".msg.assistant .text")).to_have_text("".join(WORDS[:6]))
        expect(page.locator("#status")).not_to_have_text("ready")  # it is still running
        first.set()  # the answer goes on, and the reloaded page shows it to its end
        expect(page.locator(".msg.assistant .text")).to_have_text(ANSWER)
        expect(page.locator("#status")).to_have_text("ready")
        expect(page.locator(".interrupted")).to_have_count(0)
        assert page.locator(".msg").count() == 2
        assert _stored(base_url)[1]["parts"][-1]["text"] == ANSWER

        _send(page, "Another one")
        expect(page.locator(".msg.assistant").last.locator(".text")).to_have_text(
            "".join(WORDS[:6])
        )
        page.locator("#stop").click()  # while the answer is held: only Stop can end it
        expect(page.locator("#status")).to_have_text("ready")
        cut = page.locator(".msg.assistant").last
        expect(cut.locator(".interrupted")).to_have_count(1)  # live, from the stream's metadata
        shown = cut.locator(".text").text_content()
        assert shown == "".join(WORDS[:6])
        stored = _stored(base_url)
        assert stored[-1]["metadata"] == {"interrupted": True}
        assert stored[-1]["parts"][-1]["text"] == shown
        page.reload()  # the same screen after a reload
        expect(page.locator(".msg")).to_have_count(4)
        expect(page.locator(".msg.assistant").last.locator(".interrupted")).to_have_count(1)
        assert page.locator(".msg.assistant").last.locator(".text").text_content() == shown
    finally:
        first.set()
        second.set()


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


def test_a_refused_message_is_shown_in_words_and_taken_out_of_the_list(tmp_path: Path) -> None:
    agent = demo_agent("helix/demo")
    with _site(tmp_path, agent, max_body_bytes=4000) as (base_url, page, watch):
        big = "x" * 5000
        _send(page, big)
        notice = page.locator(".notice")
        expect(notice).to_have_text(
            "Not sent. That message is too large to send. Shorten it, or attach smaller files."
        )
        expect(page.locator(".msg")).to_have_count(0)  # the refused message left the list
        expect(page.locator("#input")).to_have_value(big)  # its text is back in the box
        expect(page.locator("[role=alert].failure")).to_have_count(0)  # no raw JSON body
        width = layout_width(page)
        assert width["scroll"] == width["window"], width
        shot = tmp_path / "react_refused.png"
        page.screenshot(path=str(shot))
        shutil.copyfile(shot, Path("/tmp/helix_react_refused.png"))
        _send(page, "Hello")
        expect(page.locator(".msg.assistant .text")).to_have_text("You said: Hello")
        expect(notice).to_have_count(0)
        assert watch.failed == [f"{base_url}/api/chat"]  # the one refused send
        watch.failed.clear()


def test_a_sign_in_link_continues_the_turn_by_itself(
    tmp_path: Path, loopback: LoopbackServer, oauth: OAuthServer
) -> None:
    calendar, strategy = Calendar(), ServedCallback()
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("One standup."))
    bot = calendar_agent(loopback, calendar.tools(strategy))
    with _site(tmp_path, bot) as (base_url, page, _):
        strategy.inner = oauth.strategy(redirect_uri=f"{base_url}/api/auth/callback")
        _send(page, "What is on monday?")
        tool = page.locator(".msg.assistant .tool")
        link = tool.locator("a.sign-in")
        expect(link).to_have_text("Sign in to loopback")
        expect(link).to_have_attribute("rel", "noopener")
        expect(tool.locator(".badge")).to_have_text("waiting for sign-in")
        expect(page.locator("#regenerate")).to_have_count(0)  # not under a waiting call
        shot = tmp_path / "react_sign_in.png"
        page.screenshot(path=str(shot))
        shutil.copyfile(shot, Path("/tmp/helix_react_sign_in.png"))
        with page.context.expect_page() as opened:
            link.click()
        expect(opened.value.locator("h1")).to_have_text("Signed in")
        # The callback page told this tab; useChat continued the same message by itself.
        expect(tool).to_have_attribute("data-state", "output-available")
        expect(tool.locator("a.sign-in")).to_have_count(0)  # the stale link is gone
        expect(page.locator(".msg.assistant .text")).to_have_text("One standup.")
        expect(page.locator(".msg.assistant")).to_have_count(1)
        expect(page.locator("#status")).to_have_text("ready")
        assert calendar.tokens == [oauth.issued[0]]
