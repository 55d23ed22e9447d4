"""Model access: the litellm adapter (the only module that imports litellm) and the demo model."""
