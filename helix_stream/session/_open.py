"""Opening a turn: read the session once, refuse what cannot run, claim the session.

:func:`open_turn` reads the session's :class:`~helix_stream.store.Snapshot`, refuses — before
anything is written — a turn that cannot run (no session to continue, a session already
running, a call still waiting for its answer), and claims the session: a compare-and-set to
``running`` that creates it on first use, under the turn's lease (:mod:`._lease`). A session
left ``running`` by a turn whose lease expired (its process died) is taken over: the claim
recovers it as ``resume()`` does — what was committed stays, and a user message the dead turn
never answered gets an answer marked interrupted (what the dead turn streamed, :mod:`._said`),
so the log still alternates — and the
store's planner lets exactly one of two racing claims win. A plain turn claims with its first
commit (the user's message and the first context pass, one write); a turn that settles a
paused one's calls claims alone, since the approved calls run before its first commit. It
returns what it opened (:class:`Opened`), that commit included.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .._event_stream import EventStream, Subscriber
from .._messages import message_text
from ..context import ContextPass
from ..errors import HelixError, InvalidRequestError, SessionNotFoundError
from ..hooks import AgentInfo, ChannelInfo
from ..loop._budget import SessionBudget
from ..loop._config import Callbacks
from ..loop._env import StepCommit
from ..loop._request import model_name
from ..loop._run import run_event_stream
from ..loop._setup import RunSetup
from ..models._family import params_family
from ..state import AuthInfo, SessionInfo, SessionScope, TurnInfo, bind_scope
from ..store import CallRow, NewSession, Snapshot, TurnWrite
from ._commits import RUNNABLE, Commits, Written, busy, last_seq, opened_meta, opening
from ._events import HookSubscriber, TurnEvents
from ._finish import finish_turn, log_failure
from ._mcp import server_tools
from ._meta import TurnMeta, stored_sandboxes
from ._parking import Parking
from ._pending import check_answerable
from ._records import interrupted_record, new_message_id
from ._request import TurnRequest
from ._said import streamed_text
from ._sandbox import TurnSandbox
from ._side_effects import mark_unknown, outcome_unknown_records, unsettled_calls
from ._steering import without_steered
from ._usage import check_budget, session_budget
from ._view import SessionView

if TYPE_CHECKING:
    pass

__all__ = ["Opened", "open_turn"]

logger = logging.getLogger("helix_stream.session")


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    """What :func:`open_turn` opened.

    Attributes:
        request: The turn's request.
        view: What the snapshot says (waiting calls, answers, the engine's bookkeeping).
        meta: The engine's bookkeeping as this turn counts it (once claimed, as written).
        created: The turn created the session.
        message_id: The turn's assistant UI message id.
        scope: The session scope bound while the turn runs user code.
        sandbox: The agent's sandbox and skills in the session.
        events: The emitter of the turn's durable events (its ``stream`` is the run's).
        hooks: The agent's hooks, a subscriber of that stream.
        parking: The turn's calls parked on a sign-in.
        commits: The turn's context commits.
        messages: The log as the model sees it, before this turn's first commit.
        first: The first model call's commit, made with the claim; ``None`` when the turn
            settles waiting calls first (it commits after settling them).
        offers: The MCP offers the turn took (a meta patch the claim writes).
        unsettled: The side-effect calls a dead run left in flight (``_side_effects``): the
            claim stores them with ``outcome_unknown``; they are never run again by this turn.
        budget: The session's usage limits and its stored totals (``_usage.py``).
    """

    request: TurnRequest
    view: SessionView
    meta: TurnMeta
    created: bool
    message_id: str
    scope: SessionScope
    sandbox: TurnSandbox
    events: TurnEvents
    hooks: HookSubscriber
    parking: Parking
    commits: Commits
    messages: list[dict[str, Any]]
    first: StepCommit | None = None
    offers: dict[str, Any] = field(default_factory=dict)
    unsettled: tuple[CallRow, ...] = ()
    budget: SessionBudget | None = None


async def open_turn(request: TurnRequest) -> Opened:
    """Read the session, refuse what cannot run, claim it (see the module docstring).

    Raises:
        SessionNotFoundError, SessionBusyError, StateError: a refusal (nothing was written).
        Exception: what failed, logged; a session already claimed was ended first (failed).
    """
    turn: TurnInfo | None = None
    try:
        opened = await _prepare(request)
        turn = opened.scope.info.turn
        written = await _claim(opened)
    except Exception as exc:
        if not isinstance(exc, HelixError):
            log_failure(request.session_id, turn, exc)  # a refusal is the caller's business
        raise
    if written is None:
        if opened.unsettled:  # waiting calls the resume step settles outcome_unknown
            await mark_unknown(request.store, request.session_id, opened.unsettled)
        return opened
    try:
        committed, meta = written
        first = opened.commits.taken(committed)
        if opened.unsettled:  # the model has their outcome_unknown: the ledger keeps them open
            await mark_unknown(request.store, request.session_id, opened.unsettled)
            _, parts = outcome_unknown_records(opened.unsettled, opened.message_id)
            first = replace(first, chunks=[*parts, *first.chunks])
        return replace(opened, first=first, meta=meta)
    except Exception as exc:  # the session is ours: end the turn before giving up
        await finish_turn(
            request.writer,
            opened.events,
            session_id=request.session_id,
            turn=opened.scope.info.turn,
            error=exc,
            in_step=False,
            unfinished=interrupted_record("", opened.message_id) if request.message else None,
        )
        raise


async def _context_pass(request: TurnRequest, snapshot: Snapshot, setup: RunSetup) -> ContextPass:
    """The turn's context pass over the session's log."""
    agent = request.agent
    return ContextPass(
        request.session_id,
        snapshot.log,
        step_context=agent.step_context,
        limits=agent.step_context_limits,
        memory=agent.memory,
        # Rows take the form of the provider family the turn's model is sent as.
        family=await params_family(model_name(setup.call.model)[0], setup.options.settings),
    )


async def _prepare(request: TurnRequest) -> Opened:
    """Read the session once and refuse what cannot run; nothing is written here."""
    snapshot = await request.store.read_snapshot(request.session_id)
    request = without_steered(request, snapshot)  # sent again after it was steered: once
    request, offers = await server_tools(request, snapshot)  # the agent's MCP servers' tools
    session_id, agent, setup = request.session_id, request.agent, request.setup
    view = SessionView(snapshot, agent, request.answers)
    _refuse(request, snapshot, view)  # a turn refused anyway never waited for a server
    unsettled = await _in_flight(request, view)
    budget = session_budget(request, snapshot)
    await check_budget(request, budget)  # a limit reached already: refused, nothing written
    assert isinstance(setup, RunSetup)  # server_tools made the run's one setup
    context_pass = await _context_pass(request, snapshot, setup)
    site = snapshot.checkpoint.log_seq if snapshot.checkpoint is not None else 0
    meta = _turn_meta(request, view, site)
    created = snapshot.session is None
    scope = _scope(request, view, meta, created=created)
    channel = ChannelInfo(kind=request.channel)
    stored = stored_sandboxes(snapshot.session.meta) if snapshot.session is not None else {}
    sandbox = TurnSandbox(
        writer=request.writer,
        scope=scope,
        agent=agent,
        channel=channel,
        stored=stored.get(agent.name),
    )
    hooks = HookSubscriber(
        agent.hooks,
        request.store,
        scope,
        sandbox=sandbox,
        agent=AgentInfo(name=agent.name),
        channel=channel,
    )
    parking = Parking(request.authorization, session_id)

    def stream(report: Subscriber) -> EventStream:
        # The turn's one stream, which its run gets: the hooks see the session's events (and,
        # through the emitter's report, a step's end) only where a handler wants them.
        return run_event_stream(
            setup.recorder,
            Callbacks.of(setup.options),
            session_id=session_id,
            scope=lambda: bind_scope(scope),
            subscribers=(hooks, report) if hooks.kinds else (),
        )

    events = TurnEvents(
        session_id,
        turn=scope.info.turn.sequence,
        part=meta.part,
        checkpoint=site,
        parking=parking,
        finish_tool=setup.finish_tool,
        stream=stream,
    )
    return Opened(
        request=request,
        view=view,
        meta=meta,
        created=created,
        message_id=scope.info.turn.id,
        scope=scope,
        sandbox=sandbox,
        events=events,
        hooks=hooks,
        parking=parking,
        commits=Commits(request.writer, session_id, context_pass, scope),
        messages=list(context_pass.messages),
        offers=offers,
        unsettled=tuple(unsettled),
        budget=budget,
    )


async def _in_flight(request: TurnRequest, view: SessionView) -> list[CallRow]:
    """The side-effect calls a dead run left in flight (``_side_effects``). A turn that settles
    a paused one's calls first takes only those among them (an approved call that was running:
    ``turn_env`` settles it ``outcome_unknown`` instead of running it again); its claim stores
    nothing recovered (``_claim``), so the others wait for a later turn."""
    log, tools = view.snapshot.log, request.setup.tools
    rows = await unsettled_calls(request.store, request.session_id, log, tools)
    if view.waiting:
        waiting = {w.call.id for w in view.waiting}
        return [row for row in rows if row.tool_call_id in waiting]
    # The claim stores the calls themselves: never one the log has already (no id twice).
    logged = {
        c["id"] for r in log if r.role == "assistant" for c in r.payload.get("tool_calls") or ()
    }
    return [row for row in rows if row.tool_call_id not in logged]


def _scope(
    request: TurnRequest, view: SessionView, meta: TurnMeta, *, created: bool
) -> SessionScope:
    """The turn's session scope: its session info, and define_state as the last checkpoint
    left it."""
    scope = SessionScope(
        info=SessionInfo(
            id=request.session_id,
            turn=meta.turn_info(),
            auth=AuthInfo(
                current=request.auth,
                initiator=request.identify(request.auth) if created else view.meta.initiator,
            ),
            parent=request.parent,
        ),
        run_child=request.run_child,
    )
    checkpoint = view.snapshot.checkpoint
    if checkpoint is not None:
        scope.state.update(checkpoint.state.get("slots", {}))
    return scope


def _turn_meta(request: TurnRequest, view: SessionView, site: int) -> TurnMeta:
    """The turn this run is: the session's current one carried on (it paused, failed, was cut
    short or lost its process, and no new message came), or a new one. ``site``: the log
    position of the session's last checkpoint."""
    if request.message is None:
        carried = view.meta.carried_on(
            resumes=bool(view.waiting), site=site, message_id=request.message_id
        )
        if carried is not None:
            return carried
    resumed = view.waiting[0].message_id if view.waiting and request.message is None else None
    message_id = request.message_id or resumed or new_message_id()
    return view.meta.new_turn(site=site, message_id=message_id)


