// helix-stream demo page: a tiny useChat, written against the wire protocol itself.
//
// POST /api/chat with {id, messages, trigger} (the body useChat sends), read the Server-Sent
// Events (`data: <json>` per chunk, `data: [DONE]` last) and fold the UI chunks into the
// assistant UIMessage, the way the AI SDK's readUIMessageStream does. On load it restores the
// chat (GET /api/chat/{id}/messages) and follows a running answer (GET /api/chat/{id}/stream,
// useChat's `resume: true`): a reload, or a second tab, shows the answer to its end. Stop posts
// to /api/chat/{id}/stop, which ends the turn on the server; the stream then ends with `abort`.
// A call waiting for approval gets Approve and Deny (the answer continues that message); one
// left waiting when a new message is sent is settled on its own message (`data-tool-settled`).
// A message typed while an answer runs steers it (the server's turn_policy "steer"): posted at
// once, answered 202, and shown where the answer took it in (its `steering-message` part).
// The Context panel posts {sessionId, items, key?} to /context and says what happened.
// Answers render as Markdown (markdown.js: DOM nodes, never HTML); refusals and failures are
// put in words by refusal.js (the same module a useChat app can use); ui_stream.js reads and
// folds the stream, context_panel.js is the Context panel.
import { addContext, showContextError, updateContextLabel } from "./context_panel.js";
import { el } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { isProgress, renderProgress } from "./progress.js";
import { errorMessage, refusalMessage } from "./refusal.js";
import { retryStatus } from "./retry_status.js";
import { foldChunk, markInterrupted, readStream } from "./ui_stream.js";

const $ = (id) => document.getElementById(id);
const els = {
  layout: $("layout"), messages: $("messages"), empty: $("empty"), form: $("composer"),
  input: $("input"), send: $("send"), stop: $("stop"), status: $("status"), notice: $("notice"),
  session: $("session-id"), meta: $("meta"), panel: $("panel"), panelToggle: $("panel-toggle"),
  ctxForm: $("context-form"), ctxFields: $("ctx-fields"), ctxHint: $("ctx-hint"),
  ctxKind: $("ctx-kind"), ctxText: $("ctx-text"), ctxKey: $("ctx-key"), ctxLabel: $("ctx-label"),
  ctxLog: $("ctx-log"), toolsHint: $("tools-hint"), ctxError: $("ctx-error"), jump: $("jump"),
};

const state = {
  sessionId: "", messages: [], controller: null, scheduled: false, started: false,
  follow: true, // the view follows a streaming answer only while the user is at the bottom
  tools: [],
  steering: [], // messages sent while an answer runs, until the answer shows where it took them
};

const newId = (prefix) => `${prefix}-${Math.random().toString(36).slice(2, 10)}${Date.now().toString(36)}`;
const chatPath = (suffix) => `/api/chat/${encodeURIComponent(state.sessionId)}/${suffix}`;

// ---- session -------------------------------------------------------------------------------

function startSession(id) {
  state.sessionId = id || newId("demo");
  state.messages = [];
  history.replaceState(null, "", `#session=${encodeURIComponent(state.sessionId)}`);
  els.session.textContent = state.sessionId;
  els.session.title = state.sessionId;
  els.ctxLog.replaceChildren();
  setStarted(false);
  setStatus("");
  showNotice("");
  render();
}

// The session exists once its first message was taken: until then the Context panel waits.
function setStarted(started) {
  state.started = started;
  els.ctxFields.disabled = !started;
  els.ctxHint.hidden = started;
}

async function restore() {
  const match = location.hash.match(/session=([^&]+)/);
  startSession(match ? decodeURIComponent(match[1]) : "");
  if (!match) return;
  await loadMessages();
  await resume();
}

// The stored chat ([] for a session id that has no messages yet).
async function loadMessages() {
  const res = await fetch(chatPath("messages"));
  if (res.ok) {
    state.messages = await res.json();
    setStarted(state.messages.length > 0);
    render();
  }
}

