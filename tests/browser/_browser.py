"""What the browser tests share: Debian's chromium through Playwright, and a page that records
every script error and failed request.

Needs ``pip install playwright`` and a chromium binary (``apt-get install -y chromium``); it never
uses ``playwright install`` (that downloads browsers). A test is skipped, with the reason, when
either is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    """The chromium binary to drive; skips the test when there is none."""
    pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
    candidates = [os.environ.get("HELIX_CHROMIUM", ""), "/usr/bin/chromium"]
    candidates += [shutil.which(n) or "" for n in ("chromium", "chromium-browser")]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    pytest.skip("no chromium binary found (apt-get install -y chromium, or set HELIX_CHROMIUM)")


@dataclass
class Watch:
    """What went wrong on the pages of a browser: script errors and responses of 400 or more."""

    problems: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> Any:
        page.on("pageerror", lambda exc: self.problems.append(str(exc)))
        page.on("console", lambda m: self.problems.append(m.text) if m.type == "error" else None)
        page.on("response", lambda r: self.failed.append(r.url) if r.status >= 400 else None)
        return page

    def scripts_clean(self) -> list[str]:
        return [p for p in self.problems if not p.startswith("Failed to load resource")]


@contextmanager
def browser() -> Iterator[tuple[Any, Watch]]:
    """A headless chromium (``(browser, watch)``); pages made with ``new_page`` report to
    ``watch``."""
    executable = chromium()
    from playwright.sync_api import sync_playwright

    watch = Watch()
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched, watch
        finally:
            launched.close()


def new_page(launched: Any, watch: Watch, width: int = 1280, height: int = 860) -> Any:
    page = launched.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(15_000)
    return watch.attach(page)


def layout_width(page: Any) -> dict[str, int]:
    """The page's scroll width against the window's (equal when nothing overflows)."""
    result: dict[str, int] = page.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, window: window.innerWidth})"
    )
    return result
