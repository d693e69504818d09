"""From the validated ``[sandbox]`` table and the session cwd to the backends and the path policy
of a session, and the before-hook's path check.

=============  ====================================  ===============================================
backend        bash                                  file tools
=============  ====================================  ===============================================
``local``      ``None`` (the built-in local one)     ``None``; with ``[sandbox.policy]``: a guarded
                                                     :class:`~pi_core._backend_kit.local_files.LocalFileOperations`
``bwrap``      :class:`BwrapBackend` (workspace =    the same object (guarded with a policy)
               session cwd; denied paths masked)
``ssh``        :class:`SshBashOperations`            :class:`SshFileOperations` (guarded), one
                                                     shared :class:`SshConnection`; session cwd =
                                                     ``remote_cwd``
``container``  :class:`ContainerBackend` behind      the same (guarded); the session cwd maps to
               :class:`MappedBashOperations`         ``workdir`` and back (:class:`MappedFileOperations`)
``ray``        :class:`~pi_sandbox_plugin.ray_       the same (guarded); the session cwd maps to the
               backend.RayBackend` (one actor)       workspace on the actor's node and back
=============  ====================================  ===============================================

The path policy (:class:`~pi_sandbox_plugin.policies.path_policy.PathPolicy`) comes from
``[sandbox.policy]``; without that table, the ``local``, ``bwrap`` and ``container`` backends
still get one that only keeps pi's own files (the session's
:attr:`~pi_core.SessionContext.protected_files`) from the agent. With the local
backend, bash is limited by the command policy alone (the path policy cannot see inside a
command); bwrap also masks the denied paths from bash: each literal path, the fixed directory of
an absolute ``DIR/**`` pattern, and what the session's
:class:`~pi_sandbox_plugin.policies.file_identity.FileIdentities` finds, asked at each sandbox
start: the matches of each glob in the workspace and the patterns' folders and every other name
of those files (at most :data:`~pi_sandbox_plugin.policies.file_identity.WALK_LIMIT` entries
walked; walked again when a denied file's link count or the mount table changed). A file
created later under a denied glob is not masked from bash (the file tools still refuse it). On
this machine's file systems (``local``, ``bwrap``) the file tools also judge files by identity
(device and inode: hard links, bind mounts), on the descriptor they read.

A session's objects are built once per pi session (:func:`sandbox_session` keeps them in the
session's ``state["sandbox"]``), so the bash and file hooks share one SSH connection or
container; at ``pi_session_end`` (:func:`close_sandbox_sessions`) the SSH control master is
stopped and its socket directory removed, a container started from an image is removed, and a
Ray session's actor is released (its commands killed, a new workspace removed). The Ray backend's
module (and ``ray``) is imported only when a session uses it.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from pi_core import BashOperations, ConfigError, FileOperations, ProtectedFile
from pi_core.backends import CommandOutput, FileStat, LocalFileOperations, LocalWorkspaceTree
from pi_sandbox_plugin.backends.bwrap import BwrapBackend
from pi_sandbox_plugin.backends.container import ContainerBackend
from pi_sandbox_plugin.backends.errors import SandboxUnavailable
from pi_sandbox_plugin.backends.shell_files import HeadResult, head_candidates
from pi_sandbox_plugin.backends.ssh import (
    RemotePathMap,
    SshBashOperations,
    SshConnection,
    SshFileOperations,
)
from pi_sandbox_plugin.policies.file_identity import FileIdentities
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations
from pi_sandbox_plugin.policies.path_policy import (
    PathPolicy,
    compile_deny_pattern,
    declared_path_reason,
)
from pi_sandbox_plugin.settings.config import (
    DEFAULT_CONFIG_NAME,
    SANDBOX_TABLE,
    SandboxConfig,
    load_session_sandbox_config,
)

PROTECTING_BACKENDS = ("local", "bwrap", "container")
"""The backends whose file tools and commands reach this machine's files (the container's
workspace is a folder of this machine): pi's own files are protected there."""


# -- the path policy -------------------------------------------------------------------------


