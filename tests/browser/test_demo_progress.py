"""The demo page shows a sub-agent's progress live in its tool card (``as_tool(stream_progress=
True)``), then the call's result (a reload shows only the result), and says in words that the
provider is retried (the ``data-retry`` part). In chromium (see ``_browser.py``; skipped, with
the reason, without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.server._demo import demo_app
from tests._sub_agents import FINAL_OUTPUT, lead_agent, script_turn
from tests.browser._browser import browser, new_page
from tests.conformance._client import serve_app
from tests.loopback import LoopbackServer, Reply, text

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
from playwright.sync_api import expect

expect.set_options(timeout=20_000)


def test_a_sub_agent_s_progress_shows_live_then_its_result(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    litellm_module()  # import it now, not during the first streamed answer
    script_turn(loopback, delay=0.4)  # the sub-agent writes slowly enough to watch
    app = demo_app(hs.Executor(store=hs.MemoryStore()), lead_agent(loopback, progress=True))
    with browser() as (launched, watch), serve_app(app) as url:
        page = new_page(launched, watch)
        page.goto(f"{url}/")
        expect(page.locator("#session-id")).not_to_have_text("")
        page.locator("#input").fill("Ask the researcher")
        page.locator("#input").press("Enter")
        card = page.locator('.tool[data-tool-call-id="call_child"]')
        # While the sub-agent runs: its text grows, and its own call shows with its state.
        expect(card.locator(".badge").first).to_have_text("working")
        expect(card.locator(".progress-text")).to_contain_text("Let me")
        call = card.locator('.progress-call[data-tool-call-id="call_inner"]')
        expect(call).to_have_text("inner()done")
        expect(card.locator(".progress-text")).to_contain_text("Let me look.")
        # The page, not the card: the card is re-rendered as the progress grows.
        page.screenshot(path=str(tmp_path / "sub_agent_progress.png"))
        # The result replaces the progress; the lead answers.
        expect(card.locator(".tool-output")).to_have_text(FINAL_OUTPUT)
        expect(card.locator(".badge").first).to_have_text("done")
        expect(card.locator(".progress")).to_have_count(0)
        expect(page.locator(".msg.assistant .md").last).to_have_text("The child says y.")
        expect(page.locator("#status")).to_have_text("")
        live = page.locator(".msg").all_inner_texts()
        page.reload()
        expect(page.locator(".msg")).to_have_count(2)
        expect(card.locator(".tool-output")).to_have_text(FINAL_OUTPUT)
        expect(card.locator(".progress")).to_have_count(0)
        assert page.locator(".msg").all_inner_texts() == live
        assert watch.scripts_clean() == []


def test_stop_while_a_sub_agent_works_leaves_its_card_stopped(loopback: LoopbackServer) -> None:
    litellm_module()
    script_turn(loopback, delay=1.0)
    app = demo_app(hs.Executor(store=hs.MemoryStore()), lead_agent(loopback, progress=True))
    with browser() as (launched, watch), serve_app(app) as url:
        page = new_page(launched, watch)
        page.goto(f"{url}/")
        expect(page.locator("#session-id")).not_to_have_text("")
        page.locator("#input").fill("Ask the researcher")
        page.locator("#input").press("Enter")
        card = page.locator('.tool[data-tool-call-id="call_child"]')
        expect(card.locator(".badge").first).to_have_text("working")
        page.locator("#stop").click()
        expect(page.locator("#send")).to_be_enabled()
        # The call never got its result: its card says so, with what the sub-agent had done.
        expect(card.locator(".badge").first).to_have_text("stopped")
        expect(card.locator(".progress-text")).to_contain_text("Let")
        expect(page.locator(".msg.assistant .marker")).to_have_text("interrupted")
        page.reload()  # the stored answer: interrupted, with no result for the call
        expect(page.locator(".msg.assistant .marker")).to_have_text("interrupted")
        expect(page.locator(".progress")).to_have_count(0)
        assert watch.scripts_clean() == []


def test_a_provider_that_does_not_answer_is_retried_with_the_status_in_words(
    loopback: LoopbackServer,
) -> None:
    # The first attempt gets no byte within first_chunk: the server retries, and says so.
    loopback.script(Reply(wait_headers=True, stall_for=3.0), text("Back again."))
    agent = hs.Agent(
        name="helix-demo",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        max_retries=1,
        timeout=hs.Timeout(first_chunk=1.0),
    )
    litellm_module()
    with browser() as (launched, watch), serve_app(demo_app(hs.Executor(), agent)) as url:
        page = new_page(launched, watch)
        page.goto(f"{url}/")
        expect(page.locator("#session-id")).not_to_have_text("")
        page.locator("#input").fill("Hello")
        page.locator("#input").press("Enter")
        status = page.locator("#status")
        expect(status).to_have_text("The model has not answered yet; retrying (attempt 2 of 2)…")
        expect(page.locator(".msg.assistant .text")).to_have_text("Back again.")
        expect(status).to_have_text("")  # cleared once the answer came and the turn ended
        assert len(loopback.requests) == 2
        assert watch.scripts_clean() == []
