// The demo page's Context panel: it checks its input (an empty instruction is not sent), posts
// {sessionId, items, key?} to /context and says in words what happened (or what was refused).
import { el } from "./dom.js";
import { refusalMessage } from "./refusal.js";

function contextItem(kind, text) {
  if (kind === "instruction" || kind === "notice") return { kind, content: text };
  const names = text.split(",").map((s) => s.trim()).filter(Boolean);
  return kind === "disable" ? { kind: "tools", disable: names } : { kind: "tools", enable: names };
}

// What is wrong with the panel's input, in words (null: nothing).
function contextProblem(kind, text) {
  if (!text) {
    return kind === "disable" || kind === "enable" ? "Name at least one tool." : `Write the ${kind} first.`;
  }
  return null;
}

const KIND_WORDS = { instruction: "Instruction", notice: "Notice", disable: "Tools off", enable: "Tools on" };

function contextAnswer(kind, ok, answer, status) {
  if (!ok) return refusalMessage(answer, status).text;
  if (answer.warnings?.length) return "Recorded, with a warning:";
  if (kind === "disable") return "Switched off: the agent cannot call them from its next model call.";
  if (kind === "enable") return "Switched on from the agent's next model call.";
  return answer.recorded === 0 ? "Already added (same key): nothing new." : "Added: the agent sees it at its next model call.";
}

export function showContextError(els, text) {
  els.ctxError.textContent = text || "";
  els.ctxError.hidden = !text;
}

export async function addContext(event, els, session) {
  event.preventDefault();
  const { started, sessionId, tools } = session();
  if (!started) return;
  const kind = els.ctxKind.value;
  const text = els.ctxText.value.trim();
  const problem = contextProblem(kind, text);
  showContextError(els, problem);
  if (problem) {
    els.ctxText.focus();
    return;
  }
  const body = { sessionId, items: [contextItem(kind, text)] };
  if (els.ctxKey.value.trim()) body.key = els.ctxKey.value.trim();
  const entry = el("li");
  entry.append(el("div", "what", `${KIND_WORDS[kind]}: ${text}`));
  els.ctxLog.prepend(entry);
  try {
    const res = await fetch("/context", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    const raw = await res.text();
    const answer = (() => { try { return JSON.parse(raw); } catch { return {}; } })();
    entry.append(el("div", `answer ${res.ok ? "ok" : "bad"}`, contextAnswer(kind, res.ok, res.ok ? answer : raw, res.status)));
    // Recorded, but the agent has no such tool (a typo?): say it where it is seen.
    for (const warning of answer.warnings || []) {
      const unknown = /^unknown tool '(.*)'$/.exec(warning);
      const words = unknown ? `The agent has no tool named “${unknown[1]}”: this changes nothing. Its tools: ${tools.join(", ")}.` : warning;
      entry.append(el("div", "warning", words));
    }
    if (res.ok) els.ctxText.value = "";
  } catch (error) {
    entry.append(el("div", "answer bad", "The server could not be reached. Check that it runs, then try again."));
  }
}

export function updateContextLabel(els) {
  const tools = els.ctxKind.value === "disable" || els.ctxKind.value === "enable";
  els.ctxLabel.textContent = tools ? "Tools (comma-separated)" : "Text";
  els.ctxText.placeholder = tools ? "get_weather" : (els.ctxKind.value === "notice" ? "The user is on mobile." : "Answer in French.");
}

