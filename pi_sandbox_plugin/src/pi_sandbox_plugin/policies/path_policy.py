"""The path policy of the file tools: allowed roots for reading and for writing,
and denied globs.

::

    [sandbox.policy]
    read_roots = ["."]                  # relative to the session cwd; "~" expanded
    write_roots = ["."]
    deny_paths = [".env", "**/.ssh/**", "~/.aws/**"]

* **Roots**: a path may be read when it is, or is below, a read root, and written when it is,
  or is below, a write root. Relative roots are relative to the session cwd (the workspace);
  ``~`` is expanded. Roots are compared on resolved paths (every symlink resolved).
* **Denied globs** are gitignore patterns (pathspec's ``gitignore``) relative to the workspace:
  a pattern without a ``/`` (``.env``) matches that name at any depth, one with a ``/``
  (``config/secret.json``) is anchored at the workspace, ``**/`` matches any depth, and a
  pattern matching a directory denies everything below it. A pattern starting with ``~`` (after
  expansion) or ``/`` is absolute (``~/.aws/**``). A denied path can be neither read nor
  written, whatever the roots say. Both the path as the tool named it and its resolved path are
  checked, so neither a symlink named ``.env`` nor a link to ``.env`` gets through.
* **pi's own full-output files** (``{tempdir}/pi-bash-{16 hex}.log``, written by the bash tool
  on this machine when output is truncated) stay readable when ``allow_output_files`` is true:
  exactly a regular file of that name in the temporary directory, owned by this user,
  mode ``0600``, with one link, so neither a symlink nor a hard link to another file planted
  under that name passes.

:class:`PathPolicy` decides; the enforcement is
:mod:`pi_sandbox_plugin.policies.guarded_files` (at the
moment of each operation, on the realpath) and the before-hook (an early, clear error) for every
tool that declares its path arguments (:func:`declared_path_reason`), built-in or not.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pathspec

from pi_core import PathArgument
from pi_core.backends import resolve_to_cwd

OUTPUT_FILE_NAME = re.compile(r"pi-bash-[0-9a-f]{16}\.log")
"""The name of a full-output file of the bash tool (``output_accumulator``)."""

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class PathDecision:
    """One decision: ``allowed``, and the ``reason`` a denied path is refused (empty when
    allowed)."""

    allowed: bool
    reason: str = ""


ALLOWED = PathDecision(True)


@dataclass(frozen=True)
class DenyPattern:
    """One ``deny_paths`` entry: the ``text`` as configured, whether it is ``absolute`` and its
    compiled ``spec``."""

    text: str
    absolute: bool
    spec: pathspec.PathSpec

    def matches(self, relative: str) -> bool:
        """Whether ``relative`` (to the workspace, or to ``/`` for an absolute pattern)
        matches."""
        return bool(relative) and self.spec.match_file(relative)


def _under(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _relative(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` (``None`` when not below it; ``""`` for ``root``)."""
    if path == root:
        return ""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _is_pi_output_file(path: str, temp_dir: str) -> bool:
    if posixpath.dirname(path) != temp_dir or not OUTPUT_FILE_NAME.fullmatch(
        posixpath.basename(path)
    ):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_nlink == 1
        and st.st_uid == os.geteuid()
        and stat.S_IMODE(st.st_mode) == 0o600
    )


def compile_deny_pattern(text: str, home: str | None = None) -> DenyPattern:
    """The :class:`DenyPattern` of one ``deny_paths`` entry (``~`` expanded with ``home``,
    default this user's home). Raises ``ValueError`` for an empty pattern, a negation
    (``!...``) or one pathspec rejects."""
    pattern = text.strip()
    if not pattern:
        raise ValueError("a denied path pattern must not be empty")
    if pattern.startswith("!"):
        raise ValueError(f"{text!r}: negation (!) is not supported: list only the paths to deny")
    if pattern == "~" or pattern.startswith("~/"):
        pattern = (home or os.path.expanduser("~")).rstrip("/") + pattern[1:]
    absolute = pattern.startswith("/")
    try:
        spec = pathspec.PathSpec.from_lines("gitignore", [pattern])
    except Exception as error:  # pathspec raises its own error types for bad patterns
        raise ValueError(f"bad denied path pattern {text!r}: {error}") from None
    return DenyPattern(text=text, absolute=absolute, spec=spec)


