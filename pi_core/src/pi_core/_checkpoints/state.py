"""The state of one path at one moment, as checkpoints record it: :class:`State`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_KINDS = {"file": "f", "dir": "d", "symlink": "l", "other": "o"}
_NAMES = {v: k for k, v in _KINDS.items()}


@dataclass(frozen=True, slots=True)
class State:
    """What was at a path: ``kind`` (``file``, ``dir``, ``symlink``, ``other``: a FIFO, a
    socket, a device), permission ``mode`` bits, a file's content ``digest`` (SHA-256) and
    ``size``, a symlink's ``target``. ``unstored`` says why a file's content cannot be restored
    (``"too large"``: over ``max_file_bytes``, recorded by hash and size only; ``"unreadable"``),
    ``None`` when it can."""

    kind: str
    mode: int
    digest: str | None = None
    target: str | None = None
    size: int = 0
    unstored: str | None = None

    def same(self, other: State | None) -> bool:
        """Whether ``other`` is the same content: kind, mode, digest and size, target."""
        return (
            other is not None
            and self.kind == other.kind
            and self.mode == other.mode
            and self.digest == other.digest
            and self.size == other.size
            and self.target == other.target
        )

    @property
    def restorable(self) -> bool:
        """Whether pi can put this state back (a stored file, a directory, a symlink)."""
        return self.kind != "other" and self.unstored is None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"k": _KINDS[self.kind], "m": self.mode}
        if self.digest is not None:
            data["h"] = self.digest
        if self.target is not None:
            data["t"] = self.target
        if self.size:
            data["s"] = self.size
        if self.unstored is not None:
            data["x"] = self.unstored
        return data

    def to_text(self) -> str:
        """:meth:`to_json` as JSON text (written without the ``json`` module: the common
        states have no text that needs escaping)."""
        if self.target is not None or self.unstored is not None:
            return json.dumps(self.to_json(), separators=(",", ":"))
        text = f'{{"k":"{_KINDS[self.kind]}","m":{self.mode}'
        if self.digest is not None:
            text += f',"h":"{self.digest}"'
        if self.size:
            text += f',"s":{self.size}'
        return text + "}"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        return cls(
            _NAMES[data["k"]],
            int(data["m"]),
            data.get("h"),
            data.get("t"),
            int(data.get("s", 0)),
            data.get("x"),
        )


__all__ = ["State"]