def build_path_policy(
    sandbox: SandboxConfig, cwd: str, protected: Mapping[str, ProtectedFile] | None = None
) -> PathPolicy | None:
    """The :class:`PathPolicy` of ``[sandbox.policy]`` for a session in ``cwd``;
    :class:`~pi_core._errors.ConfigError` (``pi.toml: sandbox.policy.deny_paths[I]:
    problem``) for a bad pattern. Local file systems (``local``, ``bwrap``) resolve the roots
    with ``os.path.realpath``; remote ones take them as written. pi's full-output files stay
    readable (the guard reads them on this machine). ``protected``: pi's own files (the
    session's ``protected_files``), for the backends of :data:`PROTECTING_BACKENDS`; without
    ``[sandbox.policy]`` the policy only protects them (every path readable and writable
    otherwise), and is ``None`` when there is nothing to protect them for."""
    policy = sandbox.policy
    local = sandbox.backend in ("local", "bwrap")
    if sandbox.backend not in PROTECTING_BACKENDS:
        protected = None
    if policy is None:
        if protected is None:
            return None
        return PathPolicy(
            cwd,
            read_roots=["/"],
            write_roots=["/"],
            resolve=os.path.realpath if local else posixpath.normpath,
            protected=protected,
        )
    deny_paths = list(getattr(policy, "deny_paths", []))
    for index, pattern in enumerate(deny_paths):
        try:
            compile_deny_pattern(pattern)
        except ValueError as error:
            raise ConfigError(
                f"{DEFAULT_CONFIG_NAME}: {SANDBOX_TABLE}.policy.deny_paths[{index}]: {error}"
            ) from None
    return PathPolicy(
        cwd,
        read_roots=list(getattr(policy, "read_roots", ["."])),
        write_roots=list(getattr(policy, "write_roots", ["."])),
        deny_paths=deny_paths,
        resolve=os.path.realpath if local else posixpath.normpath,
        allow_output_files=True,
        protected=protected,
    )


def fixed_masks(policy: PathPolicy) -> list[str]:
    """The paths bwrap masks whatever the walk finds: the literal patterns and ``DIR`` of an
    absolute ``DIR/**`` (so a file created there later is hidden too)."""
    found = dict.fromkeys(policy.literal_deny_paths())
    for pattern in policy.deny_patterns:
        text = pattern.text.strip()
        if pattern.absolute and text.endswith("/**"):
            base = os.path.expanduser(text[:-3])
            if not any(c in base for c in "*?["):
                found[base] = None
    return list(found)


def path_check_reason(
    tool: Any,
    args: Any,
    cwd: str,
    policy: PathPolicy,
    resolve: Callable[[str], str] = os.path.realpath,
    identities: FileIdentities | None = None,
) -> str | None:
    """The reason the before-hook blocks a call of ``tool`` (an ``AgentTool``) with ``args``,
    or ``None``: the policy's check of the tool's declared path arguments
    (:func:`~pi_sandbox_plugin.policies.path_policy.declared_path_reason`), by identity too with
    ``identities``."""
    return declared_path_reason(tool.path_arguments, args, cwd, policy, resolve, identities)


# -- container paths ---------------------------------------------------------------------------


