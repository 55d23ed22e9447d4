"""Sandboxes and skills.

- :class:`Sandbox` / :class:`SandboxResult` / :class:`SandboxProvider`: the contract a tool
  uses and a backend implements (``helix_stream/_sandbox_protocol.py``, below tools);
- :func:`workspace_parts` / :func:`resolve_within`: the one rule for logical ``/workspace``
  paths (``_paths``);
- :class:`LocalSandbox`: directories on this machine, for development and trusted code — not
  file system or network isolation (``_local``; commands started by ``_process`` in the
  namespaces ``_confine`` chooses: the server's ``/proc`` is out of their sight);
- :class:`BubblewrapSandbox`: the same directories, each command confined by bubblewrap to its
  workspace, without network (``_bubblewrap``);
- :class:`Skill` / :func:`skills_from_dir`: agentskills.io skills (``_skills``);
- :class:`SkillSet`: an agent's skill index, its ``load_skill`` tool, the layout in a sandbox and
  the ``get_skill`` handles (``_skill_set``).

Nothing here imports litellm; PyYAML is imported only when skills are read from disk.
"""

from __future__ import annotations

from .._sandbox_protocol import Sandbox, SandboxProvider, SandboxResult
from ._bubblewrap import BubblewrapSandbox
from ._local import DEFAULT_PATH, LocalSandbox, LocalSandboxSession
from ._paths import WORKSPACE, resolve_within, workspace_parts, workspace_path
from ._skill_set import LOAD_SKILL_TOOL, SKILLS_DIR, SkillFile, SkillHandle, SkillSet
from ._skills import SKILL_FILE, Skill, skills_from_dir

__all__ = [
    "DEFAULT_PATH",
    "LOAD_SKILL_TOOL",
    "SKILLS_DIR",
    "SKILL_FILE",
    "WORKSPACE",
    "BubblewrapSandbox",
    "LocalSandbox",
    "LocalSandboxSession",
    "Sandbox",
    "SandboxProvider",
    "SandboxResult",
    "Skill",
    "SkillFile",
    "SkillHandle",
    "SkillSet",
    "resolve_within",
    "skills_from_dir",
    "workspace_parts",
    "workspace_path",
]
