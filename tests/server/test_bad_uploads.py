"""A file that is not what it says is refused at the edge, naming its part, with nothing written;
a stored file a provider refuses later has a way out: editing that message (README,
"Regenerate, files and data parts")."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, error, text
from tests.server._asgi import sse_data
from tests.server.conftest import chat, user

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 13
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 8
GIF = b"GIF89a\x01\x00\x01\x00" + b"\x00" * 8
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8 " + b"\x00" * 8
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"
HTML = b"<html><script>alert(1)</script></html>"


class Tenant(BaseModel):
    name: str


def _text(body: bytes) -> str:
    chunks = [x for x in sse_data(body) if isinstance(x, dict)]
    return "".join(x["delta"] for x in chunks if x["type"] == "text-delta")


def _failed(body: bytes) -> bool:
    return any(isinstance(x, dict) and x["type"] == "error" for x in sse_data(body))


def data_url(media_type: str, content: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(content).decode()}"


def upload(media_type: str, url: str, id: str = "u2") -> dict[str, Any]:
    parts = [
        {"type": "text", "text": "Look."},
        {"type": "file", "mediaType": media_type, "url": url},
    ]
    return {"id": id, "role": "user", "parts": parts}


BAD = {
    "declared-png-url-says-html": ("image/png", data_url("text/html", HTML), "data: URL says 'text/html'"),
    "png-bytes-are-html": ("image/png", data_url("image/png", HTML), "bytes are not a image/png"),
    "jpeg-bytes-are-png": ("image/jpeg", data_url("image/jpeg", PNG), "bytes are not a image/jpeg"),
    "gif-bytes-are-webp": ("image/gif", data_url("image/gif", WEBP), "bytes are not a image/gif"),
    "webp-bytes-are-gif": ("image/webp", data_url("image/webp", GIF), "bytes are not a image/webp"),
    "pdf-bytes-are-html": ("application/pdf", data_url("application/pdf", HTML), "not a application/pdf"),
    "png-not-base64": ("image/png", "data:image/png,%89PNG", "must be base64"),
    "png-broken-base64": ("image/png", data_url("image/png", PNG) + "!!", "not valid base64"),
    "text-declared-url-says-png": ("text/plain", data_url("image/png", PNG), "data: URL says 'image/png'"),
    "no-comma": ("image/png", "data:image/png;base64", "no ','"),
}  # fmt: skip


@pytest.mark.parametrize(("declared", "url", "says"), list(BAD.values()), ids=list(BAD))
async def test_a_file_that_is_not_what_it_says_is_a_400_naming_its_part_and_nothing_is_written(
    executor: hs.Executor, make_client: Any, declared: str, url: str, says: str
) -> None:
    client = make_client(create_app(executor, hs.Agent(name="up", model="helix/demo")))
    assert (await client.post("/api/chat", json=chat("s", user("Hi")))).status_code == 200
    history = (await client.get("/api/chat/s/messages")).json()
    before = await executor.store.read_snapshot("s")
    response = await client.post("/api/chat", json=chat("s", *history, upload(declared, url)))
    assert response.status_code == 400, response.text
    problem = response.json()["error"]
    assert problem["code"] == "invalid_request"
    assert "messages[2]" in problem["message"] and "'u2'" in problem["message"]
    assert "part 1" in problem["message"] and says in problem["message"], problem["message"]
    assert await executor.store.read_snapshot("s") == before
    # A new chat's first message: no session is made.
    first = await client.post("/api/chat", json=chat("new", upload(declared, url, id="u1")))
    assert first.status_code == 400 and "messages[0]" in first.json()["error"]["message"]
    assert await executor.store.get_session("new") is None


@pytest.mark.parametrize(
    ("media_type", "content"),
    [("image/png", PNG), ("image/jpeg", JPEG), ("image/gif", GIF), ("image/webp", WEBP),
     ("application/pdf", PDF), ("text/plain", b"any bytes are text"),
     ("text/csv", b"a,b\n1,2\n")],
)  # fmt: skip
async def test_a_file_that_is_what_it_says_reaches_the_model(
    loopback: LoopbackServer,
    executor: hs.Executor,
    make_client: Any,
    media_type: str,
    content: bytes,
) -> None:
    agent = hs.Agent(name="up", model="openai/loopback", settings=_settings(loopback))
    client = make_client(create_app(executor, agent))
    url = data_url(media_type, content)
    response = await client.post("/api/chat", json=chat("s", upload(media_type, url, id="u1")))
    assert response.status_code == 200 and '"finish"' in response.text, response.text
    sent = loopback.bodies()[-1]["messages"][-1]["content"][1]
    assert url in (sent.get("image_url", {}).get("url"), sent.get("file", {}).get("file_data"))


async def test_the_python_api_checks_the_files_of_its_input_and_writes_nothing(
    executor: hs.Executor,
) -> None:
    agent = hs.Agent(name="up", model="helix/demo")
    await executor.run(agent, "s", "Hi").consume()
    before = await executor.store.read_snapshot("s")
    bad_image = {"type": "image_url", "image_url": {"url": data_url("image/png", HTML)}}
    bad_pdf = {
        "type": "file",
        "file": {"file_data": data_url("text/html", HTML), "format": "application/pdf"},
    }
    for part, says in ((bad_image, "bytes are not a image/png"), (bad_pdf, "says 'text/html'")):
        message = {"role": "user", "content": [{"type": "text", "text": "Look."}, part]}
        with pytest.raises(hs.InvalidRequestError, match=f"input part 1: .*{says}"):
            executor.run(agent, "s", message)  # refused when called, as its other checks
        assert await executor.store.read_snapshot("s") == before
    good = {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}}
    result = executor.run(agent, "s", {"role": "user", "content": [good]})
    await result.consume()
    assert result.error is None and result.finish_reason == "stop"


async def test_a_stored_file_the_provider_refuses_is_left_behind_by_editing_its_message(
    loopback: LoopbackServer, executor: hs.Executor, make_client: Any
) -> None:
    """An https image is not fetched (so not checked); the provider refuses it, and every turn
    replaying it too. Editing that message (useChat's sendMessage({messageId})) rewinds the
    session to before it: the next request has no trace of the file."""
    agent = hs.Agent(name="up", model="openai/loopback", settings=_settings(loopback))
    client = make_client(create_app(executor, agent))
    bad = upload("image/png", "https://example.com/not-really.png", id="u1")
    refused = "Invalid image: the data is not a PNG"
    loopback.script(error(400, refused), error(400, refused))
    first = await client.post("/api/chat", json=chat("s", bad))
    assert _failed(first.content)
    assert (await executor.session("s")).status == "failed"
    again = await client.post("/api/chat", json=chat("s", bad, user("Hello?", "u2")))
    assert _failed(again.content)
    assert "not-really.png" in loopback.requests[-1].decode()  # replayed: refused again
    loopback.script(text("Sure."))
    edited = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Look (no file)."}]}
    fixed = await client.post("/api/chat", json=chat("s", edited, messageId="u1"))
    assert fixed.status_code == 200 and _text(fixed.content) == "Sure."
    assert "not-really.png" not in loopback.requests[-1].decode()
    messages = (await client.get("/api/chat/s/messages")).json()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["parts"] == edited["parts"] and messages[0]["id"] == "u1"
    assert (await executor.session("s")).status == "idle"


async def test_an_edit_that_is_refused_writes_nothing(
    executor: hs.Executor, make_client: Any
) -> None:
    @hs.tool(context_schema=Tenant)
    def whoami(ctx: hs.ToolContext) -> str:
        """Who."""
        return str(ctx.context.name)

    def run_options(request: Any, auth: Any) -> dict[str, Any]:
        tenant = request.headers.get("x-tenant")
        return {"tools_context": {"whoami": {"name": tenant}}} if tenant else {}

    agent = hs.Agent(name="t", model="helix/demo", tools=[whoami])
    client = make_client(create_app(executor, agent, run_options=run_options))
    ok = await client.post("/api/chat", json=chat("s", user("Hi")), headers={"x-tenant": "acme"})
    assert ok.status_code == 200
    before = await executor.store.read_snapshot("s")
    edited = user("Hello instead", "u1")
    refused = await client.post("/api/chat", json=chat("s", edited, messageId="u1"))
    assert refused.status_code == 400 and "tools_context" in refused.json()["error"]["message"]
    assert await executor.store.read_snapshot("s") == before


def _settings(loopback: LoopbackServer) -> dict[str, Any]:
    """The loopback's litellm params, but the model (an Agent's own argument)."""
    llm = loopback.llm()
    llm.pop("model")
    return llm