class MappedFileOperations:
    """A :class:`~pi_core._backend_kit.operations.FileOperations` whose paths are the session's, over
    ``inner`` whose paths are the container's (``paths``: session cwd → ``workdir``); results
    and error file names map back."""

    def __init__(self, inner: ContainerBackend, paths: RemotePathMap) -> None:
        self.inner = inner
        self.paths = paths

    async def _call(self, path: str, call: Callable[[str], Any]) -> Any:
        remote = self.paths.to_remote(path)
        try:
            return await call(remote)
        except OSError as error:
            if error.filename == remote:
                error.filename = path
            raise

    def checkpoint_tree(self, root: str, exclude: Sequence[str] = ()) -> LocalWorkspaceTree | None:
        """Checkpoints read and restore the workspace on the host when the container mounts it
        from here (started from an image); a running container named in the config shows its
        files only inside, which checkpoints do not support (``None``)."""
        workspace = self.inner.workspace
        if workspace is None or os.path.realpath(root) != workspace:
            return None
        return LocalWorkspaceTree(root, exclude)

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``inner.read_bytes`` of the container path."""
        data: bytes = await self._call(path, lambda p: self.inner.read_bytes(p, offset, length))
        return data

    async def read_head(
        self, path: str, cwd: str, *, whole_limit: int, head_size: int, for_read: bool = True
    ) -> HeadResult | None:
        """The inner one-hop head read (:meth:`ShellFileOperations.read_head`) of the
        container paths of ``path``'s candidates, named as the session names them."""
        found = head_candidates(path, cwd, for_read)
        if found is None:
            return None
        candidates, fallback = found
        return await self.inner.read_head_at(
            [self.paths.to_remote(c) for c in candidates],
            candidates,
            fallback,
            whole_limit=whole_limit,
            head_size=head_size,
        )

    async def write_bytes(self, path: str, data: bytes) -> None:
        """``inner.write_bytes`` of the container path."""
        await self._call(path, lambda p: self.inner.write_bytes(p, data))

    async def stat(self, path: str) -> FileStat:
        """``inner.stat`` of the container path."""
        result: FileStat = await self._call(path, self.inner.stat)
        return result

    async def stat_probed(self, path: str) -> tuple[str | None, FileStat | OSError] | None:
        """``inner.stat_probed`` of the container path: the resolved path mapped back, an
        error naming ``path``."""
        remote = self.paths.to_remote(path)
        found = await self.inner.stat_probed(remote)
        if found is None:
            return None
        real, info = found
        if isinstance(info, OSError) and info.filename == remote:
            info.filename = path
        return (None if real is None else self.paths.to_local(real)), info

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """``inner.access`` of the container path."""
        await self._call(path, lambda p: self.inner.access(p, mode))

    async def realpath(self, path: str) -> str:
        """``inner.realpath`` of the container path, mapped back."""
        return self.paths.to_local(await self._call(path, self.inner.realpath))

    async def list_dir(self, path: str) -> list[str]:
        """``inner.list_dir`` of the container path."""
        names: list[str] = await self._call(path, self.inner.list_dir)
        return names

    async def mkdir(self, path: str) -> None:
        """``inner.mkdir`` of the container path."""
        await self._call(path, self.inner.mkdir)

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """``inner.run_rg`` with absolute arguments and ``cwd`` mapped, file names mapped back."""
        remote_args = [self.paths.to_remote(a) if a.startswith("/") else a for a in args]
        output = await self._call(cwd, lambda c: self.inner.run_rg(remote_args, c))
        return CommandOutput(
            exit_code=output.exit_code,
            stdout=self.paths.rg_output_to_local(output.stdout, args),
            stderr=output.stderr,
            truncated=output.truncated,
        )


class MappedBashOperations:
    """A :class:`~pi_core._backend_kit.operations.BashOperations` whose ``cwd`` is the session's, over
    ``inner`` whose cwd is the container's."""

    def __init__(self, inner: ContainerBackend, paths: RemotePathMap) -> None:
        self.inner = inner
        self.paths = paths

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None:
        """``inner.exec`` in the container path of ``cwd``."""
        return await self.inner.exec(
            command, self.paths.to_remote(cwd), on_data=on_data, env=env, timeout=timeout
        )


# -- the backends -----------------------------------------------------------------------------


@dataclass
class SandboxSession:
    """What the plugin built for one session: ``cwd``, the ``sandbox`` config, the path
    ``policy`` (``None``: no path policy), the ``bash`` and ``files`` backends (``None``: let
    the built-in local ones answer; ``files`` is already guarded) and ``resolve`` (how the
    before-hook resolves a path). ``resources``: what :func:`close_sandbox_session` releases
    (objects with ``async aclose()``: the SSH connection, the container). ``identities``: the
    checks by device and inode on this machine's file systems (``None`` elsewhere)."""

    cwd: str
    sandbox: SandboxConfig
    policy: PathPolicy | None
    bash: BashOperations | None
    files: FileOperations | None
    resolve: Callable[[str], str]
    resources: list[Any] = field(default_factory=list)
    identities: FileIdentities | None = None


