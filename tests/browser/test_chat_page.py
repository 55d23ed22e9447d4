"""The demo page as a user meets it, in chromium: a reload mid-answer, Stop, a second tab, a
refused send, long words, a phone, and the Context panel before the first message.

See ``_browser.py`` for what it needs (skipped, with the reason, without it). The answers come
from ``helix/demo-slow`` ("You said: ...", 30 ms a word): a long message makes a long answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.server._demo import demo_agent, demo_app
from tests.browser._browser import Watch, browser, layout_width, new_page
from tests.conformance._client import serve_app

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import Page, expect

expect.set_options(timeout=20_000)
# About 6 s of answer at 30 ms a word: time to reload, stop or open a tab in the middle.
ADDED = "Added: the agent sees it at its next model call."
LONG = " ".join(f"word{i}" for i in range(200))


class Demo:
    """A demo server, a browser, and the server's view of a session."""

    def __init__(self, base_url: str, launched: Any, watch: Watch) -> None:
        self.base_url, self.launched, self.watch = base_url, launched, watch

    def page(self, width: int = 1280, height: int = 860, session: str | None = None) -> Page:
        page = new_page(self.launched, self.watch, width, height)
        page.goto(f"{self.base_url}/" + (f"#session={session}" if session else ""))
        expect(page.locator("#session-id")).not_to_have_text("")
        return page

    def stored(self, session: str) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.base_url}/api/chat/{session}/messages", timeout=10)
        assert response.status_code == 200
        messages: list[dict[str, Any]] = response.json()
        return messages


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    with browser() as (launched, watch):
        litellm_module()  # import it now, not during the first streamed answer
        executor = hs.Executor(store=hs.SQLiteStore(str(tmp_path / "demo.db")))
        with serve_app(demo_app(executor, demo_agent("helix/demo-slow"))) as base_url:
            yield Demo(base_url, launched, watch)
        assert watch.scripts_clean() == []


def _send(page: Page, text: str) -> None:
    expect(page.locator("#stop")).to_be_hidden()  # no answer runs (one that runs is steered)
    page.locator("#input").fill(text)
    page.locator("#input").press("Enter")


def _session(page: Page) -> str:
    return str(page.locator("#session-id").text_content())


def _answer_text(page: Page, index: int = -1) -> str:
    texts = page.locator(".msg.assistant").nth(index).locator(".text").all_text_contents()
    return "".join(texts)


def test_a_reload_mid_answer_resumes_it_to_its_end(demo: Demo) -> None:
    page = demo.page()
    _send(page, LONG)
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".text.streaming")).to_contain_text("word5 ")
    page.reload()  # the POST is gone; the turn runs on, and the page follows it again
    expect(page.locator(".msg.assistant .text.streaming")).to_have_count(1)
    expect(page.locator(".msg.assistant .text")).to_have_text(f"You said: {LONG}")
    expect(page.locator(".msg.assistant .text.streaming")).to_have_count(0)
    expect(page.locator(".marker")).to_have_count(0)  # it ran to its end
    expect(page.locator("#stop")).to_be_hidden()
    assert page.locator(".msg").count() == 2
    stored = demo.stored(_session(page))
    assert stored[1]["parts"][-1]["text"] == f"You said: {LONG}"
    assert "metadata" not in stored[1]
    assert demo.watch.failed == []


def test_stop_ends_the_answer_on_the_server_and_marks_it_interrupted(demo: Demo) -> None:
    page = demo.page()
    _send(page, LONG)
    expect(page.locator(".msg.assistant .text.streaming")).to_contain_text("word5 ")
    page.locator("#stop").click()
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".marker")).to_have_text("interrupted")
    expect(page.locator("#stop")).to_be_hidden()
    expect(answer.locator(".text.streaming")).to_have_count(0)
    shown = _answer_text(page)
    assert shown.startswith("You said: word0") and len(shown) < len(f"You said: {LONG}")
    stored = demo.stored(_session(page))
    assert stored[1]["metadata"] == {"interrupted": True}
    assert stored[1]["parts"][-1]["text"] == shown  # what the user saw is what is stored
    page.reload()  # the same screen after a reload
    expect(page.locator(".msg.assistant .marker")).to_have_text("interrupted")
    assert _answer_text(page) == shown
    _send(page, "Still there?")  # the session is usable at once
    expect(page.locator(".msg.assistant").last.locator(".text")).to_have_text(
        "You said: Still there?"
    )
    assert demo.watch.failed == []


