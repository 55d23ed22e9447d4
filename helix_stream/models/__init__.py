"""Model access: the litellm adapter (the only module that imports litellm) and the demo model.

:func:`load_litellm` imports litellm (and registers the embedded ``helix/demo`` provider);
call it at startup in a server that mounts :func:`helix_stream.server.routes`. Importing this
package does not import litellm.
"""

from __future__ import annotations

from ._litellm import load_litellm

__all__ = ["load_litellm"]
