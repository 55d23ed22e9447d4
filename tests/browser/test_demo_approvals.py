"""Approvals on the demo page, in chromium: Approve runs the call; a call left waiting when the
user sends a new message ends on its own message ("cancelled: a new message was sent"), without
its buttons, and a reload shows the same screen.

See ``_browser.py`` for what it needs (skipped, with the reason, without it). The agent is the
demo page's own app with one tool that needs approval, on the ``helix/demo`` model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.server._demo import demo_app
from tests.browser._browser import browser, new_page
from tests.conformance._client import serve_app

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import Page, expect

expect.set_options(timeout=20_000)


class Target(BaseModel):
    target: str


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    deploy = hs.tool(
        name="deploy",
        input_schema=Target,
        execute=lambda t: f"deployed {t.target}",
        needs_approval=True,
    )
    agent = hs.Agent(name="ops", model="helix/demo", tools=[deploy])
    litellm_module()  # import it now, not during the first streamed answer
    executor = hs.Executor(store=hs.SQLiteStore(str(tmp_path / "demo.db")))
    with browser() as (launched, watch), serve_app(demo_app(executor, agent)) as base_url:
        page = new_page(launched, watch)
        page.goto(f"{base_url}/")
        yield page
        assert watch.failed == []
        assert watch.scripts_clean() == []


def _send(page: Page, text: str) -> None:
    expect(page.locator("#stop")).to_be_hidden()  # no answer runs (one that runs is steered)
    page.locator("#input").fill(text)
    page.locator("#input").press("Enter")


def _screen(page: Page) -> list[Any]:
    """What the messages show: each message's text and tool cards' states."""
    expect(page.locator("#stop")).to_be_hidden()
    return [
        (m.inner_text(), m.locator(".tool").evaluate_all("ts => ts.map(t => t.dataset.state)"))
        for m in page.locator(".msg").all()
    ]


def test_approve_runs_the_call_and_continues_its_message(page: Page) -> None:
    _send(page, "Please deploy to Production")
    card = page.locator(".msg.assistant .tool")
    expect(card).to_have_attribute("data-state", "approval-requested")
    card.get_by_role("button", name="Approve").click()
    expect(card).to_have_attribute("data-state", "output-available")
    expect(card.locator(".tool-output")).to_have_text("deployed Production")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(page.locator(".msg.assistant")).to_have_count(1)  # the same message, continued
    expect(page.locator(".msg.assistant .text")).to_contain_text("deployed Production")


def test_a_call_left_waiting_ends_on_its_message_and_a_reload_shows_the_same(
    page: Page,
) -> None:
    _send(page, "Please deploy to Production")
    first = page.locator(".msg.assistant").nth(0)
    expect(first.locator(".tool")).to_have_attribute("data-state", "approval-requested")
    expect(first.get_by_role("button", name="Deny")).to_be_visible()

    _send(page, "Thanks, never mind")
    card = first.locator(".tool")
    expect(card).to_have_attribute("data-state", "output-error")
    expect(card.locator(".tool-output")).to_have_text("cancelled: a new message was sent")
    expect(card.get_by_role("button")).to_have_count(0)  # no Approve, no Deny
    second = page.locator(".msg.assistant").nth(1)
    expect(second.locator(".text")).to_have_text("You said: Thanks, never mind")
    expect(second.locator(".tool")).to_have_count(0)  # the new answer does not carry the call
    before = _screen(page)

    page.reload()
    expect(page.locator(".msg")).to_have_count(4)
    assert _screen(page) == before
