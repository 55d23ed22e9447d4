// The status line while the server retries the model provider, in words: the server sends a
// transient `data-retry` part for each retried attempt, before it waits (docs/ui-message-stream.md,
// "The status during provider retries"):
//
//   {"type": "data-retry", "transient": true, "data": {"attempt": 2, "attempts": 3,
//    "reason": "no_answer" | "error", "code": "model_timeout", "delay": 1.7, "message": "..."}}
//
// The page shows retryStatus(part.data) until the answer's text comes or the turn ends. A
// useChat app can do the same in its onData callback (the part is transient: it never lands in
// the message).

// Why an attempt failed, by the error's code; any other code: the provider failed.
const WHY = {
  model_rate_limited: "The model provider is busy (rate limited)",
  model_unavailable: "The model provider is unavailable",
  model_timeout: "The model took too long to answer",
  model_error: "The model provider failed",
};

/**
 * The status to show for one `data-retry` part's data.
 * @param {{attempt?: number, attempts?: number, reason?: string, code?: string, delay?: number}} data
 * @returns {string} e.g. "The model has not answered yet; retrying (attempt 2 of 3)…"
 */
export function retryStatus(data) {
  const attempt = Number(data?.attempt);
  const attempts = Number(data?.attempts);
  const of = attempt > 0 && attempts > 0 ? ` (attempt ${attempt} of ${attempts})` : "";
  if (data?.reason === "no_answer") return `The model has not answered yet; retrying${of}…`;
  const delay = Number(data?.delay);
  const wait = delay >= 1 ? ` in ${Math.round(delay)} s` : "";
  return `${WHY[data?.code] || WHY.model_error}; retrying${wait}${of}…`;
}
