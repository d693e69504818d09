"""Checkpoints: every change a session makes to its workspace, and the way back.

The floor between the session (:mod:`pi_core._session`) and the pipeline
(:mod:`pi_core._pipeline`), which drives it around each tool call that declares ``mutates``:

* :mod:`~pi_core._checkpoints.state`: :class:`State`, what was at a path;
* :mod:`~pi_core._checkpoints.store`: the SQLite store of a workspace, content-addressed blobs,
  :func:`checkpoint_dir` (where pi keeps them);
* :mod:`~pi_core._checkpoints.recorder`: :class:`SessionCheckpoints`, one session's recorder
  (the pipeline's and the mutation queue's side);
* :mod:`~pi_core._checkpoints.history`: listing, recovery after a crash, rewind plans;
* :mod:`~pi_core._checkpoints.api`: what programs and ``pi checkpoints``/``pi rewind`` call.

The workspace itself is read and restored through the backend's
:class:`~pi_core._backend_kit.tree.WorkspaceTree`.
"""

from pi_core._checkpoints.api import (
    Checkpoints,
    checkpoint_sessions,
    find_workspace,
    list_checkpoints,
    prune_checkpoints,
    rewind,
)
from pi_core._checkpoints.history import (
    Checkpoint,
    CheckpointError,
    CheckpointSession,
    FileChange,
    PathIssue,
    RewindContext,
    RewindRefused,
    RewindResult,
)
from pi_core._checkpoints.recorder import CheckpointFailed, SessionCheckpoints
from pi_core._checkpoints.state import State
from pi_core._checkpoints.store import checkpoint_dir

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "CheckpointFailed",
    "CheckpointSession",
    "Checkpoints",
    "FileChange",
    "PathIssue",
    "RewindContext",
    "RewindRefused",
    "RewindResult",
    "SessionCheckpoints",
    "State",
    "checkpoint_dir",
    "checkpoint_sessions",
    "find_workspace",
    "list_checkpoints",
    "prune_checkpoints",
    "rewind",
]
