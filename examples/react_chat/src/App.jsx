// useChat (ai@7) against helix_stream's chat server: resume after a reload, stop on the server,
// approvals (and a call left waiting when a new message is sent, settled on its own message),
// sign-in links that continue the turn by themselves, and refusals shown in words.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useEffect, useRef, useState } from "react";
// The package's own helper (no dependency; copy it into your app if you prefer).
import { errorMessage, refusalMessage } from "../../../helix_stream/static/refusal.js";

export const API = "/api/chat";
const transport = new DefaultChatTransport({ api: API });

const isTool = (part) => part.type.startsWith("tool-") || part.type === "dynamic-tool";
const toolName = (part) => (part.type === "dynamic-tool" ? part.toolName : part.type.slice(5));

export function App({ id, initialMessages }) {
  const [input, setInput] = useState("");
  const [notice, setNotice] = useState("");
  const lastSent = useRef("");
  const {
    messages, setMessages, sendMessage, regenerate, stop, status, error, addToolApprovalResponse,
  } = useChat({
    id,
    messages: initialMessages,
    transport,
    resume: true, // on load: GET /api/chat/{id}/stream follows a running answer (204: none)
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses, // answers go back
    // A call left waiting when the user sent a new message is settled on its own (earlier)
    // message; a stream fills one message, so the server says so in a transient part.
    onData: (part) => {
      if (part.type !== "data-tool-settled") return;
      const { messageId, toolCallId, ...update } = part.data;
      setMessages((messages) => messages.map((m) => m.id !== messageId ? m : {
        ...m, parts: m.parts.map((p) => (p.toolCallId === toolCallId ? { ...p, ...update } : p)),
      }));
    },
    // A refusal (409 busy, 413 too large, 429, ...) comes before any answer: the message was not
    // taken, so it leaves the list and its text goes back into the box.
    onError: (failure) => {
      const refusal = refusalMessage(failure);
      if (!refusal.refused) return; // a failed answer: shown under it, from `error`
      setMessages((messages) => (messages.at(-1)?.role === "user" ? messages.slice(0, -1) : messages));
      setInput((text) => text || lastSent.current);
      setNotice(`Not sent. ${refusal.text}`);
    },
  });
  const busy = status === "submitted" || status === "streaming";
  // A failed answer is shown under it; a refusal is the notice above the box instead.
  const failed = error && !refusalMessage(error).refused;

  // The sign-in callback page (a tab of this origin) says when the user is back: the turn
  // goes on by itself (sendMessage() with no message continues the waiting assistant message).
  useEffect(() => {
    const channel = new BroadcastChannel("helix-stream-auth");
    channel.onmessage = (event) => {
      if (event.data?.type === "helix-auth" && event.data.sessionId === id) sendMessage();
    };
    return () => channel.close();
  }, [id, sendMessage]);

  // stop() alone only closes this page's request, and the server's turn would run on (a
  // reload must not end it). The stop route ends the turn on the server: what was streamed
  // is stored as interrupted and the stream ends by itself with that mark and `abort`.
  // Closing the request as well could drop those last chunks before this page reads them,
  // so stop() is only for a turn the server no longer runs (`stopped: false`).
  async function stopTurn() {
    const answer = await fetch(`${API}/${encodeURIComponent(id)}/stop`, { method: "POST" });
    const { stopped } = await answer.json().catch(() => ({ stopped: false }));
    if (!stopped) await stop();
  }

  function submit(event) {
    event.preventDefault();
    if (!input.trim() || busy) return;
    setNotice("");
    lastSent.current = input;
    sendMessage({ text: input });
    setInput("");
  }

  const answer = (part, approved) => addToolApprovalResponse({ id: part.approval.id, approved });
  const last = messages.at(-1);
  const waits = last?.parts.some((p) => isTool(p) && (p.state === "approval-requested" || p.state === "input-available"));

  return (
    <div className="app">
      <header className="top">
        <span className="brand">helix-stream <span className="muted">+ useChat</span></span>
        <span className="muted small">{status === "submitted" ? "Waiting for the model…" : status === "streaming" ? "Writing…" : ""}</span>
      </header>
      <main className="messages">
        {messages.length === 0 && <p className="empty">Ask something — “What is the weather in Paris?”</p>}
        {messages.map((message) => (
          <div key={message.id} className={`msg ${message.role}`} data-message-id={message.id}>
            <div className="bubble">
              {message.parts.map((part, i) => <Part key={i} message={message} part={part} answer={answer} busy={busy} />)}
              {message.metadata?.error !== undefined ? (
                <p className="failure">{errorMessage(message.metadata.error)}</p>
              ) : message.metadata?.interrupted && <span className="interrupted">interrupted</span>}
            </div>
          </div>
        ))}
        {failed && <p className="failure" role="alert">{errorMessage(error.message)}</p>}
      </main>
      {notice && <p className="notice" role="alert">{notice}</p>}
      <form className="composer" onSubmit={submit}>
        <input id="input" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Send a message…" autoComplete="off" />
        {busy ? <button id="stop" type="button" className="danger" onClick={stopTurn}>Stop</button>
          : <button id="send" type="submit" disabled={!input.trim()}>Send</button>}
        {!busy && last?.role === "assistant" && !waits && (
          <button id="regenerate" type="button" className="ghost" onClick={() => regenerate()}>↻ Regenerate</button>
        )}
      </form>
      <p id="status" hidden>{status}</p>
    </div>
  );
}

function Part({ message, part, answer, busy }) {
  if (part.type === "text") return <p className="text">{part.text}</p>;
  if (!isTool(part)) return null;
  // The call's sign-in link (a `data-authorization` part), until the call has its result.
  const signIn = part.state === "input-available" && !busy && message.parts.find(
    (p) => p.type === "data-authorization" && p.data?.toolCallId === part.toolCallId,
  );
  return (
    <div className="tool" data-state={part.state}>
      <div className="tool-head">
        <code>{toolName(part)}()</code>
        <span className={`badge ${part.state}`}>{signIn ? "waiting for sign-in" : part.state}</span>
      </div>
      {part.errorText && <p className="tool-error">{part.errorText}</p>}
      {part.state === "output-available" && <pre>{JSON.stringify(part.output, null, 2)}</pre>}
      {part.state === "approval-requested" && (
        <div className="actions">
          <button type="button" onClick={() => answer(part, true)}>Approve</button>
          <button type="button" className="ghost" onClick={() => answer(part, false)}>Deny</button>
        </div>
      )}
      {signIn && (
        <div className="actions">
          <a className="sign-in" href={signIn.data.url} target="_blank" rel="noopener">
            Sign in to {signIn.data.strategy}
          </a>
        </div>
      )}
    </div>
  );
}