def make_backends(
    sandbox: SandboxConfig,
    cwd: str,
    policy: PathPolicy | None = None,
    resources: list[Any] | None = None,
    identities: FileIdentities | None = None,
) -> tuple[BashOperations | None, FileOperations | None]:
    """The unguarded ``(bash, files)`` backends of ``sandbox`` for a session in ``cwd``
    (``(None, None)`` for ``local``). ``policy`` gives bwrap the paths to mask and a container
    pi's own files to mount read-only; ``identities`` the rest of bwrap's masks; what must be
    closed at the end of the session (an SSH connection, a container) is appended to
    ``resources``."""
    owned = resources if resources is not None else []
    if sandbox.backend == "bwrap":
        cfg = sandbox.bwrap
        proxy = None
        if sandbox.network_mode == "allow-list":
            from pi_sandbox_plugin.network.proxy import NetworkProxy
            from pi_sandbox_plugin.network.sources import network_policy

            proxy = NetworkProxy(network_policy(sandbox, cwd))
        bwrap = BwrapBackend(
            cwd,
            network=sandbox.network_mode == "on",
            proxy=proxy,
            deny_paths=fixed_masks(policy) if policy is not None else (),
            bwrap=cfg.bwrap,
            shell=cfg.shell,
            extra_args=cfg.extra_args,
            masks=identities.mask_plan if identities is not None else None,
        )
        owned.append(bwrap)
        return bwrap, bwrap
    if sandbox.backend == "ssh":
        ssh = sandbox.ssh
        connection = SshConnection(
            host=ssh.host,
            port=ssh.port,
            user=ssh.user,
            identity_file=ssh.identity_file,
            remote_cwd=ssh.remote_cwd,
            options=list(ssh.options),
        )
        owned.append(connection)
        return (
            SshBashOperations(connection, local_root=cwd, shell=ssh.shell, pass_env=ssh.env),
            SshFileOperations(connection, local_root=cwd),
        )
    if sandbox.backend == "container":
        box = sandbox.container
        container_proxy = None
        if sandbox.network_mode == "allow-list":
            from pi_sandbox_plugin.network.proxy import NetworkProxy
            from pi_sandbox_plugin.network.sources import network_policy

            container_proxy = NetworkProxy(network_policy(sandbox, cwd))
        container = ContainerBackend(
            cli=box.cli,
            cli_args=box.cli_args,
            container=box.container or None,
            image=box.image or None,
            workspace=cwd if box.image else None,
            workdir=box.workdir,
            run_args=list(getattr(box, "run_args", [])),
            pass_env=box.env,
            protected=policy.protected if policy is not None else None,
            proxy=container_proxy,
        )
        owned.append(container)
        paths = RemotePathMap(cwd, box.workdir)
        return MappedBashOperations(container, paths), MappedFileOperations(container, paths)
    if sandbox.backend == "ray":
        from pi_sandbox_plugin.backends.ray import RayBackend, import_ray

        try:
            import_ray()  # a missing extra is a clear error at once
        except SandboxUnavailable as error:
            raise ConfigError(f"{DEFAULT_CONFIG_NAME}: {SANDBOX_TABLE}.backend: {error}") from None
        ray_cfg = sandbox.ray
        backend = RayBackend(
            address=ray_cfg.address,
            resources=ray_cfg.resources,
            labels=ray_cfg.labels,
            num_cpus=ray_cfg.num_cpus,
            runtime_env=ray_cfg.runtime_env,
            workspace=ray_cfg.workspace,
            ship=ray_cfg.ship,
            local_root=cwd,
            pass_env=ray_cfg.env,
            lost_after=ray_cfg.lost_after,
            start_timeout=ray_cfg.start_timeout,
        )
        owned.append(backend)
        return backend, backend
    return None, None


def build_sandbox_session(
    sandbox: SandboxConfig, cwd: str, protected: Mapping[str, ProtectedFile] | None = None
) -> SandboxSession:
    """The :class:`SandboxSession` of ``sandbox`` for a session in ``cwd`` (absolute);
    ``protected``: pi's own files (the pi session's ``protected_files``, read at each
    operation)."""
    policy = build_path_policy(sandbox, cwd, protected)
    local = sandbox.backend in ("local", "bwrap")
    identities = FileIdentities(policy) if policy is not None and local else None
    resources: list[Any] = [] if identities is None else [identities]
    bash, files = make_backends(sandbox, cwd, policy, resources, identities)
    if policy is not None:
        if files is None:
            files = (
                LocalFileOperations()
                if identities is None
                else LocalFileOperations(
                    check_opened=identities.check_opened,
                    check_replaced=identities.check_replaced,
                )
            )
        files = GuardedFileOperations(files, policy, identities=identities)
    return SandboxSession(
        cwd=cwd,
        sandbox=sandbox,
        policy=policy,
        bash=bash,
        files=files,
        resolve=os.path.realpath if local else posixpath.normpath,
        resources=resources,
        identities=identities,
    )


