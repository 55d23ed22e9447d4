"""A ``CallToolResult``'s blocks as content parts: what a provider takes, and a description of
the rest (pure)."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
)

from helix_stream.mcp._results import tool_output

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 8).decode()


def described(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def test_only_images_a_provider_takes_are_sent_as_images() -> None:
    blob = BlobResourceContents(uri="file:///a.bin", mime_type="application/zip", blob="AAAA")
    result = CallToolResult(
        content=[
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            ImageContent(type="image", data=PNG, mime_type="image/svg+xml"),
            ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),  # not a PNG
            AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            EmbeddedResource(type="resource", resource=blob),
            TextContent(type="text", text="done"),
        ]
    )
    assert tool_output(result) == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        described('{"type": "image", "mime_type": "image/svg+xml", "size_bytes": 16}'),
        described('{"type": "image", "mime_type": "image/png", "size_bytes": 5}'),
        described('{"type": "audio", "mime_type": "audio/wav", "size_bytes": 3}'),
        described(
            '{"type": "resource", "uri": "file:///a.bin", "mime_type": "application/zip", '
            '"size_bytes": 3}'
        ),
        described("done"),
    ]