def _refuse(request: TurnRequest, snapshot: Snapshot, view: SessionView) -> None:
    if snapshot.session is None and request.message is None:
        raise SessionNotFoundError(
            f"no session {request.session_id!r} to continue; start it with a user message"
        )
    status = snapshot.session.status if snapshot.session else "idle"
    if status not in RUNNABLE and not _taken_over(snapshot):
        raise busy(request.session_id)
    if request.message is None and view.waits_for_nothing:
        raise InvalidRequestError(
            f"session {request.session_id!r} waits for nothing: its last turn ended with the "
            "assistant's answer and no call waits for an answer; send a user message (or "
            "regenerate the answer)"
        )
    check_answerable(
        view.waiting,
        view.answers,
        request.setup.tools,
        has_new_input=request.message is not None,
        deadline=view.deadline,
    )


def _taken_over(snapshot: Snapshot) -> bool:
    """The session is ``running`` under a lease that expired: its turn's process is gone."""
    return snapshot.session is not None and snapshot.session.lease_expired()


async def _recovered(opened: Opened) -> list[dict[str, Any]]:
    """What a turn adds before its new message: the side-effect calls a dead run left in
    flight, each with its ``outcome_unknown`` result (``_side_effects``), and what a takeover
    adds (:func:`_interrupted`)."""
    message_id = opened.view.meta.turn_id or opened.message_id
    calls, _ = outcome_unknown_records(opened.unsettled, message_id)
    return [*calls, *await _interrupted(opened)]


