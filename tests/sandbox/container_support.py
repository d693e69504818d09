"""Test support for the container backend: a container image built without any registry.

:func:`build_rootfs_tar` packs the host's ``bash``, ``sh``, the coreutils the tools and the
contract suite use, ``sed``, ``setsid`` and ``rg``, with every library they link (``ldd``), into a
root file system tarball; :func:`import_image` imports it with ``podman import``. The fixtures
that use them live in ``tests/sandbox/test_container_backend.py``.

On this machine podman needs :data:`PODMAN_CLI_ARGS` (global flags) and :data:`PODMAN_RUN_ARGS`
(flags of ``run``); both are passed to the backend by the tests, never hard-coded in it.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sysconfig
import tarfile

PODMAN_CLI_ARGS = ["--runtime", "runc", "--cgroup-manager", "cgroupfs"]
"""Global podman flags this machine needs (no systemd, runc instead of crun)."""

PODMAN_RUN_ARGS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
"""Flags of ``podman run`` this machine needs (the default ulimits cannot be raised here)."""

IMAGE_PROGRAMS = [
    "bash", "sh", "cat", "head", "tail", "tr", "cut", "sleep", "dd", "stat", "realpath",
    "mkdir", "mktemp", "mv", "rm", "chmod", "chown", "sync", "dirname", "basename", "ls", "env",
    "pwd", "printf", "echo", "true", "false", "test", "id", "touch", "ln", "wc", "sort", "date",
    "truncate", "mkfifo",
    "readlink", "kill", "sed", "setsid", "rg",
]  # fmt: skip
"""Programs copied into the image: shell, coreutils, ``sed``/``setsid`` (the contract suite) and
``rg`` (grep and find); every other program of ``coreutils`` joins them
(:func:`coreutils_programs`)."""


_WHEEL_RG = os.path.join(sysconfig.get_path("scripts"), "rg")
"""``rg`` of the ripgrep PyPI wheel, used in the image when no ``rg`` is on ``PATH``."""


def coreutils_programs() -> list[str]:
    """Every program of the host's ``coreutils`` package (``dpkg-query -L``), or ``[]`` where
    there is no dpkg (then :data:`IMAGE_PROGRAMS` alone)."""
    if shutil.which("dpkg-query") is None:
        return []
    result = subprocess.run(
        ["dpkg-query", "-L", "coreutils"], capture_output=True, text=True, check=False
    )
    return [
        path
        for path in result.stdout.splitlines()
        if re.match(r"^/(usr/)?s?bin/[^/]+$", path) and os.access(path, os.X_OK)
    ]


def _libraries(binaries: list[str]) -> dict[str, list[str]]:
    """Absolute paths of the shared libraries each of ``binaries`` links, loader included (one
    ``ldd`` for all of them; ``[]`` for a static binary)."""
    result = subprocess.run(["ldd", *binaries], capture_output=True, text=True, check=False)
    if len(binaries) == 1:  # ldd names the file only when it is given several
        return {binaries[0]: re.findall(r"(/\S+)", result.stdout)}
    found: dict[str, list[str]] = {binary: [] for binary in binaries}
    current: list[str] = []
    for line in result.stdout.splitlines():
        if not line[:1].isspace() and line.endswith(":") and line[:-1] in found:
            current = found[line[:-1]]
        else:
            current.extend(re.findall(r"(/\S+)", line))
    return found


def _add_path(tar: tarfile.TarFile, path: str, seen: set[str]) -> None:
    """Add ``path`` as seen on the host: each symlink of it (parents included) as a symlink, the
    final file as a regular file, parent directories as directories."""
    path = os.path.normpath(path)
    if path in seen or path == "/":
        return
    parent = os.path.dirname(path)
    _add_path(tar, parent, seen)
    seen.add(path)
    name = path.lstrip("/")
    if os.path.islink(path):
        target = os.readlink(path)
        info = tarfile.TarInfo(name)
        info.type = tarfile.SYMTYPE
        info.linkname = target
        tar.addfile(info)
        _add_path(tar, os.path.join(parent, target), seen)
    elif os.path.isdir(path):
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        tar.addfile(info)
    else:
        _add_file(tar, path, name)


def _add_file(tar: tarfile.TarFile, path: str, name: str) -> None:
    """``path`` as a regular file ``name``, also when the host file has other hard links (a
    library that ``perf`` linked into ``~/.debug``): ``tarfile`` would write a hard link to the
    name it first gave the inode, which may lie under a symlinked directory of the image
    (``lib`` -> ``usr/lib``), where ``podman import`` cannot resolve it."""
    info = tar.gettarinfo(path, arcname=name)
    if info.islnk():
        info.type = tarfile.REGTYPE
        info.linkname = ""
        info.size = os.path.getsize(path)
    with open(path, "rb") as file:
        tar.addfile(info, file)


def build_rootfs_tar(destination: str) -> list[str]:
    """Write a root file system tarball to ``destination``; returns the programs it holds.

    Raises ``FileNotFoundError`` when a program of :data:`IMAGE_PROGRAMS` is not on ``PATH``.
    """
    seen: set[str] = set()
    programs = []
    with tarfile.open(destination, "w") as tar:
        for directory, mode in (("tmp", 0o1777), ("proc", 0o555), ("sys", 0o555), ("dev", 0o755),
                                ("etc", 0o755), ("root", 0o700), ("work", 0o755),
                                ("run", 0o755), ("var", 0o755)):  # fmt: skip
            info = tarfile.TarInfo(directory)
            info.type = tarfile.DIRTYPE
            info.mode = mode
            tar.addfile(info)
            seen.add("/" + directory)
        passwd = b"root:x:0:0:root:/root:/bin/bash\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(passwd))
        for top in ("/bin", "/sbin", "/lib", "/lib64"):
            if os.path.islink(top):
                _add_path(tar, top, seen)
        found = {p: shutil.which(p) if "/" not in p else p for p in IMAGE_PROGRAMS}
        found.update((p, p) for p in coreutils_programs())
        if found["rg"] is None and os.access(_WHEEL_RG, os.X_OK):
            found["rg"] = _WHEEL_RG  # the ripgrep wheel's, when no rg is on PATH
        paths: dict[str, str] = {}
        for program, path in found.items():
            if path is None:
                raise FileNotFoundError(f"{program} is not installed")
            paths[program] = path
        libraries = _libraries(sorted({os.path.realpath(path) for path in paths.values()}))
        for program, path in paths.items():
            programs.append(path)
            if program == "rg":  # wherever it was found (a venv's bin under uv run): on PATH
                _add_file(tar, os.path.realpath(path), "usr/bin/rg")
                seen.add("/usr/bin/rg")
            else:
                _add_path(tar, path, seen)
            for library in libraries[os.path.realpath(path)]:
                _add_path(tar, library, seen)
    return programs


def import_image(cli: str, cli_args: list[str], tarball: str, name: str) -> None:
    """``podman import`` the tarball as image ``name`` (raises ``CalledProcessError``)."""
    subprocess.run(
        [cli, *cli_args, "import", tarball, name], check=True, capture_output=True, timeout=300
    )


def remove_image(cli: str, cli_args: list[str], name: str) -> None:
    """Remove image ``name`` (best effort)."""
    subprocess.run(
        [cli, *cli_args, "rmi", "-f", name], check=False, capture_output=True, timeout=120
    )


def container_names(cli: str, cli_args: list[str], *, ancestor: str | None = None) -> list[str]:
    """Names of every container, running or not (only those of image ``ancestor`` if given)."""
    filters = ["--filter", f"ancestor={ancestor}"] if ancestor else []
    result = subprocess.run(
        [cli, *cli_args, "ps", "-a", *filters, "--format", "{{.Names}}"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.stdout.split()


class PodmanSession:
    """One image and one running container for a whole test session, made on first use.

    ``workspace``: the host directory mounted at ``/work`` in the container. :meth:`image` and
    :meth:`container` build/start once and return the name, or skip (fail under ``CI=true``)
    when this machine cannot; :meth:`cleanup` removes the container, every container started
    from the image, and the image.
    """

    def __init__(self, scratch: str, workspace: str, cli: str = "podman") -> None:
        self.scratch = scratch
        self.workspace = workspace
        self.cli = cli
        self.cli_args = list(PODMAN_CLI_ARGS)
        self.run_args = [*PODMAN_RUN_ARGS, "--network", "none"]
        token = os.urandom(4).hex()
        self.image_name = f"localhost/pi-sandbox-test:{token}"
        self.container_name = f"pi-sandbox-test-{token}"
        self._image_ready = False
        self._container_ready = False
        self._failure: str | None = None

    def _give_up(self, reason: str) -> None:
        import pytest

        self._failure = reason
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must be able to run podman)")
        pytest.skip(reason)

    def image(self) -> str:
        if self._failure:
            self._give_up(self._failure)
        if not self._image_ready:
            tarball = os.path.join(self.scratch, "rootfs.tar")
            try:
                build_rootfs_tar(tarball)
                import_image(self.cli, self.cli_args, tarball, self.image_name)
            except (OSError, subprocess.SubprocessError) as exc:
                detail = getattr(exc, "stderr", b"") or b""
                self._give_up(f"cannot build the test image: {exc} {detail.decode().strip()}")
            self._image_ready = True
        return self.image_name

    def container(self) -> str:
        from pi_sandbox_plugin.backends.container import PID1_LOOP

        image = self.image()
        if not self._container_ready:
            result = subprocess.run(
                [self.cli, *self.cli_args, "run", "-d", "--rm", "--name", self.container_name,
                 *self.run_args, "-v", f"{self.workspace}:/work", "-w", "/work", image,
                 "bash", "-c", PID1_LOOP],
                capture_output=True, text=True, check=False, timeout=300,
            )  # fmt: skip
            if result.returncode != 0:
                self._give_up(f"cannot start a test container: {result.stderr.strip()}")
            self._container_ready = True
        return self.container_name

    def cleanup(self) -> None:
        if self._image_ready:
            names = container_names(self.cli, self.cli_args, ancestor=self.image_name)
            if names:
                subprocess.run(
                    [self.cli, *self.cli_args, "rm", "-f", "-t", "0", *names],
                    capture_output=True, check=False, timeout=300,
                )  # fmt: skip
            remove_image(self.cli, self.cli_args, self.image_name)


__all__ = [
    "IMAGE_PROGRAMS",
    "PODMAN_CLI_ARGS",
    "PODMAN_RUN_ARGS",
    "PodmanSession",
    "build_rootfs_tar",
    "container_names",
    "coreutils_programs",
    "import_image",
    "remove_image",
]
