"""The built site in headless chromium: the landing page, a guide, a reference page and the
search results for "add_context" render, with no script error and no request to another host."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.browser._browser import browser, new_page


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_site_renders_offline_with_search(served: str, tmp_path: Path) -> None:
    with browser() as (launched, watch):
        page = new_page(launched, watch)
        hosts: list[str] = []
        page.on("request", lambda r: hosts.append(urlparse(r.url).netloc))

        page.goto(f"{served}/index.html")
        assert "helix_stream" in page.title()
        assert page.locator("article h1").first.inner_text().startswith("helix_stream")
        page.screenshot(path=str(tmp_path / "landing.png"))

        page.goto(f"{served}/guides/serving.html")
        assert "useChat" in page.locator("article h1").first.inner_text()

        page.goto(f"{served}/api/server.html")
        assert page.locator('[id="helix_stream.server.create_app"]').count() == 1

        page.goto(f"{served}/index.html")
        page.locator(".md-search__input").first.click()
        page.locator(".md-search__input").first.fill("add_context")
        results = page.locator(".md-search-result__item")
        results.first.wait_for()
        assert results.count() > 0
        assert "add_context" in page.locator(".md-search-result").inner_text()

    assert watch.scripts_clean() == [] and watch.failed == []
    assert set(hosts) == {urlparse(served).netloc}, sorted(set(hosts))