async def _interrupted(opened: Opened) -> list[dict[str, Any]]:
    """What a takeover adds before the new message: an interrupted answer to the user message
    the dead turn left unanswered (a continue answers it instead), with what the dead turn had
    streamed where the store keeps its stream (``_said``), else empty."""
    view, request = opened.view, opened.request
    if not _taken_over(view.snapshot):
        return []
    logger.warning(
        "session %r was left running by a turn whose lease expired; taking it over",
        request.session_id,
        extra={"session_id": request.session_id, "event": "core.turn.taken_over"},
    )
    messages = [r for r in view.snapshot.log if r.role != "context"]
    if request.message is None or not messages or messages[-1].role != "user":
        return []
    said = await streamed_text(request.store, request.session_id)
    return [interrupted_record(said, view.meta.turn_id or new_message_id())]


async def _claim(opened: Opened) -> tuple[Written, TurnMeta] | None:
    """Claim the session: with the first commit (returned, with the bookkeeping as it wrote
    it), or alone when calls wait to be settled."""
    request, view, meta = opened.request, opened.view, opened.meta
    if view.waiting:
        patch = {**meta.starting_at(last_seq(view)), **opened.offers}
        write = TurnWrite(expect=RUNNABLE, status="running", meta=patch)
        result = await request.writer.write_turn(request.session_id, write)
        if not result.applied:
            raise busy(request.session_id)
        return None
    create = None
    if opened.created:
        create = NewSession(
            agent_name=request.agent.name,
            parent_id=request.parent.session_id if request.parent else None,
            meta=TurnMeta.new_session(request.identify(request.auth), request.parent),
        )
    message = request.message
    first = opening(view, meta, message=message, recovered=await _recovered(opened))
    first = replace(first, meta={**(first.meta or {}), **opened.offers})
    written = await opened.commits.write(
        0,
        replace(first, create=create, expect=RUNNABLE, status="running"),
        user_text=message_text(message) if message else None,
    )
    return written, opened_meta(view, meta, first)
