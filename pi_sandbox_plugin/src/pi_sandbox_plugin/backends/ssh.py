"""The SSH backend of the sandbox plugin: bash commands and file tools on a remote host over the
OpenSSH client.

* :class:`SshConnection` holds the ``[sandbox.ssh]`` settings and one OpenSSH *control master*
  (the control socket lives in a private ``0700`` temporary directory), so every command and
  file operation is a cheap multiplexed session of one connection. The master is a child of
  pi (``ssh -N -M``, no ``ControlPersist``) started with a parent-death signal: when pi dies,
  even by ``kill -9``, the kernel sends it SIGTERM and it exits and removes its socket; sessions
  use ``ControlMaster=no``, so none of them ever becomes a lingering master. ``BatchMode=yes`` always: a missing key or an unknown host key is an error, never a
  prompt. Close it with :meth:`SshConnection.aclose`.
* :class:`SshBashOperations` (a :class:`~pi_core._backend_kit.operations.BashOperations`) and
  :class:`SshFileOperations` (a :class:`~pi_core._backend_kit.operations.FileOperations`) use it.

**What the remote needs**: a POSIX ``sh`` (the login shell must parse POSIX quoting), coreutils
(``tail``, ``head``, ``stat``, ``mktemp``, ``realpath``/``readlink``, ``sync``, ``env``), ``grep``,
``awk``, a Linux ``/proc``; ``setsid``, ``bash`` and ``python3`` when present (commands run with
``bash -c`` when the remote has bash, else ``sh -c``; a ``python3`` in one of
:data:`PYTHON_PATHS` makes the supervisor a child subreaper); ``rg`` for find and grep.

**Environment.** The remote command keeps the remote environment (``SSH_CONNECTION``, its
``HOME`` and ``PATH``); of the ``env`` pi passes it gets only what
:func:`pi_core.backends.remote_environment` selects (what pi set or changed, and the names in
``pass_env``): this machine's environment, with its credentials, is never sent.

**Paths.** The tools see the session's paths; ``local_root`` (the session cwd) maps to the
connection's ``remote_cwd``: a path equal to or below ``local_root`` is sent as the same
relative path below ``remote_cwd``, any other absolute path is sent unchanged. Results map back
(``realpath``; the file names ripgrep prints, also inside ``--json`` output), and errors name
the caller's path. Without ``local_root`` (or ``remote_cwd``) paths are used as they are.

**Commands** (:meth:`SshBashOperations.exec`) run under a small remote supervisor script
(:data:`SUPERVISOR_SCRIPT`; the command and the environment reach it at the start of its
stdin, so their sizes add up without hitting the remote's limit of one argument, 128 KiB on
Linux): it ``cd``s to the mapped cwd, starts the command with stdin ``/dev/null``, stderr
merged into stdout (one SSH channel stream, so arrival order is kept),
in a session of its own (``setsid``) and with a random marker variable ``PI_SSH_RUN=<token>``
in its environment; with ``python3`` on the remote the supervisor is a child subreaper
(:data:`_SUBREAPER`), so orphaned descendants are re-parented to it; it reports the exit status (``128 + N`` for signal ``N``, as ``sh`` sees
it) on the SSH stderr stream, which carries only such control records. The ssh process's
stdin is the *lifeline*: the supervisor watches it, and when it reaches end of file before the
command finished (pi closed it on timeout or abort, the local ssh died, the connection dropped
and sshd closed the session) it kills the command's tree — every process in the command's
session, carrying the marker or descending from the supervisor, so also descendants that left
the session and cleared their environment (``env -i setsid …``, a double fork) —
with SIGTERM (the tree stopped first, so no shell reports a child's death before its own),
``kill_grace`` seconds, then SIGKILL until none is left, and only then exits.
pi waits (shielded, at most ``kill_timeout`` seconds) for that; if the ssh process does not
end in time, it runs the same kill over a fresh, unmultiplexed connection and kills the local
ssh. A connection that drops becomes a :class:`SshConnectionError`/``ToolError`` as soon as
ssh notices (``ServerAliveInterval``) and never outlives the command's timeout by more than
the bounded cleanup. The timeout counts from the command's start on the remote (the
supervisor's ``SID`` record), not from the local ``ssh``'s: opening the session is not the
command's time, and may add at most ``connect_timeout`` seconds.

**File operations** are short shell scripts (one multiplexed session each, bounded by
``op_timeout``): ranged reads with ``tail -c``/``head -c``; writes streamed over stdin into a
``mktemp`` file beside the target (mode, and owner when permitted, copied from the target;
size checked, so a dropped connection never replaces the file with a truncated one), ``sync``,
then ``mv`` over the target, a symlink resolved first so the link stays a link; ``stat -L -c``;
``realpath -m`` (``readlink -f`` as fallback); entries listed by shell globbing,
NUL-separated; ``mkdir -p``; ``rg`` under the supervisor (killed with its tree on
cancellation). The read tool's first step (the path candidates resolved and stat-ed, the start
of the file read) and a guard's ``realpath`` + ``stat`` are one session each
(:meth:`SshFileOperations.read_head`, :meth:`SshFileOperations.stat_probed`). Failures raise ``OSError`` subclasses with ``errno`` set: the scripts classify
``ENOENT``/``ENOTDIR``/``EISDIR``/``EACCES`` themselves, other failures are recognised from the
tools' ``LC_ALL=C`` messages.

Connection and authentication failures raise :class:`SshConnectionError`, a ``ToolError``
reading ``cannot connect to HOST: <ssh's reason>`` in every tool. A missing ``remote_cwd`` is
named as the remote path (``Remote working directory does not exist on HOST: PATH``, in bash
followed by ``Cannot execute bash commands.``) and never created: every file operation below
it checks it first.

**Known limits.** Each session starts the remote user's login shell, so its startup files
(bash reads ``~/.bashrc`` under sshd) must not print; without ``python3`` on the remote, a
process that both drops the marker variable from its environment and leaves the command's
session escapes the tree kill.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import posixpath
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from pi_core import CommandTimeout, ToolError, parse_json
from pi_core.backends import (
    CommandOutput,
    FileStat,
    command_fits_argv,
    file_kind,
    missing_cwd_error,
    remote_environment,
)
from pi_sandbox_plugin.backends.shell_files import (
    HeadResult,
    head_candidates,
    parse_head,
)

READ_SIZE = 256 * 1024
"""Bytes asked for per read of an ssh output pipe."""

_ENV_NAME = re.compile(r"[^=\0-][^=\0]*")


class SshConnectionError(ToolError):
    """ssh could not connect (``cannot connect to HOST: <ssh's reason>``), or the connection
    dropped. A :class:`~pi_core.ToolError`, not an ``OSError``: every tool reports its message
    as it is (never as a file error such as ``EIO`` or ``Path not found``). ``errno``
    (``EIO``, ``ETIMEDOUT``, ``ENOENT`` for a missing client) and ``strerror`` (the message)
    are kept for callers that classify it."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code
        self.strerror = message


# -- remote scripts ------------------------------------------------------------------------

_KILL_FUNCTIONS = r"""
pi_scan() {
  {
    for f in /proc/[0-9]*/stat; do
      read -r l <"$f" 2>/dev/null || continue
      r=${l##*) }
      set -- $r
      p=${f#/proc/}
      echo "${p%/stat} $2 $4 $1"
    done
    echo M
    grep -l -a -F "PI_SSH_RUN=$tok" /proc/[0-9]*/environ 2>/dev/null |
      while IFS=/ read -r _ _ p _; do echo "$p"; done
  } | awk -v sup="${sup:-0}" -v sid="${sid:-0}" -v me="${me:-0}" '
    $1 == "M" { m = 1; next }
    m { mark[$1] = 1; next }
    { pp[$1] = $2; ss[$1] = $3; st[$1] = $4 }
    END {
      for (p in pp) {
        if (st[p] == "Z" || p == sup || p == me) continue
        q = p; under = 0; n = 0
        while (q in pp && q > 1 && n < 4096) {
          q = pp[q]; n++
          if (q == me) { under = -1; break }
          if (q == sup) { under = 1; break }
        }
        if (under < 0) continue
        if (under > 0 || (sid > 0 && ss[p] == sid) || (p in mark)) print p
      }
    }'
}
pi_kill() {
  ps_=$(pi_scan)
  [ -z "$ps_" ] && return 0
  # stopped first: a shell whose child dies while it still runs would report the death
  # ("Terminated") on the output before its own SIGTERM reached it
  kill -STOP $ps_ 2>/dev/null
  kill -TERM $ps_ 2>/dev/null
  kill -CONT $ps_ 2>/dev/null
  i=0
  while [ "$i" -lt "$ticks" ]; do
    sleep 0.1
    ps_=$(pi_scan)
    [ -z "$ps_" ] && return 0
    i=$((i + 1))
  done
  i=0
  while [ "$i" -lt 400 ]; do
    kill -KILL $ps_ 2>/dev/null
    sleep 0.05
    ps_=$(pi_scan)
    [ -z "$ps_" ] && return 0
    i=$((i + 1))
  done
}
"""

SUPERVISOR_SCRIPT = (
    r"""
tok=$1 cwd=$2 merge=$3 ticks=$4 envmode=$5 keep=$6 shell=$7 hdrlen=$8
shift 8
pi_mark() { printf '\036PI-SSH:%s:%s\036' "$tok" "$1" >&2; }
sid= cmd= ok= long=
read -r sup _ </proc/self/stat
hdr=$(head -c "$hdrlen") && eval "$hdr"
[ "$ok" = "$tok" ] || exit 0
"""
    + _KILL_FUNCTIONS
    + r"""
cd -- "$cwd" 2>/dev/null || { pi_mark NOCWD; exit 0; }
if [ -z "$shell" ]; then
  if command -v bash >/dev/null 2>&1; then shell=bash; else shell=sh; fi
fi
if [ -n "$long" ]; then
  exec 3<<PI_SSH_COMMAND
$cmd
PI_SSH_COMMAND
  cmd='. /dev/fd/3'
fi
set -- env "$@" "PI_SSH_RUN=$tok" "$shell" -c "$cmd"
if command -v setsid >/dev/null 2>&1; then set -- setsid "$@"; usesid=1; else usesid=; fi
exec 4<&0
if [ "$merge" = 1 ]; then
  "$@" </dev/null 4<&- 2>&1 &
else
  "$@" </dev/null 4<&- &
fi
pid=$!
[ -n "$usesid" ] && sid=$pid
pi_mark "SID=$sid"
pi_mark "SUP=$sup"
(
  trap '' HUP PIPE
  read -r me _ </proc/self/stat
  while read -r _ <&4; do :; done
  trap '' TERM
  pi_kill
) </dev/null >/dev/null 2>&1 &
w=$!
exec 4<&-
wait "$pid"
c=$?
{ kill "$w"; wait "$w"; } 2>/dev/null
pi_mark "EXIT=$c"
exit 0
"""
)
"""Runs one command on the remote (see the module docstring). Arguments: token, cwd, merge
(``1``: stderr into stdout), grace in tenths of a second, env mode (``replace``/``inherit``),
names of kept remote variables, shell (empty: bash if present, else sh), the byte length of
the header that starts its stdin: shell code setting ``cmd`` (the command; with ``long=1``, a
command too long for one argument, it reaches the shell as a here-document on descriptor 3 that
it sources: ``SHELL -c ". /dev/fd/3"``), appending the
``NAME=value`` pairs to ``"$@"`` and setting ``ok`` to the token (the rest of stdin is the
lifeline). Control records on stderr: ``\\036PI-SSH:<token>:NOCWD\\036``,
``…:SID=<n>\\036``, ``…:EXIT=<code>\\036``."""

PYTHON_PATHS = ("/usr/bin/python3", "/bin/python3", "/usr/local/bin/python3")
"""Where the remote's ``python3`` is looked for (to start :data:`_SUBREAPER`)."""

_SUBREAPER = """import ctypes, os, sys
try:
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
except Exception:
    pass
os.execvp(sys.argv[1], sys.argv[1:])
"""
"""Run as ``python3 -c _SUBREAPER sh -c SUPERVISOR_SCRIPT ...`` when the remote has
``python3``: marks the process a child subreaper (``PR_SET_CHILD_SUBREAPER``, kept across
``execve``) and becomes the supervisor, so every orphaned descendant of the command — one that
called ``setsid``, cleared its environment (``env -i``) and forked twice — is re-parented to
the supervisor and found by walking ``/proc`` from it."""

_KILL_SCRIPT = (
    r"""
tok=$1 sid=$2 ticks=$3 sup=$4
"""
    + _KILL_FUNCTIONS
    + r"""
read -r me _ </proc/self/stat
pi_kill
"""
)

_FILE_PRELUDE = r"""
export LC_ALL=C
pi_fail() { printf '\nPI-SSH-ERRNO %s\n' "$1" >&2; exit 97; }
pi_missing() {
  q=$1
  while :; do
    case $q in */*) q=${q%/*} ;; *) q= ;; esac
    [ -z "$q" ] && pi_fail ENOENT
    if [ -e "$q" ]; then
      [ -d "$q" ] && pi_fail ENOENT
      pi_fail ENOTDIR
    fi
  done
}
p=$1
if [ -n "${PI_ROOT-}" ] && [ ! -d "$PI_ROOT" ]; then pi_fail NOROOT; fi
"""

_READ_SCRIPT = r"""
off=$2 len=$3
[ -d "$p" ] && pi_fail EISDIR
[ -e "$p" ] || pi_missing "$p"
[ -f "$p" ] || pi_fail EINVAL
[ -r "$p" ] || pi_fail EACCES
if [ "$len" = - ]; then exec tail -c "+$((off + 1))" -- "$p"; fi
tail -c "+$((off + 1))" -- "$p" | head -c "$len"
"""

_WRITE_SCRIPT = r"""
n=$2
t=$p
if [ -L "$p" ]; then t=$(readlink -f -- "$p") && [ -n "$t" ] || pi_fail ENOENT; fi
[ -d "$t" ] && pi_fail EISDIR
if [ -e "$t" ] && [ ! -f "$t" ]; then pi_fail EINVAL; fi
case $t in */*) d=${t%/*} ;; *) d=. ;; esac
[ -n "$d" ] || d=/
b=${t##*/}
[ -e "$d" ] || pi_missing "$t"
[ -d "$d" ] || pi_fail ENOTDIR
[ -w "$d" ] && [ -x "$d" ] || pi_fail EACCES
if [ -e "$t" ] && [ ! -w "$t" ]; then pi_fail EACCES; fi
tmp=$(mktemp -- "$d/.$b.XXXXXXXXXX") || exit 1
trap 'rm -f -- "$tmp"' EXIT
if [ -e "$t" ]; then
  m=$(stat -L -c %a -- "$t") && chmod "$m" "$tmp" || exit 1
  o=$(stat -L -c %u:%g -- "$t") && chown "$o" "$tmp" 2>/dev/null
else
  chmod "$(printf %o $((0666 & ~0$(umask))))" "$tmp" || exit 1
fi
cat >"$tmp" || exit 1
s=$(stat -c %s -- "$tmp") || exit 1
if [ "$s" != "$n" ]; then echo "incomplete write: $s of $n bytes arrived" >&2; exit 98; fi
sync -- "$tmp" 2>/dev/null || sync
mv -f -- "$tmp" "$t" || exit 1
trap - EXIT
sync -- "$d" 2>/dev/null
exit 0
"""

_STAT_SCRIPT = r"""
[ -e "$p" ] || pi_missing "$p"
exec stat -L -c '%f %s %Y %y' -- "$p"
"""

_HEAD_SCRIPT = r"""
limit=$2 head=$3
shift 3
for c in "$p" "$@"; do
  r=$( { realpath -m -- "$c" || readlink -f -- "$c"; } 2>/dev/null)
  s=$( { [ -e "$c" ] || pi_missing "$c"; stat -L -c '%f %s %Y %y' -- "$c"; } 2>&1)
  rc=$?
  printf '%s\000%s\000%s\000' "$r" "$rc" "$s"
  [ "$rc" -eq 0 ] || continue
  set -- $s
  [ $((0x$1 & 0170000)) -eq $((0100000)) ] || exit 0
  n=$head
  if [ "$2" -gt 0 ] && [ "$2" -le "$limit" ]; then n=; fi
  [ -d "$c" ] && pi_fail EISDIR
  [ -e "$c" ] || pi_missing "$c"
  [ -f "$c" ] || pi_fail EINVAL
  [ -r "$c" ] || pi_fail EACCES
  if [ -z "$n" ]; then exec tail -c +1 -- "$c"; fi
  exec head -c "$n" -- "$c"
done
exit 0
"""
"""``$1`` (``p``) and ``$4``...: the candidate paths, ``$2`` the whole-file limit, ``$3`` the
head size. Each candidate in turn is resolved (as :data:`_REALPATH_SCRIPT`; empty when that
fails) and stat-ed (as :data:`_STAT_SCRIPT`) and reported on stdout as
``REALPATH\\0STATUS\\0TEXT\\0`` (``TEXT``: the stat line, or the error output; ``STATUS``:
the exit code); the first that exists ends the list and, when it is a regular file, its bytes
follow (checked and read as :data:`_READ_SCRIPT`: the whole file when ``0 < size <= limit``,
else its first ``head`` bytes; a failure is the script's error)."""

_STAT_PROBE_SCRIPT = (
    r"""
r=$( { realpath -m -- "$p" || readlink -f -- "$p"; } 2>/dev/null)
printf '%s\000' "$r"
"""
    + _STAT_SCRIPT
)
"""``$1`` path; its ``realpath`` (as :data:`_REALPATH_SCRIPT`; empty when that fails) and a
NUL, then what :data:`_STAT_SCRIPT` prints (its errors too)."""

_ACCESS_SCRIPT = r"""
mode=$2
[ -e "$p" ] || pi_missing "$p"
case $mode in *r*) [ -r "$p" ] || pi_fail EACCES ;; esac
case $mode in *w*) [ -w "$p" ] || pi_fail EACCES ;; esac
case $mode in *x*) [ -x "$p" ] || pi_fail EACCES ;; esac
exit 0
"""

_REALPATH_SCRIPT = r"""
if command -v realpath >/dev/null 2>&1; then
  r=$(realpath -m -- "$p" 2>/dev/null) && { printf '%s' "$r"; exit 0; }
fi
r=$(readlink -f -- "$p" 2>/dev/null) && { printf '%s' "$r"; exit 0; }
exit 3
"""

_LIST_SCRIPT = r"""
[ -e "$p" ] || pi_missing "$p"
[ -d "$p" ] || pi_fail ENOTDIR
[ -r "$p" ] && [ -x "$p" ] || pi_fail EACCES
for f in "$p"/* "$p"/.[!.]* "$p"/..?*; do
  if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\000' "${f##*/}"; fi
done
exit 0
"""

_MKDIR_SCRIPT = r"""
[ -d "$p" ] && exit 0
if [ -e "$p" ] || [ -L "$p" ]; then pi_fail EEXIST; fi
exec mkdir -p -- "$p"
"""


def _strerror_table() -> list[tuple[str, int]]:
    table = []
    for code in errno.errorcode:
        text = os.strerror(code)
        if text and not text.startswith("Unknown error"):
            table.append((text, code))
    table.sort(key=lambda item: -len(item[0]))
    return table


_STRERRORS = _strerror_table()


def _errno_in(message: str) -> int | None:
    """The errno whose C-locale ``strerror`` text appears in ``message`` (longest first)."""
    for text, code in _STRERRORS:
        if text in message:
            return code
    return None


def _os_error(code: int, path: str, detail: str | None = None) -> OSError:
    """``OSError(code, strerror, path)`` (Python picks the subclass: ``FileNotFoundError``...)."""
    return OSError(code, detail or os.strerror(code), path)


def _script_error(code: int, stderr: bytes, path: str) -> OSError:
    """The ``OSError`` (naming ``path``) of a file script that exited with ``code`` (not 0)."""
    message = stderr.decode("utf-8", "replace").strip()
    found = re.search(r"PI-SSH-ERRNO ([A-Z]+)", message)
    if code == 97 and found and hasattr(errno, found.group(1)):
        return _os_error(getattr(errno, found.group(1)), path)
    if code == 98:
        return _os_error(errno.EIO, path, message)
    number = _errno_in(message)
    if number is not None:
        return _os_error(number, path)
    return _os_error(errno.EIO, path, message or f"remote exit code {code}")


def _parse_stat(out: bytes) -> FileStat:
    """The :class:`FileStat` of :data:`_STAT_SCRIPT`'s line (``%f %s %Y %y``)."""
    fields = out.decode().split()
    raw_mode, size, seconds = int(fields[0], 16), int(fields[1]), int(fields[2])
    fraction = 0.0
    if len(fields) > 4 and "." in fields[4]:
        fraction = float("0." + fields[4].split(".", 1)[1])
    return FileStat(
        kind=file_kind(raw_mode), size=size, mode=raw_mode & 0o7777, mtime=seconds + fraction
    )


def _unwrap_group(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a strict nursery wrapped (``Cancelled`` when it was only that)."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup[BaseException]) -> None:
        for exc in g.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                walk(exc)
            else:
                leaves.append(exc)

    walk(group)
    others = [exc for exc in leaves if not isinstance(exc, trio.Cancelled)]
    if len(others) == 1:
        return others[0]
    if not others and leaves:
        return leaves[0]
    return group


@contextlib.contextmanager
def _unwrapped() -> Iterator[None]:
    try:
        yield
    except BaseExceptionGroup as group:
        inner = _unwrap_group(group)
        if inner is group:
            raise
        raise inner from None


# -- the connection ------------------------------------------------------------------------


@dataclass
class SshConnection:
    """One OpenSSH connection (the ``[sandbox.ssh]`` table) with its control master.

    ``host``, ``port`` (``None``: ssh's default), ``user`` (``None``: ssh's default),
    ``identity_file`` (``~`` expanded), ``remote_cwd`` (the remote directory the session cwd
    maps to), ``options``: extra ``-o`` values such as ``"StrictHostKeyChecking=accept-new"``
    (they win over pi's defaults, not over ``BatchMode``, ``ControlMaster``/``ControlPath``).
    ``ssh_binary``: the client. ``connect_timeout``, ``server_alive_interval`` (seconds) and
    ``server_alive_count_max``: how soon a dead connection is noticed. ``control_persist``:
    unused (kept for compatibility: the master lives as long as this object and pi). All times
    are in seconds.
    """

    host: str
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    remote_cwd: str | None = None
    options: Sequence[str] = ()
    ssh_binary: str = "ssh"
    connect_timeout: float = 10
    server_alive_interval: float = 5
    server_alive_count_max: int = 3
    control_persist: float = 600
    _control_dir: str | None = field(default=None, init=False, repr=False)
    _master: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _lock: trio.Lock | None = field(default=None, init=False, repr=False)
    _master_up: bool = field(default=False, init=False, repr=False)

    @property
    def destination(self) -> str:
        """``user@host`` or ``host``."""
        return f"{self.user}@{self.host}" if self.user else self.host

    @property
    def control_path(self) -> str:
        """The control socket (created on first use in a private temporary directory)."""
        if self._control_dir is None:
            directory = tempfile.mkdtemp(prefix="pi-ssh-")
            if len(directory) > 80:  # a unix socket path has at most 107 bytes
                os.rmdir(directory)
                directory = tempfile.mkdtemp(prefix="pi-ssh-", dir="/tmp")
            self._control_dir = directory
        return os.path.join(self._control_dir, "master")

    def ssh_argv(self, *, multiplex: bool = True) -> list[str]:
        """The ``ssh`` command line up to (and including) the destination; append the remote
        command. ``multiplex=False``: a fresh connection that ignores the control master."""
        argv = [self.ssh_binary, "-T", "-o", "BatchMode=yes"]
        if multiplex:
            argv += ["-o", f"ControlPath={self.control_path}", "-o", "ControlMaster=no"]
        else:
            argv += ["-o", "ControlPath=none", "-o", "ControlMaster=no"]
        for option in self.options:
            argv += ["-o", option]
        argv += ["-o", f"ConnectTimeout={max(1, round(self.connect_timeout))}"]
        argv += ["-o", f"ServerAliveInterval={max(1, round(self.server_alive_interval))}"]
        argv += ["-o", f"ServerAliveCountMax={self.server_alive_count_max}"]
        argv += ["-o", "LogLevel=ERROR"]
        if self.port is not None:
            argv += ["-p", str(self.port)]
        if self.identity_file:
            argv += ["-i", os.path.expanduser(self.identity_file), "-o", "IdentitiesOnly=yes"]
        argv += ["--", self.destination]
        return argv

    async def ensure_master(self) -> None:
        """Start the control master once (again when it died): ``ssh -N -M`` as a child of pi
        with a parent-death signal (SIGTERM), ready when its socket exists.

        Raises :class:`SshConnectionError` (``cannot connect to HOST: <ssh's reason>``)."""
        if self._master_up and self._master is not None and self._master.poll() is None:
            return
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            if self._master_up and self._master is not None and self._master.poll() is None:
                return
            self._stop_master()
            argv = self.ssh_argv()
            argv[1:1] = ["-N", "-o", "ControlMaster=yes", "-o", "ControlPersist=no"]
            errors = tempfile.TemporaryFile()
            try:
                master = _spawn_master(argv, errors)
            except FileNotFoundError:
                errors.close()
                raise SshConnectionError(
                    errno.ENOENT,
                    f"cannot connect to {self.host}: "
                    f"the OpenSSH client {self.ssh_binary!r} is not installed",
                ) from None
            self._master = master
            try:
                with trio.move_on_after(self.connect_timeout + 10) as scope:
                    while not self._master_started(master):  # noqa: ASYNC110 (polls a file)
                        await trio.sleep(0.01)
                if master.poll() is not None or scope.cancelled_caught:
                    self._stop_master()
                    errors.seek(0)
                    message = errors.read().decode("utf-8", "replace").strip()
                    if scope.cancelled_caught:
                        message = f"no answer in {self.connect_timeout + 10:g}s"
                    raise SshConnectionError(
                        errno.ETIMEDOUT if scope.cancelled_caught else errno.EIO,
                        f"cannot connect to {self.host}: "
                        f"{message or f'ssh exit code {master.returncode}'}",
                    )
            except BaseException:
                self._stop_master()
                raise
            finally:
                errors.close()
            self._master_up = True

    def _master_started(self, master: subprocess.Popen[bytes]) -> bool:
        """The master exited, or its control socket exists."""
        return master.poll() is not None or os.path.exists(self.control_path)

    def _stop_master(self) -> None:
        """Stop the master child (SIGTERM, then SIGKILL) and reap it."""
        master, self._master = self._master, None
        self._master_up = False
        if master is None:
            return
        if master.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                master.terminate()
            try:
                master.wait(timeout=2)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    master.kill()
                master.wait()

    async def aclose(self) -> None:
        """Stop the control master and remove the socket directory."""
        self._stop_master()
        self._forget()

    def close(self) -> None:
        """:meth:`aclose` for synchronous callers (at exit)."""
        self._stop_master()
        self._forget()

    def _forget(self) -> None:
        self._master_up = False
        if self._control_dir is not None:
            shutil.rmtree(self._control_dir, ignore_errors=True)
            self._control_dir = None

    async def __aenter__(self) -> SshConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


_PR_SET_PDEATHSIG = 1


def _spawn_master(argv: list[str], errors: Any) -> subprocess.Popen[bytes]:
    """Start the control master in this thread (not a worker thread: the parent-death signal
    fires when the thread that forked the child ends), in a session of its own."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=errors,
        start_new_session=True,
        preexec_fn=_death_signal_setter(),
    )


def _death_signal_setter() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks for SIGTERM when the parent (pi) dies (Linux ``prctl``; libc
    is loaded here, in the parent, as a forked child must not load libraries)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    return set_death_signal


# -- paths ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemotePathMap:
    """Maps the session's paths (``local_root`` and below) to ``remote_root`` and back; other
    paths, or both roots unset, pass unchanged."""

    local_root: str | None = None
    remote_root: str | None = None

    @staticmethod
    def _move(path: str, old: str | None, new: str | None) -> str:
        if not old or not new:
            return path
        old = old.rstrip("/") or "/"
        new = new.rstrip("/") or "/"
        if path == old:
            return new
        prefix = old if old.endswith("/") else old + "/"
        if path.startswith(prefix):
            rest = path[len(prefix) :]
            return new + rest if new.endswith("/") else f"{new}/{rest}"
        return path

    def maps(self, path: str) -> bool:
        """``path`` is ``local_root`` or below it (and both roots are set)."""
        if not self.local_root or not self.remote_root:
            return False
        root = self.local_root.rstrip("/") or "/"
        return path == root or path.startswith(root if root.endswith("/") else root + "/")

    def missing_root_error(self, host: str, then: str = "") -> ToolError:
        """The error when ``remote_root`` does not exist on ``host`` (named as the remote path;
        never created implicitly), followed by the line ``then`` when given."""
        text = f"Remote working directory does not exist on {host}: {self.remote_root}"
        return ToolError(f"{text}\n{then}" if then else text)

    def is_root(self, path: str) -> bool:
        """``path`` is ``local_root`` itself (the session cwd: ``remote_root`` remotely)."""
        root = (self.remote_root or "").rstrip("/") or "/"
        return self.maps(path) and self.to_remote(path).rstrip("/") == root.rstrip("/")

    def to_remote(self, path: str) -> str:
        """The remote path of the session path ``path``."""
        return self._move(path, self.local_root, self.remote_root)

    def to_local(self, path: str) -> str:
        """The session path of the remote path ``path``."""
        return self._move(path, self.remote_root, self.local_root)

    def rg_output_to_local(self, stdout: bytes, args: Sequence[str]) -> bytes:
        """The output of ``rg ARGS`` run on the remote side with the remote file names (at the
        start of each ``\\0``/``\\n``-separated record, followed by end, ``/`` or ``:``, and
        in ``--json`` events) rewritten to the session's paths. With ``--null --line-number``
        (grep's ``PATH\\0LINE:TEXT\\n`` records) a name also follows the newline that ends the
        previous line."""
        if not self.local_root or not self.remote_root or self.local_root == self.remote_root:
            return stdout
        remote_root = self.remote_root.rstrip("/").encode("utf-8", "surrogateescape")
        local_root = self.local_root.rstrip("/").encode("utf-8", "surrogateescape")
        separator = b"\0" if ("--null" in args or "-0" in args) else b"\n"
        json_mode = "--json" in args
        line_mode = separator == b"\0" and not json_mode and "--line-number" in args
        records = stdout.split(separator)
        for index, record in enumerate(records):
            if json_mode and record.startswith(b"{"):
                records[index] = self._json_event_to_local(record)
            elif record.startswith(remote_root):
                rest = record[len(remote_root) :]
                if rest == b"" or rest.startswith(b"/") or rest.startswith(b":"):
                    records[index] = local_root + rest
            elif line_mode and (at := record.find(b"\n" + remote_root)) >= 0:
                rest = record[at + 1 + len(remote_root) :]
                if rest == b"" or rest.startswith(b"/"):
                    records[index] = record[: at + 1] + local_root + rest
        return separator.join(records)

    def _json_event_to_local(self, record: bytes) -> bytes:
        try:
            event = parse_json(record)
            path = event["data"]["path"]
        except (ValueError, KeyError, TypeError):
            return record
        if isinstance(path, dict) and isinstance(path.get("text"), str):
            path["text"] = self.to_local(path["text"])
            return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
        return record


# -- the supervised run --------------------------------------------------------------------


@dataclass
class _RunResult:
    exit_code: int | None
    stderr: bytes


class _NoCwd(Exception):
    pass


class _Supervised:
    """One command under :data:`SUPERVISOR_SCRIPT` (see the module docstring)."""

    def __init__(
        self,
        connection: SshConnection,
        *,
        kill_grace: float,
        kill_timeout: float,
        drain_idle: float,
        drain_max: float,
        shell: str,
        pass_env: Sequence[str] = (),
    ) -> None:
        self.connection = connection
        self.pass_env = tuple(pass_env)
        self.kill_grace = kill_grace
        self.kill_timeout = kill_timeout
        self.drain_idle = drain_idle
        self.drain_max = drain_max
        self.shell = shell

    def _remote_command(
        self, token: str, cwd: str, command: str, merge: bool, env: Mapping[str, str] | None
    ) -> tuple[str, bytes]:
        """The ssh remote command and the stdin header (command and environment travel on
        stdin, so their size is not limited by the remote's ``MAX_ARG_STRLEN``)."""
        ticks = str(max(0, round(self.kill_grace * 10)))
        lines = [f"cmd={shlex.quote(command)}"]
        if not command_fits_argv(command):
            lines.append("long=1")  # too long for `-c`: sourced from a here-document
        lines += [
            f'set -- "$@" {shlex.quote(f"{key}={value}")}'
            for key, value in remote_environment(env, self.pass_env).items()
            if _ENV_NAME.fullmatch(key) and "\0" not in value
        ]
        lines.append(f"ok={token}\n")
        header = "\n".join(lines).encode("utf-8", "surrogateescape")
        args = [token, cwd, "1" if merge else "0", ticks, "add", "", self.shell, str(len(header))]
        supervisor = shlex.join(["sh", "-c", SUPERVISOR_SCRIPT, "pi-ssh", *args])
        reaper = shlex.join(["-I", "-S", "-c", _SUBREAPER])
        # the system's python3 only: a PATH lookup may find a slow wrapper (pyenv's shims)
        find = f"for py in {' '.join(PYTHON_PATHS)}; do [ -x $py ] && break; py=; done"
        use = f'[ -n "$py" ] && set -- "$py" {reaper} "$@"'
        return f'set -- {supervisor}; {find}; {use}; exec "$@"', header

    async def run(
        self,
        command: str,
        cwd: str,
        *,
        merge: bool,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None,
        timeout: float | None,
    ) -> _RunResult:
        """Raises :class:`_NoCwd`, :class:`CommandTimeout`, :class:`SshConnectionError`."""
        await trio.lowlevel.checkpoint_if_cancelled()
        await self.connection.ensure_master()
        token = secrets.token_hex(12)
        remote_command, header = self._remote_command(token, cwd, command, merge, env)
        argv = [*self.connection.ssh_argv(), remote_command]
        process = await trio.lowlevel.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        marker = re.compile(b"\x1ePI-SSH:" + token.encode() + rb":([A-Z]+)(?:=(-?\d*))?\x1e")
        err = bytearray()
        scanned = 0
        state: dict[str, Any] = {"exit": None, "sid": "", "sup": "", "nocwd": False}
        finished = trio.Event()  # EXIT or NOCWD record, or the stderr stream ended
        out_eof = trio.Event()
        last_data = trio.current_time()
        # The timeout is the command's: it counts from the SID record (the supervisor started
        # the command), as a local command's counts from its start; until then, opening the
        # session (the channel, the remote's login shell, the supervisor) may take up to
        # connect_timeout on top (on a loaded machine that alone took over a second).
        timer = trio.CancelScope()
        if timeout is not None and timeout > 0:
            timer.deadline = trio.current_time() + self.connection.connect_timeout + timeout

        def parse() -> None:
            nonlocal scanned
            while True:
                found = marker.search(err, max(0, scanned - 80))
                if found is None:
                    scanned = len(err)
                    return
                kind, value = found.group(1), found.group(2)
                del err[found.start() : found.end()]
                scanned = found.start()
                if kind == b"EXIT":
                    state["exit"] = int(value) if value else None
                    finished.set()
                elif kind == b"NOCWD":
                    state["nocwd"] = True
                    finished.set()
                elif kind == b"SID":
                    state["sid"] = (value or b"").decode()
                    if timeout is not None and timeout > 0:
                        timer.deadline = min(timer.deadline, trio.current_time() + timeout)
                elif kind == b"SUP":
                    state["sup"] = (value or b"").decode()

        async def pump_out() -> None:
            nonlocal last_data
            while True:
                chunk = await stdout.receive_some(READ_SIZE)
                if not chunk:
                    out_eof.set()
                    return
                last_data = trio.current_time()
                on_data(bytes(chunk))

        async def pump_err() -> None:
            while True:
                chunk = await stderr.receive_some(READ_SIZE)
                if not chunk:
                    finished.set()
                    return
                err.extend(chunk)
                parse()

        async def start_and_wait() -> None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await stdin.send_all(header)
            await finished.wait()

        timed_out = False
        done = False
        try:
            with _unwrapped():
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(pump_out)
                    nursery.start_soon(pump_err)
                    with timer:
                        await start_and_wait()
                    if not finished.is_set():
                        timed_out = True
                    else:
                        ended_at = trio.current_time()
                        while not out_eof.is_set():
                            deadline = min(last_data + self.drain_idle, ended_at + self.drain_max)
                            if trio.current_time() >= deadline:
                                break
                            with trio.move_on_at(deadline):
                                await out_eof.wait()
                        done = state["exit"] is not None or state["nocwd"]
                    nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                if done:
                    await self._finish(process, out_eof.is_set())
                else:
                    # after a timeout, what the command wrote before the kill reached it is
                    # still on its way (in sshd, the connection, the master): it is output too
                    await self._abort(
                        process, token, state["sid"], state["sup"], on_data if timed_out else None
                    )
                for stream in (process.stdin, stdout, stderr):
                    with contextlib.suppress(Exception):
                        await stream.aclose()
        if timed_out:
            raise CommandTimeout(timeout if timeout is not None else 0)
        if state["nocwd"]:
            raise _NoCwd
        if state["exit"] is None:
            message = bytes(err).decode("utf-8", "replace").strip()
            raise SshConnectionError(
                errno.EIO,
                f"ssh: lost the connection to {self.connection.destination}"
                + (f": {message}" if message else f" (ssh exit code {process.returncode})"),
            )
        return _RunResult(exit_code=state["exit"], stderr=bytes(err))

    async def _finish(self, process: trio.Process, output_ended: bool) -> None:
        """The command is done: let ssh end; when a background child still holds the output
        stream, stop the local ssh at once (that child keeps running)."""
        with contextlib.suppress(Exception):
            await process.stdin.aclose()  # type: ignore[union-attr]
        if output_ended:
            with trio.move_on_after(2):
                await process.wait()
        await self._stop_local(process)

    async def _abort(
        self,
        process: trio.Process,
        token: str,
        sid: str,
        sup: str,
        on_data: Callable[[bytes], None] | None = None,
    ) -> None:
        """Kill the remote tree: close the lifeline and wait for ssh to end (the supervisor
        exits only after the kill); else kill by token over a fresh connection. Shielded.
        ``on_data``: the command's output still arriving is handed to it (a timeout) rather
        than dropped (an abort)."""
        output_ended = trio.Event()
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._discard, process.stdout, on_data, output_ended)
                nursery.start_soon(self._discard, process.stderr, None, trio.Event())
                with contextlib.suppress(Exception):
                    await process.stdin.aclose()  # type: ignore[union-attr]
                with trio.move_on_after(self.kill_timeout):
                    await process.wait()
                if process.returncode is None:
                    await self._remote_kill(token, sid, sup)
                    await self._stop_local(process)
                if on_data is not None:
                    # the master writes into the output pipe itself: its last bytes may still
                    # be unread when the session's ssh has exited
                    with trio.move_on_after(self.drain_max):
                        await output_ended.wait()
                nursery.cancel_scope.cancel()

    @staticmethod
    async def _discard(
        stream: Any, on_data: Callable[[bytes], None] | None, ended: trio.Event
    ) -> None:
        """Read ``stream`` to its end, handing each chunk to ``on_data`` (when given and until
        it fails) or dropping it; set ``ended`` at the end."""
        with contextlib.suppress(Exception):
            while chunk := await stream.receive_some(READ_SIZE):
                if on_data is not None:
                    try:
                        on_data(bytes(chunk))
                    except Exception:
                        on_data = None
        ended.set()

    async def _remote_kill(self, token: str, sid: str, sup: str) -> None:
        ticks = str(max(0, round(self.kill_grace * 10)))
        command = shlex.join(["sh", "-c", _KILL_SCRIPT, "pi-ssh-kill", token, sid, ticks, sup])
        argv = [*self.connection.ssh_argv(multiplex=False), command]
        with trio.move_on_after(self.kill_timeout), contextlib.suppress(OSError):
            await trio.run_process(
                argv, stdin=subprocess.DEVNULL, capture_stdout=True, capture_stderr=True,
                check=False,
            )  # fmt: skip

    @staticmethod
    async def _stop_local(process: trio.Process) -> None:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            with trio.move_on_after(2):
                await process.wait()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


# -- bash ----------------------------------------------------------------------------------


class SshBashOperations:
    """:class:`~pi_core._backend_kit.operations.BashOperations` on a remote host (see the module docstring).

    ``local_root``: the session cwd, mapped to ``connection.remote_cwd``. ``shell``: the remote
    shell that runs commands (empty: ``bash`` when present, else ``sh``). ``kill_grace``:
    seconds between SIGTERM and SIGKILL of the remote tree; ``kill_timeout``: seconds pi waits
    for each cleanup step. ``drain_idle``/``drain_max``: how long output is still read after
    the command exited while a background child holds the stream (as the local backend; the
    idle time is longer, as the exit record and the last output travel on different streams).
    ``pass_env``: names of local variables sent to the remote command as they are (the
    ``[sandbox.ssh] env`` list). The ``env`` of :meth:`exec` is never sent whole: the remote
    command keeps the remote environment (``SSH_CONNECTION``, its ``HOME`` and ``PATH``...) and
    gets only what :func:`pi_core.backends.remote_environment` selects — the variables pi set
    or changed (``PI_*``, ``[env] set``, spawn-hook changes) and those named in ``pass_env``.
    """

    def __init__(
        self,
        connection: SshConnection,
        *,
        local_root: str | None = None,
        shell: str = "",
        kill_grace: float = 1.0,
        kill_timeout: float = 8.0,
        drain_idle: float = 0.25,
        drain_max: float = 1.0,
        pass_env: Sequence[str] = (),
    ) -> None:
        self.connection = connection
        self.paths = RemotePathMap(local_root, connection.remote_cwd)
        self._runner = _Supervised(
            connection,
            kill_grace=kill_grace,
            kill_timeout=kill_timeout,
            drain_idle=drain_idle,
            drain_max=drain_max,
            shell=shell,
            pass_env=pass_env,
        )

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None:
        """Run ``command`` in the remote directory of ``cwd``; see
        :class:`pi_core.BashOperations`.

        Errors: ``ToolError`` ``Working directory does not exist: {remote cwd}\\nCannot
        execute bash commands.`` (the remote path), or ``Remote working directory does not exist
        on HOST: {remote_cwd}\\nCannot execute bash commands.`` when ``cwd`` is the session's
        and the connection's ``remote_cwd`` is missing; :class:`SshConnectionError` (``cannot
        connect to HOST: ...``) when ssh cannot connect, ``ssh: lost the connection ...`` when
        it drops; :class:`~pi_core.CommandTimeout` past ``timeout`` seconds (tree killed).
        """
        try:
            result = await self._runner.run(
                command,
                self.paths.to_remote(cwd),
                merge=True,
                on_data=on_data,
                env=env,
                timeout=timeout,
            )
        except _NoCwd:
            if self.paths.is_root(cwd):  # remote_cwd is missing: named with its host
                raise self.paths.missing_root_error(
                    self.connection.host, "Cannot execute bash commands."
                ) from None
            raise missing_cwd_error(self.paths.to_remote(cwd)) from None
        return result.exit_code


# -- files ---------------------------------------------------------------------------------


class SshFileOperations:
    """:class:`~pi_core._backend_kit.operations.FileOperations` on a remote host (see the module docstring).

    ``local_root``: the session cwd, mapped to ``connection.remote_cwd``. ``op_timeout``:
    seconds one operation (not ``run_rg``) may take before it fails with
    :class:`SshConnectionError` (``ETIMEDOUT``). ``kill_grace``/``kill_timeout``: as in
    :class:`SshBashOperations`, for ``rg``.
    """

    def __init__(
        self,
        connection: SshConnection,
        *,
        local_root: str | None = None,
        op_timeout: float = 60.0,
        kill_grace: float = 1.0,
        kill_timeout: float = 8.0,
    ) -> None:
        self.connection = connection
        self.paths = RemotePathMap(local_root, connection.remote_cwd)
        self.op_timeout = op_timeout
        self._runner = _Supervised(
            connection,
            kill_grace=kill_grace,
            kill_timeout=kill_timeout,
            drain_idle=0.1,
            drain_max=1.0,
            shell="sh",
        )

    async def _run(
        self, script: str, path: str, *args: str, stdin: bytes = b""
    ) -> tuple[int, bytes, bytes]:
        """Run ``script`` (after :data:`_FILE_PRELUDE`) with the remote path of ``path`` and
        ``args``; ``(exit code, stdout, stderr)``. Raises :class:`SshConnectionError` when ssh
        fails or the operation times out, the missing remote root's error when it is missing."""
        await self.connection.ensure_master()
        remote = self.paths.to_remote(path)
        command = shlex.join(["sh", "-c", _FILE_PRELUDE + script, "pi-ssh", remote, *args])
        if self.paths.maps(path):
            command = f"PI_ROOT={shlex.quote(self.paths.remote_root or '/')} {command}"
        argv = [*self.connection.ssh_argv(), command]
        with trio.move_on_after(self.op_timeout) as scope:
            result = await trio.run_process(
                argv, stdin=stdin, capture_stdout=True, capture_stderr=True, check=False
            )
        if scope.cancelled_caught:
            raise SshConnectionError(
                errno.ETIMEDOUT,
                f"ssh: no answer from {self.connection.destination} in {self.op_timeout:g}s",
            )
        code, out, err = result.returncode, result.stdout, result.stderr
        if code == 255:
            message = err.decode("utf-8", "replace").strip()
            raise SshConnectionError(
                errno.EIO, f"ssh: lost the connection to {self.connection.destination}: {message}"
            )
        found = re.search(rb"PI-SSH-ERRNO ([A-Z]+)", err)
        if code == 97 and found and found.group(1) == b"NOROOT":
            raise self.paths.missing_root_error(self.connection.host)
        return code, out, err

    async def _call(
        self, script: str, path: str, *args: str, stdin: bytes = b""
    ) -> tuple[bytes, bytes]:
        """Run ``script`` (after :data:`_FILE_PRELUDE`) with the remote path of ``path`` and
        ``args``; ``(stdout, stderr)`` on exit 0, else the ``OSError`` (naming ``path``)."""
        code, out, err = await self._run(script, path, *args, stdin=stdin)
        if code == 0:
            return out, err
        raise _script_error(code, err, path)

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (``None``: to the end) from byte ``offset`` (``tail -c``/``head -c``);
        ``IsADirectoryError``, ``FileNotFoundError``, ``NotADirectoryError``, ..."""
        if length is not None and length <= 0:
            await self.stat(path)
            return b""
        out, _ = await self._call(
            _READ_SCRIPT, path, str(max(0, offset)), "-" if length is None else str(length)
        )
        return out

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Atomic replace (temp file beside the target, size check, ``sync``, ``mv``; mode and
        owner kept; a symlink's target replaced)."""
        await self._call(_WRITE_SCRIPT, path, str(len(data)), stdin=bytes(data))

    async def stat(self, path: str) -> FileStat:
        """Kind, size, permission bits and mtime of ``path`` (symlinks followed)."""
        out, _ = await self._call(_STAT_SCRIPT, path)
        return _parse_stat(out)

    async def stat_probed(self, path: str) -> tuple[str | None, FileStat | OSError] | None:
        """:meth:`realpath` and :meth:`stat` of ``path`` in **one** remote script:
        ``(real, stat)``, ``real`` as :meth:`realpath` gives it, ``stat`` the
        :class:`FileStat` or the ``OSError`` :meth:`stat` raises. A guard judges ``real``
        before it lets ``stat`` out. ``None`` when a subclass overrides ``stat`` or
        ``realpath`` (the caller uses those)."""
        cls = type(self)
        if cls.stat is not SshFileOperations.stat or (
            cls.realpath is not SshFileOperations.realpath
        ):
            return None
        code, out, err = await self._run(_STAT_PROBE_SCRIPT, path)
        real, _, line = out.partition(b"\0")
        found = _script_error(code, err, path) if code else _parse_stat(line)
        named = self.paths.to_local(real.decode("utf-8", "surrogateescape")) if real else None
        return (named or posixpath.normpath(path)), found

    async def read_head(
        self, path: str, cwd: str, *, whole_limit: int, head_size: int, for_read: bool = True
    ) -> HeadResult | None:
        """The read tool's first step (as :meth:`pi_core.backends.LocalFileOperations.
        read_head`) in **one** remote script: the candidates' ``stat``, the start of the first
        that exists. ``None`` when a subclass overrides ``stat`` or ``read_bytes`` (the caller
        uses those), or the script failed before its report ended."""
        cls = type(self)
        if cls.read_bytes is not SshFileOperations.read_bytes or (
            cls.stat is not SshFileOperations.stat
        ):
            return None
        found = head_candidates(path, cwd, for_read)
        if found is None:
            return None
        candidates, fallback = found
        others = [self.paths.to_remote(c) for c in candidates[1:]]
        code, out, err = await self._run(
            _HEAD_SCRIPT, candidates[0], str(whole_limit), str(head_size), *others
        )
        return parse_head(
            out,
            candidates,
            fallback,
            parse_stat=_parse_stat,
            probe_error=lambda status, text, name: _script_error(status, text, name),
            read_error=(lambda name: _script_error(code, err, name)) if code else None,
        )

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """Node's ``fs.access``: raise unless ``path`` exists and allows ``mode``
        (``os.R_OK``/``os.W_OK``/``os.X_OK`` bits): ``FileNotFoundError``, ``PermissionError``."""
        letters = "".join(
            letter for bit, letter in ((os.R_OK, "r"), (os.W_OK, "w"), (os.X_OK, "x")) if mode & bit
        )
        await self._call(_ACCESS_SCRIPT, path, letters or "-")

    async def realpath(self, path: str) -> str:
        """``path`` with symlinks resolved (``realpath -m``: a missing rest is kept)."""
        try:
            out, _ = await self._call(_REALPATH_SCRIPT, path)
        except SshConnectionError:
            raise
        except OSError:
            return posixpath.normpath(path)
        return self.paths.to_local(out.decode("utf-8", "surrogateescape"))

    async def list_dir(self, path: str) -> list[str]:
        """Entry names of the directory (no ``.``/``..``), unsorted."""
        out, _ = await self._call(_LIST_SCRIPT, path)
        return [name.decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name]

    async def mkdir(self, path: str) -> None:
        """``mkdir -p``: ``FileExistsError`` when ``path`` exists and is not a directory."""
        await self._call(_MKDIR_SCRIPT, path)

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """Run the remote ``rg`` with ``args`` in ``cwd`` (stdin ``/dev/null``; killed with its
        tree on cancellation); session paths in ``args`` are mapped to the remote and the file
        names in the output back. ``FileNotFoundError`` when the remote has no ``rg`` or
        ``cwd`` is missing; :class:`SshConnectionError` when the connection fails."""
        remote_args = [self.paths.to_remote(arg) if arg.startswith("/") else arg for arg in args]
        chunks: list[bytes] = []
        try:
            result = await self._runner.run(
                shlex.join(["rg", *remote_args]),
                self.paths.to_remote(cwd),
                merge=False,
                on_data=chunks.append,
                env=None,
                timeout=None,
            )
        except _NoCwd:
            if self.paths.is_root(cwd):
                raise self.paths.missing_root_error(self.connection.host) from None
            raise _os_error(errno.ENOENT, cwd) from None
        code = result.exit_code if result.exit_code is not None else 2
        if code == 127:
            raise FileNotFoundError(
                errno.ENOENT,
                f"ripgrep (rg) is not installed on {self.connection.destination}",
                "rg",
            )
        stdout = self.paths.rg_output_to_local(b"".join(chunks), args)
        return CommandOutput(exit_code=code, stdout=stdout, stderr=result.stderr)


__all__ = [
    "SUPERVISOR_SCRIPT",
    "RemotePathMap",
    "SshBashOperations",
    "SshConnection",
    "SshConnectionError",
    "SshFileOperations",
]
