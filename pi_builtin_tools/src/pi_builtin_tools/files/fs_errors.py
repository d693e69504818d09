"""Node-style file-system error texts, reproduced exactly as Pi shows them.

Pi's tools let Node's ``fs`` errors through, so the model sees e.g.
``ENOENT: no such file or directory, access '/abs/path'``. :func:`node_error_message` words an
``OSError`` the same way: ``{CODE}: {libuv description}, {syscall} '{path}'`` (``, {syscall}``
alone when Node gives no path, as for ``read`` on a directory). The syscall word depends on the
step that failed: read checks with ``access``, reads with ``open``/``read``; write ``open``s;
``mkdir`` for parent directories.
"""

from __future__ import annotations

import errno
import os
import re

from pi_core import ToolError

_LIBUV: dict[int, tuple[str, str]] = {
    errno.ENOENT: ("ENOENT", "no such file or directory"),
    errno.EISDIR: ("EISDIR", "illegal operation on a directory"),
    errno.ENOTDIR: ("ENOTDIR", "not a directory"),
    errno.EACCES: ("EACCES", "permission denied"),
    errno.EPERM: ("EPERM", "operation not permitted"),
    errno.EEXIST: ("EEXIST", "file already exists"),
    errno.ENOSPC: ("ENOSPC", "no space left on device"),
    errno.EROFS: ("EROFS", "read-only file system"),
    errno.ELOOP: ("ELOOP", "too many symbolic links encountered"),
    errno.ENAMETOOLONG: ("ENAMETOOLONG", "name too long"),
    errno.EMFILE: ("EMFILE", "too many open files"),
    errno.ENFILE: ("ENFILE", "file table overflow"),
    errno.EBUSY: ("EBUSY", "resource busy or locked"),
    errno.EINVAL: ("EINVAL", "invalid argument"),
    errno.EIO: ("EIO", "i/o error"),
    errno.EXDEV: ("EXDEV", "cross-device link not permitted"),
    errno.ENOTEMPTY: ("ENOTEMPTY", "directory not empty"),
    errno.EFBIG: ("EFBIG", "file too large"),
    errno.ETXTBSY: ("ETXTBSY", "text file is busy"),
    errno.EAGAIN: ("EAGAIN", "resource temporarily unavailable"),
    errno.EBADF: ("EBADF", "bad file descriptor"),
    errno.ENXIO: ("ENXIO", "no such device or address"),
    errno.ENODEV: ("ENODEV", "no such device"),
    errno.ESPIPE: ("ESPIPE", "invalid seek"),
    errno.EDQUOT: ("EDQUOT", "disk quota exceeded"),
}


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def show_path(path: str) -> str:
    """``path`` for an error text: control characters (C0, DEL, C1) written as ``\\xNN``
    (``"a\\x00.txt"``), so a NUL or escape sequence never reaches the model or a terminal raw.
    Lone surrogates (from JSON ``\\ud800`` escapes) are written as ``\\udNNN``. Other characters
    are kept."""
    shown = _CONTROL_CHARS.sub(lambda m: f"\\x{ord(m.group()):02x}", path)
    return _SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", shown)


def check_no_nul(path: str) -> None:
    """Raise :class:`ToolError` ``Invalid path "a\\x00.txt": a path cannot contain a NUL
    byte.`` when ``path`` holds one (no file system accepts it)."""
    if "\x00" in path:
        raise ToolError(f'Invalid path "{show_path(path)}": a path cannot contain a NUL byte.')
    check_no_surrogate(path)


def check_no_surrogate(path: str) -> None:
    """Raise :class:`ToolError` ``Invalid path "\\ud800": a path cannot contain a lone
    surrogate ...`` when ``path`` holds one (a JSON ``\\ud800`` escape: no file name can be
    encoded with it)."""
    if _SURROGATES.search(path):
        raise ToolError(
            f'Invalid path "{show_path(path)}": a path cannot contain a lone surrogate '
            "(U+D800 to U+DFFF), which no file name can be encoded with."
        )


def check_process_text(
    name: str, value: str, *, show: bool = True, escaped_bytes: bool = False
) -> None:
    """Raise :class:`ToolError` when ``value``, a text handed to a process (a shell command, a
    ripgrep pattern or glob), cannot be: ``Invalid pattern "a\\x00b": a pattern cannot contain
    a NUL byte.`` (no ``argv`` element can hold one), or ``... cannot contain a lone surrogate
    (U+D800 to U+DFFF), which cannot be passed to a process.`` for a JSON ``\\ud800`` escape
    (ripgrep wants UTF-8). With ``escaped_bytes`` (a shell command) U+DC80 to U+DCFF are kept:
    :func:`os.fsencode` passes them as the bytes they escape. ``show=False`` leaves the value
    out (a shell command can be long)."""
    shown = f' "{show_path(value)}"' if show else ""
    if "\x00" in value:
        raise ToolError(f"Invalid {name}{shown}: a {name} cannot contain a NUL byte.")
    if value.isascii():
        return
    try:
        if escaped_bytes:
            os.fsencode(value)
        else:
            value.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(
            f"Invalid {name}{shown}: a {name} cannot contain a lone surrogate "
            "(U+D800 to U+DFFF), which cannot be passed to a process."
        ) from None


def not_regular_file_error(verb: str, raw_path: str) -> ToolError:
    """``Cannot {verb} {path}: not a regular file (a device, FIFO or socket).``: the one text
    read, write and edit give for a special file (never opened for a blocking read, never
    replaced), whatever the backend."""
    return ToolError(
        f"Cannot {verb} {show_path(raw_path)}: not a regular file (a device, FIFO or socket)."
    )


def error_code(exc: OSError) -> str:
    """Node's ``error.code`` for ``exc`` (``"ENOENT"``, ...; ``"EIO"`` when ``errno`` is unset)."""
    if exc.errno is None:
        return "EIO"
    known = _LIBUV.get(exc.errno)
    if known:
        return known[0]
    return errno.errorcode.get(exc.errno, "EIO")


def node_error_message(exc: OSError, syscall: str, path: str | None = None) -> str:
    """``"{CODE}: {description}, {syscall} '{path}'"`` for ``exc``.

    ``path`` defaults to ``exc.filename`` (shown through :func:`show_path`); ``None``/empty gives
    ``"{CODE}: {description}, {syscall}"``.
    """
    code = error_code(exc)
    if exc.errno is not None and exc.errno in _LIBUV:
        description = _LIBUV[exc.errno][1]
    elif exc.errno is not None:
        description = os.strerror(exc.errno).lower()
    else:
        description = (exc.strerror or str(exc) or "i/o error").lower()
    where = path if path is not None else exc.filename
    if where:
        return f"{code}: {description}, {syscall} '{show_path(str(where))}'"
    return f"{code}: {description}, {syscall}"


def fs_error(exc: OSError, syscall: str, path: str | None = None) -> ToolError:
    """A :class:`~pi_core._errors.ToolError` carrying :func:`node_error_message` (raise it)."""
    error = ToolError(node_error_message(exc, syscall, path))
    error.__cause__ = exc
    return error


__all__ = [
    "check_no_nul",
    "check_no_surrogate",
    "check_process_text",
    "error_code",
    "fs_error",
    "node_error_message",
    "not_regular_file_error",
    "show_path",
]
