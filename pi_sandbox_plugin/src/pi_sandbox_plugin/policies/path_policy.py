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
* **pi's own files** (``protected``: the session's :attr:`pi_core.SessionContext.protected_files`:
  the config file, rules, hook scripts, the session file, the audit log) cannot be written, and a
  hidden one (the audit log) cannot be read either: :func:`protected_reason` words the refusal.
  Other names of a denied or protected file (a hard link, a bind mount) are recognised by
  :mod:`pi_sandbox_plugin.policies.file_identity` on this machine's file systems.
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

import fnmatch
import functools
import os
import posixpath
import re
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pathspec

from pi_core import PathArgument, ProtectedFile
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

    @functools.cached_property
    def _regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(
            p.regex for p in self.spec.patterns if p.include and isinstance(p.regex, re.Pattern)
        )

    def matches(self, relative: str) -> bool:
        """Whether ``relative`` (to the workspace, or to ``/`` for an absolute pattern; a
        normalised path without a leading ``/``) matches: the spec's regular expressions
        themselves (what ``spec.match_file`` runs after normalising the path, 6x faster)."""
        return bool(relative) and any(regex.match(relative) for regex in self._regexes)


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
    readable. ``home``: for ``~``. ``protected``: pi's own files by resolved path (the live
    :attr:`pi_core.SessionContext.protected_files` of the session, read at each check): none
    can be written, and a hidden one cannot be read either (:meth:`protected_reason`).

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
        protected: Mapping[str, ProtectedFile] | None = None,
    ) -> None:
        self.home = home or os.path.expanduser("~")
        self.workspace = posixpath.normpath(workspace)
        self.real_workspace = resolve(self.workspace)
        self.read_roots = tuple(dict.fromkeys(resolve(self._absolute(r)) for r in read_roots))
        self.write_roots = tuple(dict.fromkeys(resolve(self._absolute(r)) for r in write_roots))
        self.deny_patterns = tuple(compile_deny_pattern(p, self.home) for p in deny_paths)
        self.allow_output_files = allow_output_files
        self.temp_dir = os.path.realpath(tempfile.gettempdir())
        self.protected: Mapping[str, ProtectedFile] = protected if protected is not None else {}

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

    def protected_file(self, realpath: str, *, reading: bool = False) -> ProtectedFile | None:
        """The :class:`~pi_core.ProtectedFile` that ``realpath`` is (or is below): any for a
        write, a hidden one for a read; ``None`` when it is none of pi's own files."""
        if not self.protected:
            return None
        found = self.protected.get(realpath)
        if found is None:
            found = next((f for p, f in list(self.protected.items()) if _under(realpath, p)), None)
        if found is None or (reading and not found.hidden):
            return None
        return found

    def reads_unrestricted(self) -> bool:
        """Whether every path may be read: a read root ``/``, no denied pattern, no hidden
        file of pi's (then a read needs no check: the guard lets the local backend's one-hop
        reads through, the before-hook resolves nothing)."""
        return (
            "/" in self.read_roots
            and not self.deny_patterns
            and not any(p.hidden for p in list(self.protected.values()))
        )

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
        own = self.protected_file(realpath, reading=verb == "reading")
        if own is not None:
            return PathDecision(False, protected_reason(verb, shown, own))
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

    def checkpoint_exclude(self) -> list[str]:
        """The denied globs as ``[checkpoints] exclude`` patterns (``PathFilter``: a name at any
        depth, or a path from the workspace root with shell globs whose ``*`` also matches
        ``/``), so that checkpoints never read, store nor restore a denied file. Every path the
        policy denies in the workspace is excluded; a few more may be (``DIR/**`` excludes
        ``DIR`` too, a ``*`` of a path pattern matches across ``/``, a name below an absolute
        pattern's workspace part matches at any depth). An absolute pattern counts for the part
        of it that reaches into the workspace (as named and as resolved)."""
        found: dict[str, None] = {}
        for pattern in self.deny_patterns:
            text = pattern.text.strip()
            if not pattern.absolute:
                found.update(dict.fromkeys(_exclude_patterns(text)))
                continue
            if text == "~" or text.startswith("~/"):
                text = self.home.rstrip("/") + text[1:]
            for workspace in dict.fromkeys((self.workspace, self.real_workspace)):
                found.update(dict.fromkeys(_inside(text, workspace)))
        return list(found)

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


