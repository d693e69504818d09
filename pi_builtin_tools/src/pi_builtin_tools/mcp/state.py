"""The user's state directory of pi's MCP plumbing: the generated bearer tokens of ``pi mcp
serve --http`` and the OAuth tokens of the MCP servers pi connects to."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


def user_state_dir() -> str:
    """``$XDG_STATE_HOME/pi`` (``~/.local/state/pi`` by default), created ``0700``; a
    ``PermissionError`` when it is not a private directory of this user."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    path = os.path.join(base, "pi")
    os.makedirs(base, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise PermissionError(f"{path}: not a private directory of this user (expected mode 0700)")
    return path


def write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically, mode ``0600``."""
    fd, temporary = tempfile.mkstemp(prefix=".pi-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as f:  # mkstemp creates it 0600
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


__all__ = ["user_state_dir", "write_private"]
