"""helix_stream: the Vercel AI SDK's generation loop, context rows and UI stream for litellm."""