async function loadInfo() {
  try {
    const info = await (await fetch("/api/demo")).json();
    els.meta.textContent = `agent ${info.agent} · model ${info.model}`;
    state.tools = info.tools;
    els.toolsHint.textContent = `Tools: ${info.tools.join(", ")}`;
  } catch (error) {
    els.meta.textContent = "";
  }
}

// ---- chat ----------------------------------------------------------------------------------

function setStatus(text, isError = false) {
  els.status.textContent = text;
  els.status.style.color = isError ? "var(--bad)" : "";
}

// A notice above the box: a refusal ("bad"), or a hint ("info").
function showNotice(text, kind = "bad") {
  els.notice.textContent = text;
  els.notice.hidden = !text;
  els.notice.classList.toggle("info", kind === "info");
}

// While an answer runs the box stays open: what is sent then steers the running answer.
function setBusy(busy) {
  els.input.placeholder = busy ? "Add to your request — the answer takes it in as it goes…" : "Send a message…";
  els.stop.hidden = !busy;
  els.stop.disabled = false;
}

// What useChat sends: the messages without this page's bookkeeping keys (those starting "_").
function wireMessages() {
  const clean = (value) => {
    if (Array.isArray(value)) return value.map(clean);
    if (value && typeof value === "object") {
      return Object.fromEntries(
        Object.entries(value).filter(([k]) => !k.startsWith("_")).map(([k, v]) => [k, clean(v)]),
      );
    }
    return value;
  };
  return clean(state.messages);
}

async function sendText(text) {
  showNotice("");
  state.follow = true;
  const message = { id: newId("user"), role: "user", parts: [{ type: "text", text }] };
  state.messages.push(message);
  render();
  const refusal = await post({ trigger: "submit-message" });
  if (!refusal) return;
  if (refusal === "steered") {  // another tab's answer runs and took it in: follow that answer
    state.messages = state.messages.filter((m) => m !== message);
    state.steering.push(message);
    await restoreRunning();
    return;
  }
  // Refused (the session is busy in another tab, a bad request...): the message was not sent,
  // so it leaves the list and its text goes back into the box.
  state.messages = state.messages.filter((m) => m !== message);
  render();
  if (!els.input.value) els.input.value = text;
  showNotice(`Not sent. ${refusal.text} Your message is back in the box.`);
  if (refusal.code === "state_session_busy") {  // another tab's answer runs: show it
    await loadMessages();
    await resume();
  }
}

