"""The demo page, typing while it answers (docs/guides/serving.md, "Steering"): the input stays
enabled, a message sent then steers the running answer and shows where the answer took it in,
live and after a reload. Headless chromium; skipped, with the reason, where it is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from helix_stream.server._demo import demo_agent
from tests.browser.test_demo_fixes import _open, _send, _served, _shot

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import Page, expect

LONG = " ".join(f"word{i}" for i in range(60))


def test_a_message_typed_while_it_answers_steers_it_and_stays_after_a_reload(
    tmp_path: Path,
) -> None:
    with _served(demo_agent("helix/demo-slow")) as (url, launched, watch):
        page = _open(launched, watch, url)
        _send(page, LONG)
        expect(page.locator(".msg.assistant .text.streaming")).to_contain_text("word3 ")
        expect(page.locator("#send")).to_be_enabled()  # the box is open while it works
        page.locator("#input").fill("Next question")
        page.locator("#input").press("Enter")
        expect(page.locator("#input")).to_have_value("")
        expect(page.locator("#notice")).to_be_hidden()  # sent, not refused

        # The answer takes it in: one assistant message, the steered text in place, then the
        # answer to it, and no other user message in the list.
        answer = page.locator(".msg.assistant")
        expect(answer).to_have_count(1)
        expect(answer.locator(".steered")).to_have_text("you addedNext question")
        expect(answer.locator(".text").last).to_have_text("You said: Next question")
        expect(page.locator("#stop")).to_be_hidden()  # the answer has ended
        expect(page.locator(".msg.user")).to_have_count(1)
        expect(page.locator(".msg.user.pending")).to_have_count(0)
        live = _order(page)
        assert live == ["text", "steered", "text"]
        _shot(page, tmp_path, "steered_live", ".msg.assistant")

        page.reload()
        expect(page.locator(".msg.assistant .steered")).to_have_text("you addedNext question")
        assert _order(page) == live  # where it was delivered, as it was shown live
        expect(page.locator(".msg.user")).to_have_count(1)
        assert watch.failed == []


def _order(page: Page) -> list[str]:
    """The assistant bubble's parts, in order: text or steered."""
    parts = page.locator(".msg.assistant .bubble > .text, .msg.assistant .bubble > .steered")
    order: list[str] = parts.evaluate_all(
        "nodes => nodes.map(n => n.classList.contains('steered') ? 'steered' : 'text')"
    )
    return order