def _exclude_patterns(text: str) -> list[str]:
    """The ``PathFilter`` patterns that exclude at least what the relative gitignore pattern
    ``text`` matches (see :meth:`PathPolicy.checkpoint_exclude`): a name stays a name, a path
    stays anchored at the root, with ``**/`` (any directories, or none) spelled out."""
    text = text.strip("/")
    if text in ("", "**"):
        return ["*"]
    if "/" not in text:
        return [text]
    if text.startswith("**/"):
        name = text[3:].removesuffix("/**")
        if "/" not in name:  # **/NAME or **/NAME/**: that name at any depth
            return [name]
    variants = [text[3:], "*/" + text[3:]] if text.startswith("**/") else [text]
    done: list[str] = []
    while variants:  # each "/**/" matches one or more directories, or none
        variant = variants.pop()
        if "/**/" in variant:
            variants += [variant.replace("/**/", "/", 1), variant.replace("/**/", "/*/", 1)]
        else:
            done.append(variant)
    return sorted(done)


def _inside(text: str, workspace: str) -> list[str]:
    """The patterns of the absolute gitignore pattern ``text`` for what it matches below
    ``workspace`` (``["*"]``: all of it; ``[]``: none of it)."""
    parts = [p for p in text.split("/") if p]
    for index, name in enumerate(p for p in workspace.split("/") if p):
        if index == len(parts):
            return ["*"]  # the pattern names a directory holding the workspace
        if parts[index] == "**":
            return _exclude_patterns("/".join(parts[index:]))
        if not fnmatch.fnmatchcase(name, parts[index]):
            return []
    depth = len([p for p in workspace.split("/") if p])
    return _exclude_patterns("/".join(parts[depth:]))


def protected_reason(verb: str, shown: str, protected: ProtectedFile) -> str:
    """The refusal of ``verb`` (``"reading"``, ``"writing"``) of the file ``shown`` (quoted,
    with its resolved path or the name it is the same file as) that is one of pi's own files::

        Writing '/w/pi.toml' is denied: pi's own configuration is protected from the agent
        Reading '/w/audit.jsonl' is denied: pi's audit log is hidden from the agent
    """
    how = "hidden from" if protected.hidden else "protected from"
    return f"{verb.capitalize()} {shown} is denied: {protected.what} is {how} the agent"


def declared_path_reason(
    path_arguments: Sequence[PathArgument],
    args: Any,
    cwd: str,
    policy: PathPolicy,
    resolve: Callable[[str], str] = os.path.realpath,
    identities: Any = None,
) -> str | None:
    """The before-hook's early check of a call: the reason to block it, or ``None``.

    Each of the tool's declared path arguments (``AgentTool.path_arguments``; the argument's
    ``default`` when it is absent, e.g. ``"."`` for ls/find/grep) is resolved against ``cwd``
    as the tools do (:func:`pi_core.backends.resolve_to_cwd`), then with ``resolve``
    (``os.path.realpath`` locally; a remote backend passes ``posixpath.normpath``), and checked
    for reading and/or writing as declared. Any tool declaring its paths gets the same check
    and the same texts as the built-in file tools; a value that is not a string is left to the
    tool's own validation. ``identities`` (a
    :class:`~pi_sandbox_plugin.policies.file_identity.FileIdentities`, on this machine's file
    system) also judges the file found there by device and inode (a ``stat``: blocking)."""
    for declared in path_arguments:
        raw = args.get(declared.name) if isinstance(args, Mapping) else None
        if raw is None and not isinstance(args, Mapping):
            raw = getattr(args, declared.name, None)
        if raw is None:
            raw = declared.default
        if not isinstance(raw, str):
            continue
        verbs = [
            verb
            for verb, wanted in (("reading", declared.read), ("writing", declared.write))
            if wanted and not (verb == "reading" and policy.reads_unrestricted())
        ]
        if not verbs:
            continue
        named = resolve_to_cwd(raw, cwd)
        real = resolve(named)
        for verb in verbs:
            check = policy.check_read if verb == "reading" else policy.check_write
            decision = check(real, named)
            if decision.allowed and identities is not None:
                decision = identities.path_decision(real, verb, named)
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
    "protected_reason",
]