// Sent while an answer runs: the server hands it to the running turn (202), whose stream
// shows it in place; shown as "sending" below the answer until then.
async function steer(text) {
  showNotice("");
  state.follow = true;
  const message = { id: newId("user"), role: "user", parts: [{ type: "text", text }] };
  state.steering.push(message);
  render();
  let res = null;
  try {
    const body = { id: state.sessionId, messages: [...wireMessages(), message], trigger: "submit-message" };
    res = await fetch("/api/chat", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  } catch (error) {
    res = null;
  }
  if (res?.status === 202) return;  // taken: the running answer's stream shows it in place
  if (res?.ok) {  // the answer had just ended: this request runs the turn that answers it
    res.body?.cancel();  // the turn runs on; the page follows it as a resumed answer
    state.steering = state.steering.filter((m) => m !== message);
    if (!state.controller) await restoreRunning();
    return;
  }
  state.steering = state.steering.filter((m) => m !== message);
  render();
  if (!els.input.value) els.input.value = text;
  const refusal = res ? refusalMessage(await res.text().catch(() => ""), res.status) : { text: "The server could not be reached." };
  showNotice(`Not sent. ${refusal.text} Your message is back in the box.`);
}

// The stored chat, then the running answer: after a steered message that a new turn answers,
// or one the answer did not show (the turn was stopped before its next step).
async function restoreRunning() {
  await loadMessages();
  await resume();
}

// The answer ended with steered messages it did not show (an older client's stream, a stop):
// the stored chat shows where they went; one still waiting goes with the next answer.
async function afterSteering() {
  const sent = state.steering;
  state.steering = [];
  await restoreRunning();
  const shown = JSON.stringify(state.messages);
  if (sent.some((m) => !shown.includes(m.id))) {
    showNotice("The answer ended before it took in what you added: the next answer will.", "info");
  }
}

async function regenerate(messageId) {
  const index = state.messages.findIndex((m) => m.id === messageId);
  if (index < 0 || state.controller) return;
  showNotice("");
  const dropped = state.messages.slice(index);
  state.messages = state.messages.slice(0, index);  // as useChat's regenerate() does
  render();
  const refusal = await post({ trigger: "regenerate-message", messageId });
  if (refusal) {
    state.messages.push(...dropped);
    render();
    showNotice(`Not regenerated. ${refusal.text}`);
  }
}

// After a sign-in: a request with no new message continues the waiting message (the server
// re-runs the call with its token); the sign-in link gives way to the call's result.
async function continueTurn() {
  if (state.controller || state.messages.at(-1)?.role !== "assistant") return;
  showNotice("");
  const refusal = await post({ trigger: "submit-message" });
  if (refusal) showNotice(`Could not continue. ${refusal.text}`);
}

// The sign-in callback page (another tab, same origin) says so on this channel.
function listenForSignIns() {
  if (!("BroadcastChannel" in window)) return;
  const channel = new BroadcastChannel("helix-stream-auth");
  channel.addEventListener("message", (event) => {
    const done = event.data;
    if (done?.sessionId !== state.sessionId) return;
    if (done.status === "authorized" || done.status === "refused" || done.status === "failed") continueTurn();
  });
}

// Approve or Deny: the part holds the answer (as useChat's addToolApprovalResponse leaves it);
// once no call of the message still waits, the answers go back and the turn continues it.
async function answerApproval(message, part, approved) {
  if (state.controller || part.state !== "approval-requested") return;
  showNotice("");
  const reason = approved ? {} : { reason: "Denied on the demo page." };
  Object.assign(part, { state: "approval-responded", approval: { ...part.approval, approved, ...reason } });
  render();
  if (message.parts.some((p) => p.state === "approval-requested")) return;
  const refusal = await post({ trigger: "submit-message" });
  if (!refusal) return;
  for (const p of message.parts) if (p.state === "approval-responded") p.state = "approval-requested";
  render();
  showNotice(`Not sent. ${refusal.text} Answer again.`);
}

// POST /api/chat and read its stream; returns the refusal ({code, text}) of a non-2xx answer.
// With no new message (the last one the assistant's) it continues that message.
async function post(extra) {
  const body = { id: state.sessionId, messages: wireMessages(), ...extra };
  return follow("Thinking…", (signal) => fetch("/api/chat", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal,
  }));
}

// GET /api/chat/{id}/stream: the running answer of this session, if there is one (204: none).
async function resume() {
  if (state.controller) return;
  await follow("Resuming the running answer…", (signal) => fetch(chatPath("stream"), { signal }));
}

async function follow(label, request) {
  setBusy(true);
  setStatus(label);
  const controller = state.controller = new AbortController();
  let refusal = null;
  let message = null;
  try {
    const res = await request(controller.signal);
    if (res.status === 204) return null;  // no running answer
    if (res.status === 202) return "steered";  // taken by an answer running elsewhere (a tab)
    if (!res.ok) {
      refusal = refusalMessage(await res.text().catch(() => ""), res.status);
      return refusal;
    }
    setStarted(true);
    // Not "streaming" until the model writes: the provider may be slow, or retried.
    setStatus("Waiting for the model…");
    message = continuedMessage();
    await readStream(res.body, (chunk) => applyChunk(message, chunk));
    if (!message._end) markInterrupted(message);  // the stream broke off before its end
    setStatus("");
  } catch (error) {
    setStatus(error.name === "AbortError" ? "Stopped." : "The connection to the server was lost. Reload the page to see the answer.", error.name !== "AbortError");
    if (message && !message._end) markInterrupted(message);
  } finally {
    if (refusal || els.status.textContent === label) setStatus("");  // never a stale "Thinking…"
    if (els.notice.classList.contains("info")) showNotice("");  // the draft hint: it may be sent now
    for (const part of message?.parts ?? []) if (part.state === "streaming") part.state = "done";
    if (state.controller === controller) state.controller = null;
    setBusy(false);
    render();
    els.input.focus();
    if (state.steering.length && !state.controller) afterSteering();
  }
  return refusal;
}

