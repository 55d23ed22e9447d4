"""Declaring a strategy: ``hs.token_auth`` names, ``Tool(auth=...)`` checks, a user's own
interactive object, and the per-step cache seen from one step's calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.auth import AuthSettings, StepTokens, is_interactive
from helix_stream.state import AuthInfo, SessionInfo, TurnInfo


class Query(BaseModel):
    q: str


def app_key(request: hs.TokenRequest) -> hs.Token:
    return hs.Token(token="k")


def test_token_auth_is_named_after_its_function() -> None:
    assert hs.token_auth(app_key).name == f"{__name__}.app_key"
    assert hs.token_auth(app_key, name="crm").name == "crm"


def test_a_lambda_or_a_closure_needs_a_name() -> None:
    def factory() -> Any:
        def inner(request: hs.TokenRequest) -> hs.Token:
            return hs.Token(token="k")

        return inner

    for fn in (lambda r: hs.Token(token="k"), factory()):
        with pytest.raises(TypeError, match="needs name="):
            hs.token_auth(fn)


def test_a_tool_refuses_what_is_not_a_strategy() -> None:
    with pytest.raises(TypeError, match=r"tool 'x': auth= takes hs\.token_auth"):
        hs.tool(name="x", input_schema=Query, execute=lambda i: "", auth="github")  # type: ignore[arg-type]


class Provider:
    """An interactive strategy of the app's own (the protocol, no OAuth library)."""

    name = "own-sso"

    def authorization_url(self, state: str, code_challenge: str) -> str:
        return f"https://sso.example/authorize?state={state}&c={code_challenge}"

    async def exchange(self, code: str, code_verifier: str) -> hs.Token:
        return hs.Token(token=f"sso-{code}", principal_type="user")


def test_an_object_with_the_protocol_is_an_interactive_strategy() -> None:
    tool = hs.tool(name="x", input_schema=Query, execute=lambda i: "", auth=Provider())
    assert tool.auth is not None and is_interactive(tool.auth)
    assert not is_interactive(hs.token_auth(app_key))


def session(id: str, user: str) -> SessionInfo:
    return SessionInfo(id=id, turn=TurnInfo(id="t", sequence=1), auth=AuthInfo(current=user))


async def test_one_step_asks_once_per_principal_even_when_calls_arrive_together() -> None:
    asked: list[Any] = []

    async def get_token(request: hs.TokenRequest) -> hs.Token:
        asked.append(request.principal)
        await asyncio.sleep(0.02)
        return hs.Token(token=f"tok-{request.principal}")

    tool = hs.tool(
        name="crm",
        input_schema=Query,
        execute=lambda i: "",
        auth=hs.token_auth(get_token, name="crm"),
    )
    step = StepTokens(AuthSettings(token_store=hs.MemoryTokenStore(), identify=lambda a: a))
    contexts = [
        step.bind(
            hs.ToolContext(context=None, tool_call_id=f"c{i}", tool_name="crm", session=s), tool
        )
        for i, s in enumerate(
            [session("s1", "alice"), session("s2", "alice"), session("s3", "bob")] * 2
        )
    ]
    tokens = await asyncio.gather(*(ctx.get_token() for ctx in contexts))
    assert sorted(asked) == ["alice", "bob"]
    assert [t.token for t in tokens] == ["tok-alice", "tok-alice", "tok-bob"] * 2


async def test_a_failed_resolution_is_not_retried_within_the_step() -> None:
    asked: list[int] = []

    def get_token(request: hs.TokenRequest) -> hs.Token:
        asked.append(1)
        raise RuntimeError("the vault is down")

    tool = hs.tool(
        name="crm",
        input_schema=Query,
        execute=lambda i: "",
        auth=hs.token_auth(get_token, name="crm"),
    )
    step = StepTokens(AuthSettings(token_store=hs.MemoryTokenStore()))
    for call in ("c1", "c2"):
        ctx = step.bind(hs.ToolContext(context=None, tool_call_id=call, tool_name="crm"), tool)
        with pytest.raises(RuntimeError):
            await ctx.get_token()
    assert asked == [1]


async def test_get_token_must_give_a_token() -> None:
    tool = hs.tool(
        name="crm",
        input_schema=Query,
        execute=lambda i: "",
        auth=hs.token_auth(lambda r: "a-bare-string", name="bare"),  # type: ignore[arg-type,return-value]
    )
    ctx = StepTokens(AuthSettings(token_store=hs.MemoryTokenStore())).bind(
        hs.ToolContext(context=None, tool_call_id="c", tool_name="crm"), tool
    )
    with pytest.raises(hs.InvalidRequestError, match=r"returned a str, not an hs\.Token"):
        await ctx.get_token()


async def test_require_auth_raises_at_once_without_asking_the_strategy() -> None:
    asked: list[int] = []
    tool = hs.tool(
        name="crm",
        input_schema=Query,
        execute=lambda i: "",
        auth=hs.token_auth(lambda r: asked.append(1) or hs.Token(token="k"), name="gate"),  # type: ignore[func-returns-value]
    )
    ctx = StepTokens().bind(hs.ToolContext(context=None, tool_call_id="c", tool_name="crm"), tool)
    with pytest.raises(hs.AuthorizationRequiredError) as caught:
        ctx.require_auth()
    assert caught.value.code == "authorization_required" and caught.value.http_status == 401
    assert not caught.value.retryable and caught.value.strategy == "gate"
    assert asked == []
