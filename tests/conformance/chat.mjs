// The AI SDK's own chat (AbstractChat, what useChat wraps) against a helix_stream server.
//
//   node chat.mjs <url> '<json scenario>'
//
// The scenario is {id, actions: [...]}; each action is one of
//   {"send": {"text": "...", "files": [{type: "file", mediaType, url, filename?}]}}
//   {"regenerate": {"index": n}}     (the message at index n of the chat; none: the last one)
//   {"signIn": {}}      follow the URL of the last data-authorization part, as a browser does
//                       (the sign-in service redirects to the server's callback)
//   {"continue": {}}    sendMessage() with no message: the chat resumes its last message
// Prints one JSON line: {steps: [{messages, status, error}], aiVersion}, a snapshot of the
// chat's state after each action.
import { readFileSync } from "node:fs";
import { AbstractChat, DefaultChatTransport } from "ai";

const [url, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const aiVersion = JSON.parse(
  readFileSync(new URL("./node_modules/ai/package.json", import.meta.url), "utf8"),
).version;

// The smallest ChatState: what the React, Vue and Svelte bindings keep in their stores.
class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage = (message) => {
    this.messages = this.messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new State() });
  }
}

// The README's recipe ("A call left waiting, then a new message"): a call of an earlier
// message settled by this turn comes as a transient part; the page applies it to that message
// (useChat: setMessages). Every chat here applies it.
function onData(part) {
  if (part.type !== "data-tool-settled") return;
  const { messageId, toolCallId, ...update } = part.data;
  chat.messages = chat.messages.map((m) => (m.id !== messageId ? m : {
    ...m, parts: m.parts.map((p) => (p.toolCallId === toolCallId ? { ...p, ...update } : p)),
  }));
}

const chat = new Chat({
  id: scenario.id, transport: new DefaultChatTransport({ api: url }), onData,
});
const steps = [];
for (const action of scenario.actions) {
  try {
    if (action.send) {
      await chat.sendMessage({ text: action.send.text, files: action.send.files });
    } else if (action.signIn) {
      const parts = chat.messages.flatMap((m) => m.parts);
      const link = parts.filter((p) => p.type === "data-authorization").at(-1);
      const page = await fetch(link.data.url); // redirects to the callback, like a browser
      steps.push({ signedIn: { status: page.status, url: page.url, text: await page.text() } });
      continue;
    } else if (action.continue) {
      await chat.sendMessage();
    } else if (action.regenerate) {
      const index = action.regenerate.index;
      await chat.regenerate(index === undefined ? {} : { messageId: chat.messages[index].id });
    }
  } catch (error) {
    steps.push({ thrown: String(error?.message ?? error) });
  }
  steps.push({
    messages: structuredClone(chat.messages),
    status: chat.status,
    error: chat.error ? String(chat.error.message ?? chat.error) : null,
  });
}
process.stdout.write(JSON.stringify({ steps, aiVersion }) + "\n");
