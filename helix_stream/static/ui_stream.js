// The UI message stream as the demo page reads it: Server-Sent Events (`data: <json>` per chunk,
// `data: [DONE]` last) and the fold of each chunk into the assistant UIMessage, the way the AI
// SDK's readUIMessageStream does (text and reasoning parts by id, tool parts by call id, data
// parts replaced by id, transient ones not kept).

// SSE: events are separated by a blank line; each `data:` line carries one UI chunk.
export async function readStream(stream, onChunk) {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    const events = buffer.split(/\r?\n\r?\n/);
    buffer = events.pop();
    for (const event of events) {
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data) continue; // a `: ping` comment
      if (data === "[DONE]") return;
      onChunk(JSON.parse(data));
    }
  }
}

function toolPart(message, chunk) {
  let part = message.parts.find((p) => p.toolCallId === chunk.toolCallId);
  if (!part) {
    part = chunk.dynamic
      ? { type: "dynamic-tool", toolName: chunk.toolName, toolCallId: chunk.toolCallId }
      : { type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId };
    part.state = "input-streaming";
    message.parts.push(part);
  }
  return part;
}

/**
 * Folds one UI chunk into `message` (a UIMessage), as the AI SDK's readUIMessageStream does.
 * @param {object} message The assistant message being streamed (changed in place).
 * @param {object} chunk The chunk.
 * @param {{start: (messageId: string) => void, settle: (data: object) => void,
 *   steered?: (id: string) => void}} on What the page does with a `start` (the message's id),
 *   a `data-tool-settled` part (an earlier message's call) and a `steering-message` part (the
 *   id of a message the user steered in).
 */
export function foldChunk(message, chunk, on) {
  const t = chunk.type;
  const byId = (type, id) => message.parts.find((p) => p.type === type && p._id === id);
  if (t === "start") {
    on.start(chunk.messageId);
  } else if (t === "start-step") {
    message.parts.push({ type: "step-start" });
  } else if (t === "reset-step") {
    // A step redone after its model call broke off (stream_retries): its parts go, as the
    // AI SDK 7 client drops them.
    const last = message.parts.map((p) => p.type).lastIndexOf("step-start");
    message.parts.splice(last + 1);
  } else if (t === "text-start" || t === "reasoning-start") {
    message.parts.push({ type: t.split("-")[0], text: "", state: "streaming", _id: chunk.id });
  } else if (t === "text-delta" || t === "reasoning-delta") {
    const part = byId(t.split("-")[0], chunk.id);
    if (part) part.text += chunk.delta;
  } else if (t === "text-end" || t === "reasoning-end") {
    const part = byId(t.split("-")[0], chunk.id);
    if (part) part.state = "done";
  } else if (t === "tool-input-start") {
    toolPart(message, chunk)._raw = "";
  } else if (t === "tool-input-delta") {
    const part = toolPart(message, chunk);
    part._raw = (part._raw || "") + chunk.inputTextDelta;
  } else if (t === "tool-input-available") {
    Object.assign(toolPart(message, chunk), { state: "input-available", input: chunk.input });
  } else if (t === "tool-input-error") {
    Object.assign(toolPart(message, chunk), { state: "output-error", input: chunk.input, errorText: chunk.errorText });
  } else if (t === "tool-output-available") {
    // A preliminary output (a sub-agent's progress) until the final one, which drops the flag.
    const part = Object.assign(toolPart(message, chunk), { state: "output-available", output: chunk.output });
    if (chunk.preliminary === true) part.preliminary = true;
    else delete part.preliminary;
  } else if (t === "tool-output-error") {
    Object.assign(toolPart(message, chunk), { state: "output-error", errorText: chunk.errorText });
  } else if (t === "tool-output-denied") {
    toolPart(message, chunk).state = "output-denied";
  } else if (t === "tool-approval-request") {
    Object.assign(toolPart(message, chunk), { state: "approval-requested", approval: { id: chunk.approvalId } });
  } else if (t === "steering-message") {
    // A message the user sent while this answer ran, taken in here (ai@7): shown in place.
    message.parts.push({ type: t, id: chunk.id, parts: chunk.parts });
    on.steered?.(chunk.id);
  } else if (t === "data-tool-settled") {
    on.settle(chunk.data);
  } else if (t.startsWith("data-") && !chunk.transient) {
    // A data part with an id replaces the one of that id (a sign-in link, say).
    const index = chunk.id ? message.parts.findIndex((p) => p.type === t && p.id === chunk.id) : -1;
    const part = { type: t, ...(chunk.id ? { id: chunk.id } : {}), data: chunk.data };
    if (index >= 0) message.parts[index] = part;
    else message.parts.push(part);
  } else if (t === "message-metadata") {
    message.metadata = { ...(message.metadata || {}), ...chunk.messageMetadata };
  } else if (t === "error") {
    // As the stored message says it after a reload (metadata.error): one rendering for both.
    message.metadata = { ...(message.metadata || {}), interrupted: true, error: chunk.errorText };
  } else if (t === "finish") {
    message._end = t;
  } else if (t === "abort") {
    message._end = t;
    markInterrupted(message);
  }
}

export function markInterrupted(message) {
  message.metadata = { ...(message.metadata || {}), interrupted: true };
}

