// What to tell a user when helix_stream's chat server refuses a request or a turn fails: the
// server's machine codes (`{"error": {"code", "message"}}` before a stream; an `error` chunk
// during one) put in words, with what to do. No ids, no codes on screen.
//
// It has no dependency: copy it into your app, or import it from the helix_stream package
// (`helix_stream/static/refusal.js`, served by the demo at /static/refusal.js).
//
//   import { refusalMessage, errorMessage } from "./refusal.js";
//   const { messages, error } = useChat({ ... });
//   error && <p role="alert">{refusalMessage(error).text}</p>
//
// useChat's DefaultChatTransport throws an Error whose message is the response body of a
// non-2xx answer: refusalMessage reads that body (or a body string, or a parsed body).

const WORDS = {
  state_session_busy: "This chat is still answering (in another tab or window). Wait for that answer to end, then send again.",
  payload_too_large: "That message is too large to send. Shorten it, or attach smaller files.",
  rate_limited: "Too many requests right now. Wait a moment, then send again.",
  model_rate_limited: "The model provider is busy (rate limited). Wait a minute, then send again or press Regenerate.",
  model_unavailable: "The model provider is unavailable right now. Try again in a minute.",
  model_timeout: "The model took too long to answer. Try again.",
  model_auth_error: "The server's key for the model provider was refused. Tell the app's owner.",
  model_bad_request: "The model provider refused this request. Try rephrasing, or start a new chat.",
  model_error: "The model failed to answer. Try again.",
  output_invalid: "The model's answer did not have the expected form. Try again.",
  store_unavailable: "The chat's storage is unavailable right now. Try again in a minute.",
  store_commit_unknown: "The chat's storage did not confirm the last write. Reload the page to see what was kept.",
  unauthenticated: "You are not signed in to this chat. Sign in, then send again.",
  forbidden: "You do not have access to this chat.",
  state_session_not_found: "This chat no longer exists. Start a new chat.",
  state_invalid: "This chat cannot continue from here: answer what it waits for, or send a new message.",
  state_lease_lost: "This answer was taken over by another server. Reload the page.",
  hook_failed: "The app stopped this answer. Try again, or start a new chat.",
  tool_failed: "A tool failed while answering. Try again.",
  validation_error: "The server could not use that input.",
  invalid_request: "The server could not use that request.",
  internal_error: "Something went wrong on the server. Try again.",
};

// HTTP statuses a proxy or gateway may answer with before the app sees the request.
const BY_STATUS = {
  401: "unauthenticated", 403: "forbidden", 404: "state_session_not_found", 409: "state_session_busy",
  413: "payload_too_large", 429: "rate_limited", 500: "internal_error", 502: "model_unavailable",
  503: "store_unavailable", 504: "model_timeout",
};

const RETRYABLE = new Set([
  "state_session_busy", "rate_limited", "model_rate_limited", "model_unavailable", "model_timeout",
  "store_unavailable", "internal_error", "model_error", "output_invalid", "tool_failed",
]);

function parse(body) {
  if (body instanceof Error) body = body.message;
  if (typeof body !== "string") return body && typeof body === "object" ? body : null;
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
}

/**
 * A refusal of the chat server (before any stream) in words.
 * @param {Error | string | object} body useChat's `error`, a response body, or its JSON.
 * @param {number} [status] The HTTP status, when known (a non-JSON body from a proxy).
 * @returns {{refused: boolean, code: string, text: string, retryable: boolean}} `refused` is
 *   false for anything that is not a refusal body (then `text` is the error's own text).
 */
export function refusalMessage(body, status) {
  const parsed = parse(body);
  const error = parsed && typeof parsed.error === "object" && parsed.error;
  let code = typeof error?.code === "string" ? error.code : BY_STATUS[status] || "";
  if (!code && !status) {
    const text = body instanceof Error ? body.message : String(body ?? "");
    return { refused: false, code: "", text: errorMessage(text), retryable: true };
  }
  if (!code) code = status >= 500 ? "internal_error" : "invalid_request";
  let text = WORDS[code] || WORDS.internal_error;
  // A bad request says what was wrong (a field, a media type): readable, and ours to show.
  if ((code === "invalid_request" || code === "validation_error") && error?.message) {
    text = `${text} ${sentence(error.message)}`;
  }
  return { refused: true, code, text, retryable: RETRYABLE.has(code) };
}

/**
 * The text of a failed turn (an `error` chunk's `errorText`, or a stored failure's code) in
 * words. A code it knows becomes its sentence; any other text is shown as it is.
 * @param {string} errorText
 * @returns {string}
 */
export function errorMessage(errorText) {
  if (WORDS[errorText]) return WORDS[errorText];
  if (!errorText || errorText === "An error occurred.") {
    return "The answer failed. Try again: press Regenerate, or send your message again.";
  }
  return errorText;
}

function sentence(text) {
  const trimmed = String(text).trim().replace(/\s+/g, " ").slice(0, 300);
  return /[.!?]$/.test(trimmed) ? trimmed.charAt(0).toUpperCase() + trimmed.slice(1)
    : `${trimmed.charAt(0).toUpperCase()}${trimmed.slice(1)}.`;
}
