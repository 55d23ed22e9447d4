// A sub-agent's progress inside its tool card. A tool made with `agent.as_tool(stream_progress=True)`
// streams preliminary outputs while the sub-agent runs (`tool-output-available` with
// `preliminary: true`, each the whole progress so far; see docs/ui-message-stream.md,
// "Sub-agent progress"):
//
//   {"text": "What the sub-agent has written so far",
//    "toolCalls": [{"toolCallId", "toolName", "input", "state"}]}
//
// The final output (no `preliminary`) replaces it; a reload shows only that.
import { el } from "./dom.js";

// A sub-agent call's state in words, and the badge class of the tool card's own states.
const CALL_STATES = {
  "input-streaming": ["preparing", ""], "input-available": ["running", "running"],
  "approval-requested": ["needs approval", "waiting"], "output-available": ["done", "done"],
  "output-error": ["error", "failed"], "output-denied": ["denied", "failed"],
};

/** Whether a tool part holds progress (a preliminary output), not its result. */
export function isProgress(part) {
  return part.state === "output-available" && part.preliminary === true;
}

/**
 * The progress of a running sub-agent: the tools it called (with their state), then its text.
 * @param {{text?: string, toolCalls?: object[]}} output A preliminary output.
 * @returns {HTMLElement}
 */
export function renderProgress(output) {
  const box = el("div", "progress");
  const calls = Array.isArray(output?.toolCalls) ? output.toolCalls : [];
  for (const call of calls) {
    const [label, kind] = CALL_STATES[call.state] || [String(call.state ?? ""), ""];
    const line = el("div", "progress-call");
    line.dataset.toolCallId = String(call.toolCallId ?? "");
    line.append(el("span", "tool-name", `${call.toolName}()`), el("span", `badge ${kind}`, label));
    box.append(line);
  }
  if (typeof output?.text === "string" && output.text) box.append(el("div", "progress-text", output.text));
  return box;
}
