"""What a fragment of the docs takes as given: the reader's own names, typed.

A block marked ``<!-- fragment: ... -->`` is not run (it needs a real provider, an OAuth app, the
reader's database), but it is still type-checked (tests/docs/test_code_blocks_typed.py): each
name it uses and does not define itself is imported from here. So a fragment that misspells a
package name, passes a wrong type or uses a name the reader could not have is caught, while the
reader's own placeholders (``check_caller``, ``executor``, ``session_id``) are declared once,
with the type the surrounding text gives them. A name missing here fails the check: declare it
with the type the page promises, never ``Any`` where a type is known.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import litellm
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.state import RunChild
from helix_stream.store import Checkpoint

__all__ = [
    "CRM_URL",
    "EVENTS_URL",
    "BaseModel",
    "Mapping",
    "Protocol",
    "Starlette",
    "agent",
    "app",
    "approval_id",
    "authenticate",
    "authorize",
    "check_caller",
    "code",
    "cp",
    "create_app",
    "creds",
    "customer_lookup",
    "executor",
    "fetch_weather",
    "get_weather",
    "hs",
    "http",
    "key",
    "litellm",
    "lookup_customer",
    "lookup_order",
    "msgs",
    "os",
    "result",
    "run_child",
    "run_tests",
    "sandbox",
    "session",
    "session_id",
    "sessions",
    "shlex",
    "show_sign_in_link",
    "sid",
    "start_litellm_stream",
    "state",
    "store",
    "submit",
    "ticket_updates",
    "token",
    "tool_call_id",
    "url_or_path",
    "user_id",
    "users",
    "weather",
]


# The reader's app: the objects a page built in an earlier block.
executor: hs.Executor = hs.Executor(store=hs.MemoryStore())
store: hs.Store = hs.MemoryStore()
agent = hs.Agent(name="assistant", model="helix/demo")
app: Starlette = Starlette()
http: httpx.AsyncClient = httpx.AsyncClient()
EVENTS_URL = "https://calendar.example.com/events"
CRM_URL = "https://crm.example.com/customers"
url_or_path = "helix.db"
creds: dict[str, Any] = {"headers": {"Authorization": "Bearer ..."}}
token = "Bearer a-users-token"
key = "the-tools-api-key"
msgs: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
result = hs.stream_text(model="helix/demo", prompt="Hi")  # a run the reader started

# Ids the reader's app holds.
session_id = "session-1"
sid = "session-1"
user_id = "user-1"
approval_id = "approval-1"
tool_call_id = "call-1"
state = "state-from-the-redirect"
code = "code-from-the-redirect"
cp: Checkpoint
session: hs.SessionInfo
run_child: RunChild  # how the executor runs a sub-agent's turn (SessionScope.run_child)
sandbox: hs.Sandbox  # a tool's ``await ctx.get_sandbox()``


def check_caller(request: Request) -> str:
    """The reader's ``authenticate``: who is calling."""
    return request.headers.get("authorization", "")


async def _chunks() -> AsyncIterator[object]:
    yield {"choices": []}


async def start_litellm_stream(request: Request) -> AsyncIterator[object]:
    """The reader's ``litellm.acompletion(..., stream=True)`` call for this request."""
    return _chunks()


def authenticate(request: Request) -> str:
    """The reader's ``authenticate``: who is calling."""
    return request.headers.get("authorization", "")


def authorize(auth: str, session_id: str) -> None:
    """The reader's ``authorize``: may this caller use this session (raise if not)."""


def show_sign_in_link(url: str) -> None:
    """The reader's UI showing a sign-in link."""


async def fetch_weather(city: str, *, key: str) -> dict[str, object]:
    """The reader's weather API."""
    return {"city": city}


async def lookup_customer(customer_id: str, *, api_key: str, region: str) -> dict[str, object]:
    """The reader's CRM call."""
    return {"id": customer_id}


@dataclass
class _Update:
    id: str
    summary: str
    sequence: int


async def ticket_updates(session_id: str, *, since: int) -> list[_Update]:
    """The reader's feed of ticket updates."""
    return []


@dataclass
class _User:
    id: str


class _Users(Protocol):
    def by_token(self, token: str) -> _User | None: ...


class _Sessions(Protocol):
    def owned_by(self, session_id: str, user_id: str) -> bool: ...


users: _Users
sessions: _Sessions


@hs.tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather in a city."""
    return {"city": city}


@hs.tool
def lookup_order(order_id: str) -> dict[str, object]:
    """An order by its id."""
    return {"order_id": order_id}


@hs.tool
def run_tests(path: str) -> dict[str, object]:
    """Run the tests under a path."""
    return {"path": path}


weather = get_weather


@hs.tool
def customer_lookup(customer_id: str) -> dict[str, object]:
    """A customer's account."""
    return {"id": customer_id}


@hs.tool
def submit(answer: str) -> str:
    """Submit the final answer."""
    return answer
