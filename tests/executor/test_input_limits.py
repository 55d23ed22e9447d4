"""``add_context`` and the limits of ``helix_stream._limits``, through the Python API, on every
store: too many items in one call, a full queue, a lone surrogate in an item. Each refusal is a
``ContextValidationError`` and queues nothing.
"""

from __future__ import annotations

import pytest

import helix_stream as hs
from helix_stream._limits import MAX_ITEMS_PER_CALL
from tests._store import create_session, pending_context
from tests.executor._util import snapshot

SID = "s-limits"


async def test_add_context_takes_at_most_the_per_call_cap(executor: hs.Executor) -> None:
    await create_session(executor.store, SID, agent_name="a")
    before = await snapshot(executor.store, SID)
    too_many = [hs.notice(f"n{i}") for i in range(MAX_ITEMS_PER_CALL + 1)]
    with pytest.raises(hs.ContextValidationError, match="the limit is 100") as raised:
        await executor.add_context(SID, too_many)
    assert (raised.value.code, raised.value.http_status) == ("validation_error", 400)
    assert await snapshot(executor.store, SID) == before
    assert await executor.add_context(SID, too_many[:MAX_ITEMS_PER_CALL]) == MAX_ITEMS_PER_CALL


@pytest.mark.parametrize(
    "item",
    [hs.notice("a \ud800"), hs.instruction("\udfff"), hs.disable_tools(["x\udc80"])],
    ids=["notice", "instruction", "tool-name"],
)
async def test_an_item_with_a_lone_surrogate_is_refused_and_nothing_is_queued(
    executor: hs.Executor, item: dict[str, object]
) -> None:
    await create_session(executor.store, SID, agent_name="a")
    before = await snapshot(executor.store, SID)
    # pydantic refuses the text fields itself ("unable to parse raw data as a unicode
    # string"); a tools item's names reach the size check, which says "lone surrogate".
    with pytest.raises(hs.ContextValidationError, match=r"item 1.*(lone surrogate|unicode)"):
        await executor.add_context(SID, [hs.notice("fine"), item])
    assert await snapshot(executor.store, SID) == before


async def test_the_queue_cap_of_the_store_applies_to_add_context() -> None:
    executor = hs.Executor(store=hs.MemoryStore(max_queued_items=3))
    await create_session(executor.store, SID, agent_name="a")
    assert await executor.add_context(SID, [hs.notice("1"), hs.notice("2")]) == 2
    with pytest.raises(hs.ContextValidationError, match="limit of 3 queued items"):
        await executor.add_context(SID, [hs.notice("3"), hs.notice("4")])
    assert [len(e.items) for e in await pending_context(executor.store, SID)] == [2]
