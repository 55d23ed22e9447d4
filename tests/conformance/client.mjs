// The AI SDK's own client against a helix_stream server: what `useChat` does, minus React.
//
//   node client.mjs <url> '<json body>'
//
// Must sit next to a node_modules/ that holds `ai` (tests/conformance/_client.py copies it into
// each test-owned install folder). Posts through DefaultChatTransport, which validates every
// chunk with the package's uiMessageChunkSchema, folds the chunks with readUIMessageStream (from
// the last assistant message when the request continues one, as useChat does) and prints one
// JSON line: {chunks, finalMessage, preliminaryParts, error, errors, aiVersion}
// (preliminaryParts: every tool part of a snapshot that held a preliminary output, in order).
import { readFileSync } from "node:fs";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, bodyText] = process.argv.slice(2);
const { id = "chat-1", messages = [], trigger = "submit-message", messageId, ...extra } =
  JSON.parse(bodyText ?? "{}");

const aiVersion = JSON.parse(
  readFileSync(new URL("./node_modules/ai/package.json", import.meta.url), "utf8"),
).version;

const describe = (error) => ({
  name: error?.name ?? "Error",
  message: String(error?.message ?? error),
});

const result = {
  chunks: [], finalMessage: null, preliminaryParts: [], error: null, errors: [], aiVersion,
};
try {
  const transport = new DefaultChatTransport({ api: url });
  const stream = await transport.sendMessages({
    chatId: id,
    messages,
    trigger,
    messageId,
    abortSignal: undefined,
    body: extra,
  });
  const recorded = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        // A copy: the client keeps data chunks as parts and mutates them on replacement.
        result.chunks.push(structuredClone(chunk));
        controller.enqueue(chunk);
      },
    }),
  );
  const last = messages.at(-1);
  for await (const snapshot of readUIMessageStream({
    message: last?.role === "assistant" ? last : undefined,
    stream: recorded,
    onError: (error) => result.errors.push(describe(error)),
  })) {
    result.finalMessage = snapshot;
    for (const part of snapshot.parts) {
      if (part.preliminary === true) result.preliminaryParts.push(structuredClone(part));
    }
  }
} catch (error) {
  result.errors.push(describe(error));
}
result.error = result.errors[0] ?? null;
process.stdout.write(JSON.stringify(result) + "\n");
