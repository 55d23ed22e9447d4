"""The demo page's fixes, in chromium: refused sends, scrolling, Markdown, failures in words
(live and after a reload the same), the status during a retry, waiting calls, the sign-in that
continues by itself, and the Context panel's checks.

See ``_browser.py`` for what it needs (skipped, with the reason, without it). Failures come
from the loopback OpenAI-compatible server (real HTTP through litellm); screenshots are saved
under the test's tmp dir and copied to ``/tmp/helix_demo_<name>.png`` to look at.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.server._demo import demo_agent, demo_app
from tests.auth._session import SECRET, Calendar, agent as calendar_agent
from tests.auth.oauth_server import OAuthServer
from tests.browser._browser import Watch, browser, layout_width, new_page
from tests.conformance._client import serve_app
from tests.conformance.test_authorization import ServedCallback
from tests.loopback import LoopbackServer, Reply, error, text, tool_calls

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import Page, expect

expect.set_options(timeout=20_000)
LONG = " ".join(f"word{i}" for i in range(300))
SHOTS = Path("/tmp")


@contextmanager
def _served(agent: hs.Agent, **options: Any) -> Iterator[tuple[str, Any, Watch]]:
    litellm_module()  # import it now, not during the first streamed answer
    executor = hs.Executor(store=hs.MemoryStore(), auth_secret=SECRET)
    with browser() as (launched, watch), serve_app(demo_app(executor, agent, **options)) as url:
        yield url, launched, watch
        assert watch.scripts_clean() == []


def _open(launched: Any, watch: Watch, base_url: str, width: int = 1280, height: int = 860) -> Page:
    page = new_page(launched, watch, width, height)
    page.goto(f"{base_url}/")
    expect(page.locator("#session-id")).not_to_have_text("")
    return page


def _send(page: Page, text: str) -> None:
    # No answer runs (a message sent while one runs would steer it: test_demo_steering.py).
    expect(page.locator("#stop")).to_be_hidden()
    page.locator("#input").fill(text)
    page.locator("#input").press("Enter")


def _shot(page: Page, tmp_path: Path, name: str, selector: str | None = None) -> bytes:
    path = tmp_path / f"{name}.png"
    target = page.locator(selector) if selector else page
    data: bytes = target.screenshot(path=str(path))
    shutil.copyfile(path, SHOTS / f"helix_demo_{name}.png")
    return data


def _inside(page: Page, inner: str, outer: str) -> None:
    a, b = page.locator(inner).bounding_box(), page.locator(outer).bounding_box()
    assert a is not None and b is not None, (inner, outer)
    assert a["x"] >= b["x"] - 1 and a["x"] + a["width"] <= b["x"] + b["width"] + 1, (a, b)
    width = layout_width(page)
    assert width["scroll"] == width["window"], width


def _loopback_agent(
    loopback: LoopbackServer, tools: list[hs.Tool] | None = None, **kw: Any
) -> hs.Agent:
    return hs.Agent(
        name="helix-demo",
        model="openai/loopback",
        tools=tools or [],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        **{"max_retries": 0, **kw},
    )


# ---- refused sends ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("429", "Too many requests right now. Wait a moment, then send again."),
        ("413", "That message is too large to send. Shorten it, or attach smaller files."),
    ],
    ids=["429-before-the-stream", "413-of-the-package"],
)
def test_a_refused_send_clears_the_status_and_says_what_to_do(
    tmp_path: Path, how: str, words: str
) -> None:
    with _served(demo_agent("helix/demo-slow"), max_body_bytes=4000) as (url, launched, watch):
        page = _open(launched, watch, url, width=900)
        message = "Hello" if how == "429" else "x" * 5000
        if how == "429":  # a proxy's rate limit, before the app sees the request
            page.route(
                "**/api/chat",
                lambda route: (
                    route.fulfill(status=429, body="Too Many Requests")
                    if route.request.method == "POST"
                    else route.continue_()
                ),
            )
        _send(page, message)
        notice = page.locator("#notice")
        expect(notice).to_have_text(f"Not sent. {words} Your message is back in the box.")
        expect(page.locator("#status")).to_have_text("")  # not a stale "Thinking…"
        expect(page.locator(".msg")).to_have_count(0)  # the refused message left the list
        expect(page.locator("#input")).to_have_value(message)
        expect(page.locator("#stop")).to_be_hidden()
        _inside(page, "#notice", ".chat")  # the words wrap inside the chat column
        _shot(page, tmp_path, f"refused_{how}")
        page.unroute("**/api/chat")
        page.locator("#input").fill("Hello again")
        page.locator("#input").press("Enter")  # and the chat goes on
        expect(page.locator(".msg.assistant .text")).to_have_text("You said: Hello again")
        expect(notice).to_be_hidden()


# ---- scrolling ----------------------------------------------------------------------------


def test_scrolling_up_while_it_streams_stays_put_and_latest_follows_again(
    tmp_path: Path,
) -> None:
    with _served(demo_agent("helix/demo-slow")) as (url, launched, watch):
        page = _open(launched, watch, url, height=600)
        _send(page, LONG)
        answer = page.locator(".msg.assistant .text.streaming")
        expect(answer).to_contain_text("word5 ")
        messages = page.locator("#messages")
        messages.evaluate("box => { box.scrollTop = 0; }")  # the user scrolls up to read
        expect(page.locator("#jump")).to_be_visible()
        before = _shot(page, tmp_path, "scrolled_up_1", "#messages")
        shown = len(str(answer.text_content()))
        page.wait_for_timeout(900)  # ~30 more words stream meanwhile
        assert len(str(answer.text_content())) > shown  # it did stream
        assert messages.evaluate("box => box.scrollTop") == 0
        assert _shot(page, tmp_path, "scrolled_up_2", "#messages") == before  # not moved a pixel
        page.locator("#jump").click()  # back to the latest: it follows again
        expect(page.locator("#jump")).to_be_hidden()
        page.wait_for_timeout(600)
        gap = "box => box.scrollHeight - box.scrollTop - box.clientHeight"
        assert messages.evaluate(gap) < 24
        expect(page.locator(".msg.assistant .text.streaming")).to_have_count(0)
        assert messages.evaluate(gap) < 24


# ---- Markdown -----------------------------------------------------------------------------

MARKDOWN = (
    "Here is **the plan**, with `inline code`:\n\n"
    "1. Read [the docs](https://example.com/docs)\n"
    "2. Run it\n\n"
    "```python\nprint('<b>not bold</b>')  # a long line " + "x" * 150 + "\n```\n\n"
    "Raw HTML stays text: <img src=x onerror=alert(1)> and [bad](javascript:alert(1)). "
    "See https://example.com/" + "a/" * 60
)


def test_answers_render_markdown_safely_with_copy(tmp_path: Path) -> None:
    with _served(demo_agent("helix/demo")) as (url, launched, watch):
        page = _open(launched, watch, url)
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        _send(page, MARKDOWN)
        answer = page.locator(".msg.assistant .md")
        expect(answer.locator("ol li")).to_have_count(2)
        expect(answer.locator("strong")).to_have_text("the plan")
        expect(answer.locator("p code")).to_have_text("inline code")
        docs = answer.locator("a", has_text="the docs")
        expect(docs).to_have_attribute("href", "https://example.com/docs")
        expect(docs).to_have_attribute("rel", "noopener noreferrer")
        expect(docs).to_have_attribute("target", "_blank")
        expect(answer.locator(".code-block .code-lang")).to_have_text("python")
        expect(answer.locator(".code-block pre")).to_contain_text("print('<b>not bold</b>')")
        assert answer.locator("img, b, script").count() == 0  # no markup from the text
        expect(answer.locator("a")).to_have_count(2)  # the docs and the bare URL, not javascript:
        expect(answer).to_contain_text("[bad](javascript:alert(1))")
        _inside(page, ".msg.assistant .code-block", ".msg.assistant .bubble")
        _shot(page, tmp_path, "markdown")

        answer.locator(".code-block .copy").click()
        expect(answer.locator(".code-block .copy")).to_have_text("Copied")
        clipboard = "() => navigator.clipboard.readText()"
        assert page.evaluate(clipboard).startswith("print('<b>not bold</b>')")
        page.locator(".msg.assistant .copy-message").click()
        assert page.evaluate(clipboard) == f"You said: {MARKDOWN}"

        expect(page.locator(".msg.assistant .copy", has_text="Copied")).to_have_count(0)
        before = page.locator(".msg.assistant").inner_html()
        page.reload()  # restored from the server: the same rendering
        expect(page.locator(".msg.assistant .md ol li")).to_have_count(2)
        assert page.locator(".msg.assistant").inner_html() == before


# ---- failures -----------------------------------------------------------------------------

BUSY = (
    "The model provider is busy (rate limited). Wait a minute, then send again or press Regenerate."
)


def test_a_failed_turn_shows_the_same_words_live_and_after_a_reload(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.script(
        error(429, "slow down"),  # before any text
        Reply(
            deltas=[{"content": "Half an "}, {"content": "answer"}, {"content": "!"}], fail_after=2
        ),
    )
    # stream_retries=0: the failure after text is shown as it is (a retry would continue it).
    with _served(_loopback_agent(loopback, stream_retries=0)) as (url, launched, watch):
        page = _open(launched, watch, url, width=900)
        _send(page, "First")
        first = page.locator(".msg.assistant").nth(0)
        expect(first.locator(".error")).to_have_text(BUSY)  # not an empty bubble
        expect(page.locator("#status")).to_have_text("")
        _inside(page, ".msg.assistant .error", ".msg.assistant .bubble")
        _shot(page, tmp_path, "failed_before_text")
        _send(page, "Second")
        second = page.locator(".msg.assistant").nth(1)
        expect(second.locator(".text")).to_have_text("Half an answer")
        expect(second.locator(".error")).to_have_text(
            "The model provider is unavailable right now. Try again in a minute."
        )
        expect(page.locator(".marker")).to_have_count(0)  # the failure, not "interrupted"
        live = page.locator(".msg").all_inner_texts()
        assert not any("model_" in t or "An error occurred" in t for t in live)
        page.reload()
        expect(page.locator(".msg")).to_have_count(4)
        expect(page.locator(".msg.assistant").nth(0).locator(".error")).to_have_text(BUSY)
        assert page.locator(".msg").all_inner_texts() == live


def test_while_the_provider_is_retried_the_status_does_not_say_streaming(
    loopback: LoopbackServer,
) -> None:
    loopback.script(error(503, "overloaded", headers={"retry-after": "2"}), text("Back again."))
    agent = _loopback_agent(loopback, max_retries=1)
    with _served(agent) as (url, launched, watch):
        page = _open(launched, watch, url)
        _send(page, "Hello")
        status = page.locator("#status")
        # The server's data-retry part, in words, until the answer's text comes (it follows
        # the 503 at once: "Waiting for the model…" may last only a moment before it).
        retrying = "The model provider is unavailable; retrying in 2 s (attempt 2 of 2)…"
        expect(status).to_have_text(retrying)
        seen: list[str] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not page.locator(".msg.assistant .md").count():
            seen.append(str(status.text_content()))
            page.wait_for_timeout(100)
        assert len(loopback.requests) == 2  # it was retried
        assert "Streaming…" not in seen and seen.count(retrying) >= 3, seen
        expect(page.locator(".msg.assistant .text")).to_have_text("Back again.")
        expect(status).to_have_text("")


# ---- waiting calls ------------------------------------------------------------------------


class Target(BaseModel):
    target: str


class Color(BaseModel):
    hint: str


def test_waiting_calls_show_as_waiting_without_regenerate(tmp_path: Path) -> None:
    deploy = hs.tool(
        name="deploy", input_schema=Target, execute=lambda t: "ok", needs_approval=True
    )
    pick = hs.tool(name="pick_color", input_schema=Color, description="The app asks the user.")
    agent = hs.Agent(name="ops", model="helix/demo", tools=[deploy, pick])
    with _served(agent) as (url, launched, watch):
        page = _open(launched, watch, url)
        _send(page, "Please pick a color")
        card = page.locator(".msg.assistant .tool")
        expect(card.locator(".badge")).to_have_text("waiting for the app")
        expect(card.locator(".tool-wait")).to_contain_text("This tool runs in the app")
        expect(page.locator(".regenerate")).to_have_count(0)
        expect(page.locator("#status")).to_have_text("")
        page.locator("#new-chat").click()
        _send(page, "Please deploy to Production")
        card = page.locator(".msg.assistant .tool")
        expect(card.locator(".badge")).to_have_text("needs approval")
        expect(page.locator(".regenerate")).to_have_count(0)
        _shot(page, tmp_path, "waiting_approval")
        card.get_by_role("button", name="Approve").click()
        expect(card.locator(".badge")).to_have_text("done")
        expect(page.locator(".regenerate")).to_have_count(1)  # answered: offered again


def test_a_sign_in_link_waits_then_the_chat_continues_by_itself(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar, strategy = Calendar(), ServedCallback()
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("One standup."))
    with _served(calendar_agent(loopback, calendar.tools(strategy))) as (url, launched, watch):
        strategy.inner = oauth.strategy(redirect_uri=f"{url}/api/auth/callback")
        page = _open(launched, watch, url)
        _send(page, "What is on monday?")
        card = page.locator(".msg.assistant .tool")
        expect(card.locator(".badge")).to_have_text("waiting for sign-in")
        link = card.locator("a.sign-in")
        expect(link).to_have_text("Sign in to loopback")
        expect(link).to_have_attribute("rel", "noopener")
        expect(page.locator(".regenerate")).to_have_count(0)
        _shot(page, tmp_path, "sign_in")
        with page.context.expect_page() as opened:
            link.click()
        callback = opened.value
        expect(callback.locator("h1")).to_have_text("Signed in")
        # The callback tab told this one; it continued the turn without a click here.
        expect(card.locator(".badge")).to_have_text("done")
        expect(card.locator("a.sign-in")).to_have_count(0)  # the stale link is gone
        expect(card.locator(".tool-output")).to_contain_text('"events"')
        expect(page.locator(".msg.assistant .text")).to_have_text("One standup.")
        expect(page.locator(".msg.assistant")).to_have_count(1)
        before = page.locator(".msg").all_inner_texts()
        page.reload()
        expect(page.locator(".msg")).to_have_count(2)
        assert page.locator(".msg").all_inner_texts() == before
        assert calendar.tokens == [oauth.issued[0]]


# ---- the Context panel --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "words"),
    [("instruction", "Write the instruction first."), ("disable", "Name at least one tool.")],
)
def test_the_context_panel_checks_its_input_before_sending(kind: str, words: str) -> None:
    with _served(demo_agent("helix/demo")) as (url, launched, watch):
        page = _open(launched, watch, url)
        _send(page, "Hello")
        expect(page.locator(".msg.assistant .text")).to_have_text("You said: Hello")
        posted: list[str] = []
        page.on("request", lambda r: posted.append(r.url) if "/context" in r.url else None)
        page.locator("#ctx-kind").select_option(kind)
        page.locator("#ctx-text").fill("   ")
        page.locator("#ctx-add").click()
        expect(page.locator("#ctx-error")).to_have_text(words)
        expect(page.locator(".ctx-log li")).to_have_count(0)
        assert posted == []  # nothing was sent
        page.locator("#ctx-text").fill("get_time")
        expect(page.locator("#ctx-error")).to_be_hidden()