STATE_KEY = "sandbox"
"""The key of the plugin's entry in a pi session's ``state``: the list of the
:class:`SandboxSession` objects built for that session (one, unless a program asks the backend
hooks for several cwds)."""


def sandbox_session(
    config: Mapping[str, Any],
    cwd: str,
    state: MutableMapping[str, Any] | None = None,
    protected: Mapping[str, ProtectedFile] | None = None,
) -> SandboxSession | None:
    """The :class:`SandboxSession` of the loaded ``config`` (the TOML dict) for ``cwd``;
    ``None`` without a ``[sandbox]`` table. Raises :class:`~pi_core._errors.ConfigError` for a
    bad table. ``protected``: the pi session's ``protected_files`` (pi's own files, kept from
    the agent).

    ``state`` is the pi session's ``state`` dict: the object is built on first use and kept
    there (``state["sandbox"]``), so the bash and file hooks of one session share it, and
    :func:`close_sandbox_sessions` releases it when the session ends. Without ``state`` (a
    program calling the hook outside a session) a new object is built, which the caller
    closes with :func:`close_sandbox_session`."""
    sandbox = load_session_sandbox_config(config, cwd)
    if sandbox is None:
        return None
    cwd = os.path.abspath(cwd)
    built: list[SandboxSession] = [] if state is None else state.setdefault(STATE_KEY, [])
    for session in built:
        if session.cwd == cwd and session.sandbox == sandbox:
            return session
    session = build_sandbox_session(sandbox, cwd, protected)
    built.append(session)
    return session


def known_session(state: Mapping[str, Any] | None) -> SandboxSession | None:
    """The :class:`SandboxSession` of a pi session's ``state``, or ``None``: how the
    before-hook finds the cwd and policy of its session. ``None`` also when the session built
    objects for several cwds (ambiguous: the guard still enforces)."""
    found: list[SandboxSession] = [] if state is None else list(state.get(STATE_KEY, []))
    if not found or any(session.cwd != found[0].cwd for session in found):
        return None
    return found[-1]


async def close_sandbox_session(session: SandboxSession) -> None:
    """Release what ``session`` holds: stop the SSH control master and remove its socket
    directory; remove a container started from an image; release a Ray actor. Shielded from
    cancellation."""
    with trio.CancelScope(shield=True):
        while session.resources:
            await session.resources.pop().aclose()


async def close_sandbox_sessions(state: MutableMapping[str, Any]) -> None:
    """``pi_session_end``: close every :class:`SandboxSession` kept in ``state`` (all of
    them, even when one fails; the first failure is raised afterwards)."""
    failures: list[Exception] = []
    for session in state.pop(STATE_KEY, []):
        try:
            await close_sandbox_session(session)
        except Exception as exc:
            failures.append(exc)
    if failures:
        raise failures[0]


def before_hook_path_reason(
    tool: Any, args: Any, config: Mapping[str, Any], state: Mapping[str, Any] | None = None
) -> str | None:
    """The before-hook's path check (the early clear error): the reason to block
    a call of ``tool`` (an ``AgentTool``) that declares path arguments, or ``None``. Needs the
    session built by :func:`sandbox_session` in the pi session's ``state`` (its cwd); without
    one, or without a path policy, ``None`` (the guard of the file operations still enforces
    the policy)."""
    if not getattr(tool, "path_arguments", ()):
        return None
    session = known_session(state)
    if session is None or session.policy is None:
        return None
    return path_check_reason(
        tool, args, session.cwd, session.policy, session.resolve, session.identities
    )


__all__ = [
    "PROTECTING_BACKENDS",
    "MappedBashOperations",
    "MappedFileOperations",
    "SandboxSession",
    "before_hook_path_reason",
    "build_path_policy",
    "build_sandbox_session",
    "close_sandbox_session",
    "close_sandbox_sessions",
    "fixed_masks",
    "known_session",
    "make_backends",
    "path_check_reason",
    "sandbox_session",
]