// A turn that answers approvals or tool outputs continues the last assistant message.
function continuedMessage() {
  const last = state.messages.at(-1);
  if (last && last.role === "assistant") return last;
  return { id: "", role: "assistant", parts: [], _new: true };
}

// The stream's `start` names its message: a replay (resume) replaces the copy the page has.
function place(message, messageId) {
  if (messageId) message.id = messageId;
  const index = state.messages.findIndex((m) => m.id === message.id && m !== message);
  if (message._new) {
    delete message._new;
    if (index >= 0) state.messages[index] = message;
    else state.messages.push(message);
  }
}

async function stopTurn() {
  els.stop.disabled = true;
  setStatus("Stopping…");
  try {
    // The server ends the turn and stores what was streamed; the stream then ends with `abort`.
    const res = await fetch(chatPath("stop"), { method: "POST" });
    if (!res.ok) setStatus(`Stop failed: HTTP ${res.status}`, true);
  } finally {
    setTimeout(() => state.controller?.abort(), 2000);  // should the stream not end by itself
  }
}

// A call of an earlier message that this turn settled (the user sent a new message while it
// waited): the part says what that message's tool part becomes, as a reload shows it.
function settleEarlier({ messageId, toolCallId, ...update }) {
  const earlier = state.messages.find((m) => m.id === messageId);
  const part = earlier?.parts.find((p) => p.toolCallId === toolCallId);
  if (part) Object.assign(part, update);
}

// A steered message the answer took in: shown in place from now on.
function steered(id) {
  state.steering = state.steering.filter((m) => m.id !== id);
}

function applyChunk(message, chunk) {
  const t = chunk.type;
  if (t === "data-retry") setStatus(retryStatus(chunk.data));  // until text comes or it ends
  else if (/^(text|reasoning|tool-input)-(start|delta)$/.test(t)) setStatus("Writing…");
  else if (t === "start-step" && els.status.textContent === "Writing…") setStatus("Working…");
  foldChunk(message, chunk, { start: (id) => place(message, id), settle: settleEarlier, steered });
  schedule();
}

// ---- rendering -----------------------------------------------------------------------------

function schedule() {
  if (state.scheduled) return;
  state.scheduled = true;
  requestAnimationFrame(() => { state.scheduled = false; render(); });
}

const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

// A not-executed result: {notExecuted, reason, message} on the stream; a restored history may
// hold the tool message's own form, {status: "not_executed", reason, message}.
const notExecuted = (part) => part.state === "output-available" && part.output
  && (part.output.notExecuted === true || part.output.status === "not_executed");

// A call with no result while nothing runs waits for the user: an approval, a sign-in (its
// link came as a `data-authorization` part), or the app itself (a client tool's output).
function signIn(message, part) {
  return message.parts.find((p) => p.type === "data-authorization" && p.data?.toolCallId === part.toolCallId);
}

function waiting(message, part) {
  if (part.state === "approval-requested") return "approval";
  if (part.state !== "input-available" || state.controller) return null;
  return signIn(message, part) ? "sign-in" : "client";
}

function toolStatus(message, part) {
  if (notExecuted(part)) return ["not executed", "skipped"];
  // A sub-agent's progress, not its result: working while the answer runs; left so when the
  // answer ended without the result (stopped, or the stream broke off).
  if (isProgress(part)) return state.controller ? ["working", "running"] : ["stopped", "skipped"];
  if (part.state === "output-error" && part.errorText?.startsWith("cancelled: ")) return ["cancelled", "skipped"];
  const wait = waiting(message, part);
  if (wait) return [{ approval: "needs approval", "sign-in": "waiting for sign-in", client: "waiting for the app" }[wait], "waiting"];
  return {
    "input-streaming": ["preparing", ""], "input-available": ["running", "running"],
    "approval-responded": ["answered", ""], "output-available": ["done", "done"],
    "output-error": ["error", "failed"], "output-denied": ["denied", "failed"],
  }[part.state] || [part.state, ""];
}