def test_a_second_tab_follows_the_answer_and_a_send_from_another_tab_steers_it(
    demo: Demo,
) -> None:
    first = demo.page()
    _send(first, "Hello")
    expect(first.locator(".msg.assistant .text")).to_have_text("You said: Hello")
    session = _session(first)
    idle_tab = demo.page(session=session)  # opened while nothing runs
    expect(idle_tab.locator(".msg")).to_have_count(2)
    _send(first, LONG)
    expect(first.locator(".msg.assistant").last.locator(".text")).to_contain_text("word5 ")
    # A tab opened now shows the running answer, then its end.
    follower = demo.page(session=session)
    expect(follower.locator(".msg.assistant").last.locator(".text.streaming")).to_have_count(1)
    # The idle tab sends meanwhile: not refused, it steers the running answer (202), which
    # every tab then shows in place, followed by the answer to it.
    _send(idle_tab, "Me too")
    expect(idle_tab.locator("#notice")).to_be_hidden()
    expect(idle_tab.locator("#input")).to_have_value("")
    for page in (first, follower, idle_tab):  # the sending tab follows the running answer too
        answer = page.locator(".msg.assistant").last
        expect(answer.locator(".text").first).to_have_text(f"You said: {LONG}")
        expect(answer.locator(".steered")).to_have_text("you addedMe too")
        expect(answer.locator(".text").last).to_have_text("You said: Me too")
        expect(page.locator(".msg")).to_have_count(4)
    stored = demo.stored(session)
    assert [m["role"] for m in stored] == ["user", "assistant"] * 2
    assert demo.watch.failed == []


def test_regenerate_replaces_the_last_answer(demo: Demo) -> None:
    page = demo.page()
    _send(page, "Hello there")
    expect(page.locator(".msg.assistant .text")).to_have_text("You said: Hello there")
    first_id = page.locator(".msg.assistant").get_attribute("data-message-id")
    page.locator(".regenerate").click()
    expect(page.locator(".msg.assistant .text")).to_have_text("You said: Hello there")
    expect(page.locator(".msg.assistant")).not_to_have_attribute("data-message-id", str(first_id))
    expect(page.locator(".msg")).to_have_count(2)
    stored = demo.stored(_session(page))
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["id"] == page.locator(".msg.assistant").get_attribute("data-message-id")


def _no_overflow(page: Page) -> None:
    width = layout_width(page)
    assert width["scroll"] == width["window"], width
    for selector in ("#send", "#panel", "#new-chat"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["x"] + box["width"] <= width["window"], selector


def test_long_words_wrap_in_messages_tool_cards_and_panel_answers(demo: Demo) -> None:
    page = demo.page()
    token = "Q" + "x" * 299
    url = "https://example.com/" + "a/" * 70
    _send(page, f"What is the weather in {token}?")
    expect(page.locator(".tool .badge")).to_have_text("done")
    expect(page.locator(".tool-input")).to_contain_text(token)
    _send(page, url)
    expect(page.locator(".msg.assistant").last.locator(".text")).to_have_text(f"You said: {url}")
    page.locator("#ctx-text").fill(token)
    expect(page.locator("#ctx-text")).to_have_value(token)
    page.locator("#ctx-add").click()
    expect(page.locator(".ctx-log li").first.locator(".answer")).to_have_text(ADDED)
    _no_overflow(page)
    page.reload()  # and restored from the server, the same
    expect(page.locator(".msg")).to_have_count(4)
    _no_overflow(page)


def test_a_phone_gets_a_one_line_header_and_a_context_drawer(demo: Demo) -> None:
    page = demo.page(width=390, height=844)
    header = page.locator(".topbar").bounding_box()
    assert header is not None and header["height"] < 60  # one line, not four
    middles = [_middle(page, s) for s in (".brand", "#session-id", "#new-chat", "#panel-toggle")]
    assert max(middles) - min(middles) <= 2, middles  # all on one line
    expect(page.locator("#panel")).to_be_hidden()  # the chat has the screen
    _no_overflow_phone(page)
    _send(page, "Hello from a phone")
    expect(page.locator(".msg.assistant .text")).to_have_text("You said: Hello from a phone")
    page.locator("#panel-toggle").click()
    expect(page.locator("#panel")).to_be_visible()
    box = page.locator("#panel").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    page.locator("#ctx-text").fill("Answer in French.")
    page.locator("#ctx-add").click()
    expect(page.locator(".ctx-log li").first.locator(".answer")).to_have_text(ADDED)
    page.locator("#panel-toggle").click()
    expect(page.locator("#panel")).to_be_hidden()
    _no_overflow_phone(page)


def _middle(page: Page, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return float(box["y"] + box["height"] / 2)


def _no_overflow_phone(page: Page) -> None:
    width = layout_width(page)
    assert width == {"scroll": 390, "window": 390}, width
    for selector in ("#new-chat", "#panel-toggle", "#send"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, selector


def test_the_context_panel_waits_for_the_first_message(demo: Demo) -> None:
    page = demo.page()
    expect(page.locator("#ctx-hint")).to_be_visible()
    expect(page.locator("#ctx-add")).to_be_disabled()
    expect(page.locator("#ctx-text")).to_be_disabled()
    _send(page, "Hello")
    expect(page.locator(".msg.assistant .text")).to_have_text("You said: Hello")
    expect(page.locator("#ctx-hint")).to_be_hidden()
    page.locator("#ctx-text").fill("Answer in French.")
    page.locator("#ctx-add").click()
    expect(page.locator(".ctx-log li").first.locator(".answer")).to_have_text(ADDED)
    page.locator("#new-chat").click()  # a new chat waits again
    expect(page.locator("#ctx-add")).to_be_disabled()
    page.reload()  # a reload of a chat with no message yet: [] from the server, no error
    expect(page.locator("#ctx-hint")).to_be_visible()
    assert demo.watch.failed == []
