// `npm run dev` serves the page on http://localhost:5173 and passes /api/* to the chat server
// (`helix-stream serve`, port 8000): the page and the routes share one origin, as in production
// behind one host — which the sign-in callback page needs to tell the chat tab (a same-origin
// BroadcastChannel). To call the server from another origin instead, start it with
// create_app(..., cors_origins=["http://localhost:5173"]) and set API in src/App.jsx to its URL.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  server: {
    proxy: { "/api": process.env.HELIX_SERVER ?? "http://127.0.0.1:8000" },
    // src/App.jsx imports the package's refusal helper from helix_stream/static/.
    fs: { allow: [fileURLToPath(new URL("../..", import.meta.url))] },
  },
});
