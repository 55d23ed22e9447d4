"""The built site loads nothing from another host: no script, stylesheet, font, image or frame
from an absolute URL (links a reader clicks may go anywhere). The browser test checks the same
live; this one also runs where there is no chromium."""

from __future__ import annotations

import re
from pathlib import Path

_LOADED = re.compile(
    r"<(?:script|img|iframe|source)\b[^>]*\bsrc=\"(https?:)?//[^\"]+\"|"
    r"<link\b[^>]*\bhref=\"(?:https?:)?//[^\"]+\"[^>]*>"
)


def test_no_page_loads_anything_from_another_host(site: Path) -> None:
    found = [
        f"{page.relative_to(site)}: {match[0][:120]}"
        for page in sorted(site.rglob("*.html"))
        for match in _LOADED.finditer(page.read_text())
        if 'rel="canonical"' not in match[0]
    ]
    assert found == []


def test_the_stylesheets_fetch_no_fonts() -> None:
    # font: false in mkdocs.yml: the theme uses the system's fonts, not Google Fonts.
    config = (Path(__file__).resolve().parents[2] / "mkdocs.yml").read_text()
    assert re.search(r"^\s+font: false", config, re.M)
