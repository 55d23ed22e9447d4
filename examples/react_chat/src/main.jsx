// Restore the chat named in the URL (#<id>), then hand its messages to useChat: the page
// shows what the server stored, and `resume: true` follows an answer still running.
import { createRoot } from "react-dom/client";
import { App, API } from "./App.jsx";
import "./styles.css";

const id = decodeURIComponent(location.hash.slice(1)) || `chat-${crypto.randomUUID()}`;
history.replaceState(null, "", `#${encodeURIComponent(id)}`);

const response = await fetch(`${API}/${encodeURIComponent(id)}/messages`);
const initialMessages = response.ok ? await response.json() : [];  // [] for a new chat
createRoot(document.getElementById("root")).render(<App id={id} initialMessages={initialMessages} />);