class PathPolicy:
    """Decides whether a path may be read or written (see the module docstring).

    ``workspace``: the session cwd (absolute). ``read_roots``/``write_roots``: as configured
    (relative to ``workspace``, ``~`` expanded). ``deny_paths``: the glob patterns.
    ``resolve``: how roots and the workspace are resolved (``os.path.realpath`` for a local
    file system; a remote backend passes ``posixpath.normpath``, its paths being resolved by
    the backend). ``allow_output_files``: keep pi's full-output files (on this machine)
    readable. ``home``: for ``~``.

    Raises ``ValueError`` for a bad pattern.
    """

    def __init__(
        self,
        workspace: str,
        *,
        read_roots: Sequence[str] = (".",),
        write_roots: Sequence[str] = (".",),
        deny_paths: Sequence[str] = (),
        resolve: Callable[[str], str] = os.path.realpath,
        allow_output_files: bool = True,
        home: str | None = None,
    ) -> None:
        self.home = home or os.path.expanduser("~")
        self.workspace = posixpath.normpath(workspace)
        self.real_workspace = resolve(self.workspace)
        self.read_roots = tuple(dict.fromkeys(resolve(self._absolute(r)) for r in read_roots))
        self.write_roots = tuple(dict.fromkeys(resolve(self._absolute(r)) for r in write_roots))
        self.deny_patterns = tuple(compile_deny_pattern(p, self.home) for p in deny_paths)
        self.allow_output_files = allow_output_files
        self.temp_dir = os.path.realpath(tempfile.gettempdir())

    def _absolute(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            path = self.home.rstrip("/") + path[1:]
        return posixpath.normpath(posixpath.join(self.workspace, path))

    # -- the parts ---------------------------------------------------------------------------

    def denied_by(self, path: str) -> str | None:
        """The ``deny_paths`` pattern (as configured) that ``path`` (absolute) matches, or
        ``None``. A relative pattern is matched against ``path`` relative to the workspace
        (as named and as resolved); an absolute one against the whole path."""
        path = posixpath.normpath(path)
        relatives = {
            rel
            for rel in (_relative(path, self.workspace), _relative(path, self.real_workspace))
            if rel
        }
        for pattern in self.deny_patterns:
            if pattern.absolute:
                if pattern.matches(path.lstrip("/")):
                    return pattern.text
            elif any(pattern.matches(rel) for rel in relatives):
                return pattern.text
        return None

    def is_output_file(self, realpath: str) -> bool:
        """Whether ``realpath`` is one of pi's full-output files (see the module docstring)."""
        return self.allow_output_files and _is_pi_output_file(realpath, self.temp_dir)

    def _check(
        self, realpath: str, requested: str | None, roots: tuple[str, ...], verb: str
    ) -> PathDecision:
        realpath = posixpath.normpath(realpath)
        shown = (
            f"'{requested}' (resolved: '{realpath}')"
            if requested and requested != realpath
            else f"'{realpath}'"
        )
        for candidate in (requested, realpath):
            if candidate is None:
                continue
            pattern = self.denied_by(candidate)
            if pattern is not None:
                return PathDecision(
                    False,
                    f"{verb.capitalize()} {shown} is denied by the sandbox path policy "
                    f"(deny_paths pattern {pattern!r})",
                )
        if any(_under(realpath, root) for root in roots):
            return ALLOWED
        kind = "read_roots" if verb == "reading" else "write_roots"
        listed = ", ".join(roots) or "none"
        return PathDecision(
            False,
            f"{verb.capitalize()} {shown} is not allowed by the sandbox path policy: it is "
            f"outside the allowed {kind} ({listed})",
        )

    # -- the decisions ----------------------------------------------------------------------

    def check_read(self, realpath: str, requested: str | None = None) -> PathDecision:
        """May the file at ``realpath`` (absolute, symlinks resolved) be read? ``requested``:
        the path as the tool named it (absolute), also checked against the denied globs and
        named in the reason."""
        if self.is_output_file(posixpath.normpath(realpath)):
            return ALLOWED
        return self._check(realpath, requested, self.read_roots, "reading")

    def check_write(self, realpath: str, requested: str | None = None) -> PathDecision:
        """May the file at ``realpath`` be written (or a directory created there)? As
        :meth:`check_read`, with the write roots."""
        return self._check(realpath, requested, self.write_roots, "writing")

    def rg_exclude_globs(self) -> list[str]:
        """``--glob=!PATTERN`` arguments for ripgrep for the relative patterns that mean the
        same at any depth (no ``/``, or starting with ``**/``); results are filtered anyway."""
        globs = []
        for pattern in self.deny_patterns:
            text = pattern.text.strip().rstrip("/")
            if pattern.absolute or not text or text.startswith("!"):
                continue
            if "/" not in text or (text.startswith("**/") and "/" not in text[3:].rstrip("*/")):
                globs.append(f"--glob=!{text}")
        return globs

    def literal_deny_paths(self) -> list[str]:
        """The deny patterns without glob characters, as absolute paths (a relative one below
        the workspace): what the bwrap backend can mask without walking the tree."""
        paths = []
        for pattern in self.deny_patterns:
            text = pattern.text.strip().rstrip("/")
            if _GLOB_CHARS.search(text) or text.startswith("!"):
                continue
            paths.append(self._absolute(text))
        return paths


def declared_path_reason(
    path_arguments: Sequence[PathArgument],
    args: Any,
    cwd: str,
    policy: PathPolicy,
    resolve: Callable[[str], str] = os.path.realpath,
) -> str | None:
    """The before-hook's early check of a call: the reason to block it, or ``None``.

    Each of the tool's declared path arguments (``AgentTool.path_arguments``; the argument's
    ``default`` when it is absent, e.g. ``"."`` for ls/find/grep) is resolved against ``cwd``
    as the tools do (:func:`pi_core.backends.resolve_to_cwd`), then with ``resolve``
    (``os.path.realpath`` locally; a remote backend passes ``posixpath.normpath``), and checked
    for reading and/or writing as declared. Any tool declaring its paths gets the same check
    and the same texts as the built-in file tools; a value that is not a string is left to the
    tool's own validation."""
    for declared in path_arguments:
        raw = args.get(declared.name) if isinstance(args, Mapping) else None
        if raw is None and not isinstance(args, Mapping):
            raw = getattr(args, declared.name, None)
        if raw is None:
            raw = declared.default
        if not isinstance(raw, str):
            continue
        named = resolve_to_cwd(raw, cwd)
        real = resolve(named)
        decisions = []
        if declared.read:
            decisions.append(policy.check_read(real, named))
        if declared.write:
            decisions.append(policy.check_write(real, named))
        for decision in decisions:
            if not decision.allowed:
                return decision.reason
    return None


__all__ = [
    "ALLOWED",
    "OUTPUT_FILE_NAME",
    "DenyPattern",
    "PathDecision",
    "PathPolicy",
    "compile_deny_pattern",
    "declared_path_reason",
]
