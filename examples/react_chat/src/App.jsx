// useChat (ai@7) against helix_stream's chat server: resume after a reload, stop on the server,
// approvals (and a call left waiting when a new message is sent, settled on its own message).
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useState } from "react";

export const API = "/api/chat";
const transport = new DefaultChatTransport({ api: API });

export function App({ id, initialMessages }) {
  const { messages, setMessages, sendMessage, regenerate, stop, status, error, addToolApprovalResponse } = useChat({
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
  });
  const answer = (part, approved) => addToolApprovalResponse({ id: part.approval.id, approved });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";

  // stop() alone only closes this page's request, and the server's turn would run on (a
  // reload must not end it). The stop route ends the turn on the server: what was streamed
  // is stored as interrupted and the stream ends with `abort`; stop() then has nothing left.
  async function stopTurn() {
    await fetch(`${API}/${encodeURIComponent(id)}/stop`, { method: "POST" });
    await stop();
  }

  function submit(event) {
    event.preventDefault();
    if (!input.trim() || busy) return;
    sendMessage({ text: input });
    setInput("");
  }

  return (
    <main style={{ maxWidth: 720, margin: "0 auto", fontFamily: "system-ui", overflowWrap: "anywhere" }}>
      <h1>helix-stream + useChat</h1>
      {messages.map((message) => (
        <div key={message.id} className={`msg ${message.role}`} data-message-id={message.id}>
          <b>{message.role}: </b>
          {message.parts.map((part, i) =>
            part.type === "text" ? <span key={i} className="text">{part.text}</span>
            : part.type.startsWith("tool-") ? (
              <span key={i} className="tool" data-state={part.state}>
                <code>[{part.type.slice(5)}: {part.state}{part.errorText ? ` — ${part.errorText}` : ""}] </code>
                {part.state === "approval-requested" && (
                  <>
                    <button type="button" onClick={() => answer(part, true)}>Approve</button>
                    <button type="button" onClick={() => answer(part, false)}>Deny</button>
                  </>
                )}
              </span>
            )
            : null,
          )}
          {message.metadata?.interrupted && <em className="interrupted"> (interrupted)</em>}
        </div>
      ))}
      {error && <p className="error" role="alert">{error.message}</p>}
      <form onSubmit={submit}>
        <input id="input" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Say something…" />
        <button id="send" type="submit" disabled={busy}>Send</button>
        {busy && <button id="stop" type="button" onClick={stopTurn}>Stop</button>}
        {!busy && messages.at(-1)?.role === "assistant" && (
          <button id="regenerate" type="button" onClick={() => regenerate()}>Regenerate</button>
        )}
      </form>
      <p id="status">{status}</p>
    </main>
  );
}