function approvalButtons(message, part) {
  const actions = el("div", "tool-actions");
  for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
    const button = el("button", approved ? "approve" : "ghost deny", label);
    button.type = "button";
    button.disabled = Boolean(state.controller);
    button.addEventListener("click", () => answerApproval(message, part, approved));
    actions.append(button);
  }
  return actions;
}

// The sign-in link: opens the service in a new tab; its callback page tells this tab (a
// BroadcastChannel), which continues the turn by itself. "Continue" is for a callback that
// came back elsewhere (another browser, a phone).
function signInBox(link) {
  const box = el("div", "tool-wait");
  const a = el("a", "sign-in", `Sign in to ${link.data.strategy}`);
  a.href = link.data.url;
  a.target = "_blank";
  a.rel = "noopener";
  const again = el("button", "ghost continue", "I have signed in — continue");
  again.type = "button";
  again.disabled = Boolean(state.controller);
  again.addEventListener("click", continueTurn);
  box.append(el("p", "", "This call needs you to sign in first. The answer carries on once you have."), a, again);
  return box;
}

function renderTool(message, part) {
  const box = el("div", "tool");
  box.dataset.toolCallId = part.toolCallId;
  box.dataset.state = part.state;
  const head = el("div", "tool-head");
  const name = part.type === "dynamic-tool" ? part.toolName : part.type.slice(5);
  const [label, kind] = toolStatus(message, part);
  head.append(el("span", "tool-name", `${name}()`), el("span", `badge ${kind}`, label));
  box.append(head);
  const body = el("div", "tool-body");
  const input = part.input !== undefined ? pretty(part.input) : part._raw;
  if (input) body.append(el("span", "label", "input"), el("pre", "tool-input", input));
  if (isProgress(part)) {
    body.append(el("span", "label", "so far"), renderProgress(part.output));
  } else if (part.state === "output-available") {
    const output = notExecuted(part) ? `${part.output.reason}: ${part.output.message}` : pretty(part.output);
    body.append(el("span", "label", "output"), el("pre", "tool-output", output));
  } else if (part.state === "output-error") {
    body.append(el("span", "label", "error"), el("pre", "tool-output", part.errorText || ""));
  }
  if (body.childElementCount) box.append(body);
  const wait = waiting(message, part);
  if (wait === "approval") box.append(approvalButtons(message, part));
  else if (wait === "sign-in") box.append(signInBox(signIn(message, part)));
  else if (wait === "client") box.append(el("p", "tool-wait", "This tool runs in the app, not on the server: the answer waits for its result."));
  return box;
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = Object.assign(document.createElement("textarea"), { value: text });
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  const before = button.textContent;
  button.textContent = "Copied";
  setTimeout(() => { button.textContent = before; }, 1500);
}

function messageText(message) {
  return message.parts.filter((p) => p.type === "text").map((p) => p.text).join("\n\n");
}

function renderText(message, part) {
  const cls = `text${part.state === "streaming" ? " streaming" : ""}`;
  if (message.role !== "assistant") return el("div", cls, part.text);
  const box = el("div", `${cls} md`);
  box.append(renderMarkdown(part.text, copyText));
  return box;
}

function messageActions(message, isLast) {
  const actions = el("div", "msg-actions");
  const text = messageText(message);
  if (text && !state.controller) {
    const copy = el("button", "ghost copy-message", "Copy");
    copy.type = "button";
    copy.addEventListener("click", () => copyText(text, copy));
    actions.append(copy);
  }
  // Not under a call that waits for an answer: regenerating would drop that call.
  const unanswered = message.parts.some((p) => (p.type === "dynamic-tool" || p.type.startsWith("tool-")) && waiting(message, p));
  if (isLast && !state.controller && !unanswered) {
    const again = el("button", "ghost regenerate", "↻ Regenerate");
    again.type = "button";
    again.addEventListener("click", () => regenerate(message.id));
    actions.append(again);
  }
  return actions;
}

