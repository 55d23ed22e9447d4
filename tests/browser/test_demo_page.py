"""The demo page in a real browser (Playwright + Debian's chromium): chat, tools, context panel.

See ``_browser.py`` for what it needs (skipped, with the reason, without it). A screenshot is
saved under the test's tmp dir and copied to /tmp/helix_demo.png.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.server._demo import demo_agent, demo_app
from tests.browser._browser import browser, new_page
from tests.conformance._client import serve_app

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import Page, expect

SCREENSHOT_COPY = Path("/tmp/helix_demo.png")
# The first chat in a process imports litellm (seconds on a loaded machine): wait for it.
expect.set_options(timeout=20_000)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    litellm_module()  # import it now, not during the first streamed answer
    store = hs.SQLiteStore(str(tmp_path / "demo.db"))
    app = demo_app(hs.Executor(store=store), demo_agent("helix/demo-slow"))
    with browser() as (launched, watch), serve_app(app) as base_url:
        page = new_page(launched, watch)
        page.goto(f"{base_url}/")
        yield page
        # No script error, no failed request (a new chat's message list is [], not a 404).
        assert watch.failed == []
        assert watch.scripts_clean() == []


def _send(page: Page, text: str) -> None:
    # No answer runs (a message sent while one runs would steer it: test_demo_steering.py).
    expect(page.locator("#stop")).to_be_hidden()
    page.locator("#input").fill(text)
    page.locator("#input").press("Enter")


def test_chat_with_tools_and_steer_it_from_the_context_panel(page: Page, tmp_path: Path) -> None:
    expect(page).to_have_title("helix-stream demo")
    expect(page.locator("#meta")).to_have_text("agent helix-demo · model helix/demo-slow")
    expect(page.locator("#tools-hint")).to_have_text(
        "Tools: get_weather, convert_currency, get_time"
    )

    _send(page, "What is the weather in Paris?")
    answer = page.locator(".msg.assistant").nth(0)
    tool = answer.locator(".tool")
    expect(tool.locator(".tool-name")).to_have_text("get_weather()")
    expect(tool).to_have_attribute("data-state", "output-available")
    expect(tool.locator(".badge")).to_have_text("done")
    expect(tool.locator(".tool-input")).to_have_text('{\n  "city": "Paris"\n}')
    expect(tool.locator(".tool-output")).to_contain_text('"city": "Paris"')
    expect(answer.locator(".text")).to_contain_text('Done: get_weather returned {"city": "Paris"')
    expect(page.locator("#stop")).to_be_hidden()

    page.locator("#ctx-kind").select_option("instruction")
    page.locator("#ctx-text").fill("Answer in French.")
    page.locator("#ctx-add").click()
    expect(page.locator(".ctx-log li").first.locator(".answer")).to_have_text(
        "Added: the agent sees it at its next model call."
    )

    _send(page, "Hello again")
    second = page.locator(".msg.assistant").nth(1)
    expect(second.locator(".text.streaming")).to_have_count(1)  # it streams word by word
    expect(second.locator(".text")).to_have_text(
        "You said: Hello again (Following the instruction: Answer in French.)"
    )
    expect(second.locator(".text.streaming")).to_have_count(0)
    expect(page.locator(".msg")).to_have_count(4)  # the context row is never shown

    page.locator("#ctx-kind").select_option("disable")
    page.locator("#ctx-text").fill("get_weather")
    page.locator("#ctx-add").click()
    expect(page.locator(".ctx-log li").first.locator(".answer")).to_have_text(
        "Switched off: the agent cannot call them from its next model call."
    )
    expect(page.locator(".ctx-log li").first.locator(".warning")).to_have_count(0)
    page.locator("#ctx-text").fill("get_wether")  # a typo: recorded (harmless), with a warning
    page.locator("#ctx-add").click()
    latest = page.locator(".ctx-log li").first
    expect(latest.locator(".answer")).to_have_text("Recorded, with a warning:")
    expect(latest.locator(".warning")).to_have_text(
        "The agent has no tool named “get_wether”: this changes nothing. Its tools: "
        "get_weather, convert_currency, get_time."
    )
    _send(page, "And the weather in Oslo?")
    skipped = page.locator(".msg.assistant").nth(2).locator(".tool")
    expect(skipped.locator(".badge")).to_have_text("not executed")
    expect(skipped.locator(".tool-output")).to_contain_text("tool_inactive")
    expect(page.locator("#stop")).to_be_hidden()

    shot = tmp_path / "helix_demo.png"
    page.set_viewport_size({"width": 1280, "height": 1280})  # the whole conversation in view
    page.screenshot(path=str(shot))
    shutil.copyfile(shot, SCREENSHOT_COPY)

    # A reload restores the conversation from GET /api/chat/{id}/messages.
    page.reload()
    expect(page.locator(".msg")).to_have_count(6)
    expect(page.locator(".msg.assistant").nth(1).locator(".text")).to_have_text(
        "You said: Hello again (Following the instruction: Answer in French.)"
    )
    expect(page.locator(".msg.assistant").nth(2).locator(".badge")).to_have_text("not executed")

    # A new chat has no session yet: the Context panel waits for its first message.
    page.locator("#new-chat").click()
    expect(page.locator("#ctx-add")).to_be_disabled()
    expect(page.locator("#ctx-hint")).to_be_visible()
    expect(page.locator(".ctx-log li")).to_have_count(0)
