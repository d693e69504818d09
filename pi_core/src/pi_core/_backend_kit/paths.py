"""Path resolution of the file tools (the exact path first: ``docs/explanation/differences.md``).

A tool's ``path`` argument is resolved against the session cwd: one leading ``@`` is dropped,
``~`` and ``~/rest`` expand to the home directory, ``file://`` URLs become local paths, and the
result is absolute and normalised (``..`` collapsed, no trailing slash).

:func:`resolve_existing_path` then tries the path **as given** first and only when it does not
exist the fallbacks, in order: special spaces (U+00A0, U+2000–U+200A, U+202F, U+205F, U+3000)
turned into U+0020, then (for read) the macOS screenshot variant (U+202F before ``AM.``/``PM.``),
NFD, curly apostrophe, NFD + curly apostrophe. Existence is tested through a
:class:`~pi_core._backend_kit.operations.FileOperations`, so it works on any backend.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from urllib.parse import unquote, urlparse

from pi_core._backend_kit.operations import FileOperations

UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
"""Special spaces a model or a keyboard puts where the file name has U+0020."""

_AM_PM = re.compile(r" (AM|PM)\.", re.IGNORECASE)
NARROW_NO_BREAK_SPACE = "\u202f"


def normalize_unicode_spaces(text: str) -> str:
    """``text`` with each special space (see :data:`UNICODE_SPACES`) replaced by U+0020."""
    return UNICODE_SPACES.sub(" ", text)


def _home() -> str:
    return os.path.expanduser("~")


def expand_path(p: str, *, normalize_spaces: bool = True) -> str:
    """Drop one leading ``@``, turn special spaces into U+0020 (unless ``normalize_spaces`` is
    false), expand ``~``/``~/rest`` and ``file://`` URLs. ``~user`` is not expanded.
    """
    if p.startswith("@"):
        p = p[1:]
    if normalize_spaces:
        p = normalize_unicode_spaces(p)
    if p.startswith("file://"):
        p = unquote(urlparse(p).path)
    if p == "~":
        return _home()
    if p.startswith("~/"):
        return posixpath.join(_home(), p[2:])
    return p


def resolve_to_cwd(p: str, cwd: str, *, normalize_spaces: bool = True) -> str:
    """The absolute, normalised path of ``p`` (after :func:`expand_path`) relative to ``cwd``.

    This is Pi's ``resolveToCwd`` (special spaces normalised first). A tool that must find an
    existing file whose name really contains such a space uses :func:`resolve_existing_path`,
    which tries the path as given first.
    """
    expanded = expand_path(p, normalize_spaces=normalize_spaces)
    joined = expanded if posixpath.isabs(expanded) else posixpath.join(cwd, expanded)
    normalized = posixpath.normpath(joined)
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return normalized


def _screenshot_variant(path: str) -> str:
    return _AM_PM.sub(lambda m: f"{NARROW_NO_BREAK_SPACE}{m.group(1)}.", path)


def _curly_variant(path: str) -> str:
    return path.replace("'", "\u2019")


def path_candidates(p: str, cwd: str, *, for_read: bool = True) -> list[str]:
    """Every path :func:`resolve_existing_path` tries, in order, without duplicates.

    The first is the path as given; the second the space-normalised one (the answer when none
    exists). With ``for_read`` Pi's read fallbacks of the space-normalised path follow.
    """
    exact = resolve_to_cwd(p, cwd, normalize_spaces=False)
    # an ASCII ``p`` has no special space: the same path (and NFD of ASCII is itself)
    spaced = exact if p.isascii() else resolve_to_cwd(p, cwd)
    candidates = [exact, spaced]
    if for_read:
        nfd = spaced if spaced.isascii() else unicodedata.normalize("NFD", spaced)
        candidates += [
            _screenshot_variant(spaced),
            nfd,
            _curly_variant(spaced),
            _curly_variant(nfd),
        ]
    unique: list[str] = []
    for candidate in candidates:
        if candidate not in unique:
            unique.append(candidate)
    return unique


async def path_exists(path: str, ops: FileOperations) -> bool:
    """True when ``ops.stat(path)`` succeeds (symlinks followed); any ``OSError`` is False."""
    try:
        await ops.stat(path)
    except OSError:
        return False
    return True


async def resolve_existing_path(
    p: str, cwd: str, ops: FileOperations, *, for_read: bool = True
) -> str:
    """The absolute path a tool should use for its ``path`` argument.

    Returns the first candidate of :func:`path_candidates` that exists on ``ops``; when none
    does (a new file for write, a missing file for read), the space-normalised path, so the
    error that follows names it. Never raises for a missing file.
    """
    candidates = path_candidates(p, cwd, for_read=for_read)
    for candidate in candidates:
        if await path_exists(candidate, ops):
            return candidate
    return resolve_to_cwd(p, cwd)


__all__ = [
    "UNICODE_SPACES",
    "expand_path",
    "normalize_unicode_spaces",
    "path_candidates",
    "path_exists",
    "resolve_existing_path",
    "resolve_to_cwd",
]