// A message the user sent while the answer ran, where the answer took it in.
function renderSteered(part) {
  const box = el("div", "steered");
  box.dataset.messageId = part.id;
  const text = part.parts.filter((p) => p.type === "text").map((p) => p.text).join("\n");
  box.append(el("span", "label", "you added"), el("div", "text", text));
  return box;
}

function renderMessage(message, isLast) {
  const row = el("div", `msg ${message.role}`);
  row.dataset.messageId = message.id;
  const bubble = el("div", "bubble");
  for (const part of message.parts) {
    if (part.type === "text") {
      bubble.append(renderText(message, part));
    } else if (part.type === "reasoning") {
      bubble.append(el("div", "reasoning", part.text));
    } else if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
      bubble.append(renderTool(message, part));
    } else if (part.type === "steering-message") {
      bubble.append(renderSteered(part));
    }
  }
  const failure = message.metadata?.error;
  if (failure !== undefined) {
    bubble.append(el("div", "error", errorMessage(failure)));
  } else if (message.metadata?.interrupted) {
    const marker = el("div", "marker", "interrupted");
    marker.title = "This answer was cut short: stopped, or its turn did not finish.";
    bubble.append(marker);
  }
  if (!bubble.childElementCount) bubble.append(el("div", "text streaming muted", ""));
  if (message.role === "assistant") {
    const actions = messageActions(message, isLast);
    if (actions.childElementCount) bubble.append(actions);
  }
  row.append(bubble);
  return row;
}

// Follows the answer only while the user is at the bottom: scrolling up to read stays put.
function render() {
  const box = els.messages;
  const follow = state.follow;
  const top = box.scrollTop;
  els.empty.hidden = state.messages.length > 0;
  const last = state.messages.length - 1;
  const nodes = state.messages.map((m, i) => renderMessage(m, i === last));
  for (const message of state.steering) {  // sent, not yet taken in by the answer
    const row = renderMessage(message, false);
    row.classList.add("pending");
    row.title = "Sent: the answer takes it in at its next step.";
    nodes.push(row);
  }
  box.replaceChildren(els.empty, ...nodes);
  box.scrollTop = follow ? box.scrollHeight : top;
  els.jump.hidden = follow || box.scrollHeight <= box.clientHeight;
}

function atBottom() {
  const box = els.messages;
  return box.scrollHeight - box.scrollTop - box.clientHeight < 24;
}

// ---- context panel -------------------------------------------------------------------------

function setPanel(open) {
  els.layout.classList.toggle("panel-closed", !open);
  els.panelToggle.setAttribute("aria-expanded", String(open));
}

// ---- wiring --------------------------------------------------------------------------------

els.form.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = els.input.value.trim();
  if (!text) return;
  els.input.value = "";
  if (state.controller) steer(text);  // an answer runs: it takes this in as it goes
  else sendText(text);
});
els.input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    els.form.requestSubmit();
  }
});
els.stop.addEventListener("click", stopTurn);
$("new-chat").addEventListener("click", () => { if (!state.controller) startSession(""); });
els.messages.addEventListener("scroll", () => {
  state.follow = atBottom();
  els.jump.hidden = state.follow;
});
els.jump.addEventListener("click", () => {
  state.follow = true;
  els.messages.scrollTop = els.messages.scrollHeight;
  els.jump.hidden = true;
});
els.ctxText.addEventListener("input", () => showContextError(els, ""));
$("suggestions").addEventListener("click", (event) => {
  if (event.target.matches(".chip") && !state.controller) sendText(event.target.textContent);
});
els.panelToggle.addEventListener("click", () => setPanel(els.layout.classList.contains("panel-closed")));
els.ctxForm.addEventListener("submit", (event) => addContext(event, els, () => state));
els.ctxKind.addEventListener("change", () => updateContextLabel(els));

setPanel(window.matchMedia("(min-width: 861px)").matches);  // a drawer, closed, on a phone
listenForSignIns();
loadInfo();
restore();
