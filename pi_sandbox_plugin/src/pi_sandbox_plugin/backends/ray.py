"""The Ray backend: each session's bash commands and file tools run on one node of a Ray
cluster, in a Ray actor that owns the session's workspace there.

``[sandbox] backend = "ray"`` (the optional extra ``pip install 'pi-sandbox-plugin[ray]'``;
``ray`` is imported only when a session uses this backend). :class:`RayBackend` is a
:class:`~pi_core.BashOperations` and :class:`~pi_core.FileOperations` whose paths are the
session's: the session cwd maps to the workspace on the node and back, like the container
backend's ``workdir``.

**Connection.** The pi process joins the cluster as a Ray driver on first use (once per process,
:func:`connect`): ``address`` ``"auto"`` (``RAY_ADDRESS``, else the cluster started on this
machine by ``ray start``), ``"HOST:PORT"`` (the head's GCS), ``"ray://HOST:PORT"`` (Ray Client;
needs ``ray[client]``) or ``"local"`` (a new one-machine cluster of this pi process alone,
stopped when pi exits).

**Placement.** One actor (:class:`WorkspaceActor`) per session, created with ``resources``
(``{NAME: amount}``: only a node offering them takes it), ``labels`` (Ray's ``label_selector``:
only a node with those labels), ``num_cpus`` (default 0: the actor holds no CPU while idle),
``runtime_env``, no restart (``max_restarts=0``). A resource no node offers is an error at once
(``no node of the Ray cluster offers ...``), a placement that cannot be met in ``start_timeout``
seconds an error too; nothing waits forever.

**Workspace.** ``workspace``: a directory on the node (created if missing, never removed), or
empty for a new directory under the node's temporary directory, removed when the session ends.
``ship``: what is unpacked into the workspace when the actor starts: ``"cwd"`` (the session cwd,
packed here as a tar archive), a directory or a ``.tar``/``.tar.gz``/``.tgz``/``.tar.xz``/
``.tar.bz2`` archive (a path on this machine, relative to the session cwd), at most
:data:`SHIP_LIMIT` bytes packed; nothing is shipped back (the tool results are the output).

**Commands** run under pi's own local backend inside the actor (the ``pi_bash_operations`` of
the built-in tools: the local supervisor, a child subreaper, so timeout and abort kill the whole
process tree on the node). The command environment is the actor's, plus what
:func:`pi_core.backends.remote_environment` selects of the bash tool's environment (``PI_*``,
``[env] set``, the names in ``env``), plus ``PI_RAY_NODE_ID`` (the node's id). Output streams
back through a Ray streaming generator (``num_returns="streaming"``) as raw chunks, so pi's
100 ms updates, truncation and full-output file work as locally. Timeout: the tree is killed on
the node and :class:`~pi_core.CommandTimeout` raised; cancellation (abort) and an exception from
``on_data`` ask the actor to kill the tree (shielded) before re-raising.

**File tools** are actor calls running :class:`pi_core.backends.LocalFileOperations` on the
node; ``OSError`` comes back with its ``errno`` and the session's path.

**A lost node or actor** (the node died, the actor was killed, the network is cut) becomes
:class:`~pi_sandbox_plugin.backends.errors.SandboxUnavailable` naming the node and the actor,
never a hang: while waiting, pi pings the actor every :data:`PING_INTERVAL` seconds, and a ping
unanswered for ``lost_after`` seconds (or Ray reporting the actor dead) ends the call; later
calls of the session fail at once with the same message. With a command ``timeout``, the call
also ends at ``timeout + lost_after`` seconds whatever happens.

:meth:`RayBackend.aclose` (the plugin's ``pi_session_end``) kills the running commands, removes
a new workspace and kills the actor (shielded, bounded).
"""

from __future__ import annotations

import io
import logging
import os
import queue
import re
import secrets
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import trio

from pi_core import BackendContext, CommandTimeout, ToolError, make_plugin_manager
from pi_core.backends import (
    CommandOutput,
    FileStat,
    LocalFileOperations,
    missing_cwd_error,
    remote_environment,
)
from pi_sandbox_plugin.backends.errors import SandboxUnavailable
from pi_sandbox_plugin.backends.ssh import RemotePathMap

RAY_EXTRA = "pip install 'pi-sandbox-plugin[ray]'"
"""How to install what the backend needs."""

NODE_ID_VARIABLE = "PI_RAY_NODE_ID"
"""The variable every command sees: the id of the node its actor runs on."""

PING_INTERVAL = 1.0
"""Seconds a wait goes without news before pi pings the actor."""

SHIP_LIMIT = 256 * 1024 * 1024
"""Most bytes of a packed workspace shipped with a session."""

CHUNK_LIMIT = 1024 * 1024
"""Most bytes of output the actor sends in one streamed item."""

MAX_CONCURRENCY = 64
"""Calls one actor runs at once (commands, file operations, pings)."""

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2")
"""Names of a ``ship`` path taken as an archive (anything else must be a directory)."""

FILE_METHODS = frozenset(
    {"read_bytes", "write_bytes", "stat", "access", "realpath", "list_dir", "mkdir", "run_rg"}
)
"""The file operations the actor runs."""


def import_ray() -> Any:
    """The ``ray`` module; :class:`SandboxUnavailable` naming the extra when it is missing."""
    try:
        import ray
    except ImportError as exc:
        raise SandboxUnavailable(
            f"the Ray backend needs the ray package, which cannot be imported ({exc}): {RAY_EXTRA}"
        ) from None
    return ray


# -- the actor (runs on the node) -------------------------------------------------------------


def _error_item(exc: BaseException) -> tuple[Any, ...]:
    """How an exception of an operation travels back to pi."""
    if isinstance(exc, CommandTimeout):
        return ("timeout", exc.timeout)
    if isinstance(exc, OSError):
        return ("oserror", exc.errno, exc.strerror or str(exc), exc.filename)
    if isinstance(exc, ToolError):
        return ("tool_error", str(exc))
    return ("error", f"{type(exc).__name__}: {exc}")


class WorkspaceActor:
    """The Ray actor of one session (a threaded actor: each call runs in its own thread, and
    each operation in its own ``trio.run``): owns the ``workspace`` directory on its node.

    ``workspace``: a directory (created if missing) or ``""`` for a new one under the node's
    temporary directory (removed by :meth:`release`); ``archive``: bytes of a tar archive to
    unpack into it (``None``: nothing); ``kill_grace``: seconds between SIGTERM and SIGKILL."""

    def __init__(self, workspace: str, archive: bytes | None, kill_grace: float = 1.0) -> None:
        import ray

        self.node_id = ray.get_runtime_context().get_node_id()
        self.node_ip = ray.util.get_node_ip_address()
        self.owned = not workspace
        self.workspace = workspace or tempfile.mkdtemp(prefix="pi-ray-")
        os.makedirs(self.workspace, exist_ok=True)
        if archive is not None:
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
                tar.extractall(self.workspace, filter="data")
        manager = make_plugin_manager(autoload=False, plugins=["builtin_tools"])
        context = BackendContext(cwd=self.workspace, config={})
        found = manager.hook.pi_bash_operations(context=context)
        bash = next((b for b in found if b is not None), None)
        if bash is None:
            raise RuntimeError("pi's built-in tools give no local bash backend on this node")
        bash.kill_grace = kill_grace
        self.bash: Any = bash
        self.files = LocalFileOperations()
        self.kill_grace = kill_grace
        self._lock = threading.Lock()
        self._running: dict[str, dict[str, Any]] = {}
        self._cancelled: set[str] = set()

    def info(self) -> dict[str, Any]:
        """Where the actor runs: ``node_id``, ``node_ip``, ``workspace``, ``pid``."""
        return {
            "node_id": self.node_id,
            "node_ip": self.node_ip,
            "workspace": self.workspace,
            "pid": os.getpid(),
        }

    def ping(self) -> str:
        """The node id (pi's liveness check)."""
        return self.node_id

    def exec(
        self,
        exec_id: str,
        command: str,
        cwd: str,
        env: dict[str, str] | None,
        timeout: float | None,
    ) -> Iterator[tuple[Any, ...]]:
        """Run ``command`` (called with ``num_returns="streaming"``): yields ``("data",
        bytes)`` items as output arrives, then one of ``("exit", code)``, ``("timeout", s)``,
        ``("cancelled",)``, ``("tool_error", text)``, ``("error", text)``; a
        ``("beat",)`` after each :data:`PING_INTERVAL` seconds without output."""
        items: queue.Queue[tuple[Any, ...]] = queue.Queue()
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env[NODE_ID_VARIABLE] = self.node_id
        done = threading.Event()
        with self._lock:
            self._running[exec_id] = {"done": done}
        worker = threading.Thread(
            target=self._run_exec,
            args=(exec_id, command, cwd, full_env, timeout, items, done),
            name=f"pi-exec-{exec_id}",
            daemon=True,
        )
        worker.start()
        pending: tuple[Any, ...] | None = None
        while True:
            if pending is not None:
                item, pending = pending, None
            else:
                try:
                    item = items.get(timeout=PING_INTERVAL)
                except queue.Empty:
                    yield ("beat",)
                    continue
            if item[0] != "data":
                yield item
                return
            data = bytearray(item[1])
            while len(data) < CHUNK_LIMIT:
                try:
                    following = items.get_nowait()
                except queue.Empty:
                    break
                if following[0] != "data":
                    pending = following
                    break
                data += following[1]
            yield ("data", bytes(data))

    def _run_exec(
        self,
        exec_id: str,
        command: str,
        cwd: str,
        env: dict[str, str],
        timeout: float | None,
        items: queue.Queue[tuple[Any, ...]],
        done: threading.Event,
    ) -> None:
        async def main() -> None:
            with trio.CancelScope() as scope:
                with self._lock:
                    self._running[exec_id].update(
                        token=trio.lowlevel.current_trio_token(), scope=scope
                    )
                    if exec_id in self._cancelled:
                        scope.cancel()
                await trio.lowlevel.checkpoint()
                code = await self.bash.exec(
                    command,
                    cwd,
                    on_data=lambda chunk: items.put(("data", bytes(chunk))),
                    env=env,
                    timeout=timeout,
                )
                items.put(("exit", code))
                return
            items.put(("cancelled",))

        try:
            trio.run(main)
        except BaseException as exc:  # every failure goes back to pi as an item
            items.put(_error_item(exc))
        finally:
            with self._lock:
                self._running.pop(exec_id, None)
                self._cancelled.discard(exec_id)
            done.set()

    def cancel(self, exec_id: str) -> bool:
        """Kill the process tree of the command ``exec_id`` (also one not started yet) and
        wait until it is gone; ``True`` when it ended in time."""
        with self._lock:
            entry = self._running.get(exec_id)
            if entry is None:
                return True
            self._cancelled.add(exec_id)
            token, scope = entry.get("token"), entry.get("scope")
        if token is not None and scope is not None:
            try:
                trio.from_thread.run_sync(scope.cancel, trio_token=token)
            except trio.RunFinishedError:
                pass
        ended: bool = entry["done"].wait(self.kill_grace + 30)
        return ended

    def file_call(self, method: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Run the file operation ``method(*args)`` of :class:`LocalFileOperations`:
        ``("ok", value)`` or an error item (``("oserror", errno, strerror, filename)``...)."""
        if method not in FILE_METHODS:
            return ("error", f"unknown file operation {method!r}")
        operation = getattr(self.files, method)
        if method == "run_rg":  # (cwd, args) -> run_rg(args, cwd)
            args = (args[1], args[0])
        try:
            value = trio.run(lambda: operation(*args))
        except BaseException as exc:  # every failure goes back to pi as an item
            return _error_item(exc)
        if isinstance(value, FileStat):
            value = ("stat", value.kind, value.size, value.mode, value.mtime)
        elif isinstance(value, CommandOutput):
            value = ("output", value.exit_code, value.stdout, value.stderr, value.truncated)
        return ("ok", value)

    def release(self) -> None:
        """Kill every running command and remove a workspace this actor made."""
        with self._lock:
            running = list(self._running)
        for exec_id in running:
            self.cancel(exec_id)
        if self.owned:
            shutil.rmtree(self.workspace, ignore_errors=True)


# -- the connection (pi's side) ---------------------------------------------------------------

_LOG = logging.getLogger(__name__)
_CONNECT_LOCK = threading.Lock()
_CONNECTED: dict[str, str] = {}


def connect(address: str) -> Any:
    """Join the Ray cluster at ``address`` as a driver, once per process (see the module
    docstring); the ``ray`` module. :class:`SandboxUnavailable` when ``ray`` is missing, the
    cluster cannot be reached, or this process already joined another cluster."""
    ray = import_ray()
    with _CONNECT_LOCK:
        if ray.is_initialized():
            joined = _CONNECTED.get("address")
            if joined is not None and joined != address:
                raise SandboxUnavailable(
                    f"this pi process is already connected to the Ray cluster at {joined}, "
                    f"not {address}"
                )
            return ray
        options: dict[str, Any] = {
            "logging_level": logging.ERROR,
            "log_to_driver": False,
            "configure_logging": True,
            "namespace": "pi",
        }
        if address == "local":
            options["include_dashboard"] = False
        else:
            options["address"] = address
            _check_reachable(address)
        try:
            ray.init(**options)
        except Exception as exc:
            raise SandboxUnavailable(
                f"cannot connect to the Ray cluster at {address}: {type(exc).__name__}: {exc}"
            ) from None
        _CONNECTED["address"] = address
        _quiet_cluster_messages()
        return ray


REACH_TIMEOUT_SECONDS = 10.0
"""How long a ``HOST:PORT`` address may take to accept a TCP connection before pi gives up
(``ray.init`` itself retries an unreachable address without end)."""


def _check_reachable(address: str) -> None:
    """Raise :class:`SandboxUnavailable` when ``HOST:PORT`` accepts no TCP connection within
    :data:`REACH_TIMEOUT_SECONDS` (``auto`` and ``ray://`` addresses are left to Ray)."""
    import socket

    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        return
    try:
        with socket.create_connection((host.strip("[]"), number), timeout=REACH_TIMEOUT_SECONDS):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise SandboxUnavailable(
            f"cannot connect to the Ray cluster at {address}: {reason}"
        ) from None


def _quiet_cluster_messages() -> None:
    """Keep the cluster's error messages (``(raylet) The node ... has been marked dead``) off
    pi's stdout, where they would corrupt its output: Ray's driver prints them from a
    background thread through ``ray._private.worker.print_to_stdstream``; they go to the
    ``pi_sandbox_plugin.backends.ray`` logger instead (the tool results name a lost node)."""
    try:
        from ray._private import worker
    except ImportError:  # another Ray layout: nothing to quiet
        return
    if getattr(worker, "print_to_stdstream", None) is None:
        return

    def to_log(data: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        for line in data.get("lines", []):
            _LOG.info("ray %s: %s", data.get("pid", ""), line)

    worker.print_to_stdstream = to_log


def pack_workspace(source: str) -> bytes:
    """The bytes of ``source`` to ship: an archive file as it is, a directory packed as a
    gzip tar archive (its content at the archive's root; symlinks kept as links).
    :class:`SandboxUnavailable` when it is missing, of another kind, or over
    :data:`SHIP_LIMIT`."""
    if os.path.isdir(source):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
            for name in sorted(os.listdir(source)):
                tar.add(os.path.join(source, name), arcname=name)
                if buffer.tell() > SHIP_LIMIT:
                    break
        data = buffer.getvalue()
    elif os.path.isfile(source) and source.endswith(ARCHIVE_SUFFIXES):
        if os.path.getsize(source) > SHIP_LIMIT:
            data = b"x" * (SHIP_LIMIT + 1)
        else:
            with open(source, "rb") as handle:
                data = handle.read()
    elif os.path.exists(source):
        raise SandboxUnavailable(
            f"cannot ship {source}: not a directory or a tar archive ({', '.join(ARCHIVE_SUFFIXES)})"
        )
    else:
        raise SandboxUnavailable(f"cannot ship {source}: no such file or directory")
    if len(data) > SHIP_LIMIT:
        raise SandboxUnavailable(
            f"cannot ship {source}: over {SHIP_LIMIT // (1024 * 1024)} MiB packed; put it on "
            "the nodes (workspace = PATH) or on shared storage instead"
        )
    return data


class RayBackend:
    """A :class:`~pi_core.BashOperations` and :class:`~pi_core.FileOperations` on one Ray
    actor (see the module docstring). Paths are the session's (``local_root`` and below map
    to the workspace on the node; ``local_root=None``: paths are the node's, unchanged).

    ``address``, ``resources``, ``labels``, ``num_cpus``, ``runtime_env``, ``workspace``,
    ``ship`` (a path on this machine, ``"cwd"`` for ``local_root``, or ``""``), ``pass_env``:
    as in ``[sandbox.ray]``. ``kill_grace``: seconds between SIGTERM and SIGKILL on the node;
    ``lost_after``: seconds an unanswered ping means the node or actor is lost;
    ``start_timeout``: seconds to place and start the actor. The actor starts on first use
    (or :meth:`start`); :meth:`aclose` releases it."""

    def __init__(
        self,
        *,
        address: str = "auto",
        resources: Mapping[str, float] | None = None,
        labels: Mapping[str, str] | None = None,
        num_cpus: float = 0,
        runtime_env: Mapping[str, Any] | None = None,
        workspace: str = "",
        ship: str = "",
        local_root: str | None = None,
        pass_env: Sequence[str] = (),
        kill_grace: float = 1.0,
        lost_after: float = 10.0,
        start_timeout: float = 120.0,
    ) -> None:
        self.address = address
        self.resources = dict(resources or {})
        self.labels = dict(labels or {})
        self.num_cpus = num_cpus
        self.runtime_env = dict(runtime_env or {})
        self.workspace = workspace
        self.ship = ship
        self.local_root = os.path.abspath(local_root) if local_root else None
        self.pass_env = tuple(pass_env)
        self.kill_grace = kill_grace
        self.lost_after = lost_after
        self.start_timeout = start_timeout
        self.name = f"pi-session-{secrets.token_hex(6)}"
        self.node_id = ""
        self.node_ip = ""
        self.paths = RemotePathMap()
        self._ray: Any = None
        self._actor: Any = None
        self._lost: str | None = None
        self._closed = False
        self._start_lock = trio.Lock()
        self._limiter = trio.CapacityLimiter(MAX_CONCURRENCY)

    # -- lifecycle ----------------------------------------------------------------------------

    def _placement(self) -> str:
        parts = [f"resources {self.resources}" if self.resources else ""]
        parts.append(f"labels {self.labels}" if self.labels else "")
        return " and ".join(p for p in parts if p) or "any node"

    def _create(self, abandoned: threading.Event) -> tuple[Any, dict[str, Any]]:
        """Connect, check the placement, create the actor and wait for its ``info`` (in a
        worker thread); ``(actor, info)``. The actor is killed when this fails or when
        ``abandoned`` is set (the caller was cancelled)."""
        ray = connect(self.address)
        self._ray = ray
        offered = ray.cluster_resources()
        missing = [name for name in self.resources if name not in offered]
        if missing:
            raise SandboxUnavailable(
                f"no node of the Ray cluster at {self.address} offers the resource "
                f"{', '.join(missing)} (it has: {', '.join(sorted(offered))})"
            )
        archive = None
        if self.ship:
            source = self.local_root if self.ship == "cwd" else self.ship
            if source is None:
                raise SandboxUnavailable('ship = "cwd" needs the session cwd')
            if self.local_root and not os.path.isabs(source):
                source = os.path.join(self.local_root, source)
            archive = pack_workspace(source)
        options: dict[str, Any] = {
            "name": self.name,
            "num_cpus": self.num_cpus,
            "max_concurrency": MAX_CONCURRENCY,
            "max_restarts": 0,
            "max_task_retries": 0,
        }
        if self.resources:
            options["resources"] = self.resources
        if self.labels:
            options["label_selector"] = self.labels
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        actor_class = ray.remote(WorkspaceActor)
        actor = actor_class.options(**options).remote(self.workspace, archive, self.kill_grace)
        ref = actor.info.remote()
        deadline = time.monotonic() + self.start_timeout
        ready: list[Any] = []
        while not ready and not abandoned.is_set() and time.monotonic() < deadline:
            ready, _ = ray.wait([ref], timeout=min(0.5, max(0.0, deadline - time.monotonic())))
        if abandoned.is_set():
            ray.kill(actor, no_restart=True)
            raise SandboxUnavailable(f"the start of the Ray actor {self.name} was cancelled")
        if not ready:
            ray.kill(actor, no_restart=True)
            raise SandboxUnavailable(
                f"the Ray actor {self.name} was not placed and started within "
                f"{self.start_timeout:g} s (placement: {self._placement()}); no node of the "
                f"cluster at {self.address} can take it now"
            )
        try:
            info: dict[str, Any] = ray.get(ref)
        except Exception as exc:
            ray.kill(actor, no_restart=True)
            raise SandboxUnavailable(
                f"the Ray actor {self.name} could not start: {_ray_error_text(exc)}"
            ) from None
        if abandoned.is_set():
            ray.kill(actor, no_restart=True)
        return actor, info

    async def start(self) -> None:
        """Place and start the actor (idempotent); :class:`SandboxUnavailable` when that
        fails or after :meth:`aclose`."""
        async with self._start_lock:
            if self._closed:
                raise SandboxUnavailable(f"the Ray sandbox {self.name} is closed")
            if self._actor is not None:
                return
            abandoned = threading.Event()
            try:
                actor, info = await trio.to_thread.run_sync(
                    self._create, abandoned, abandon_on_cancel=True
                )
            except trio.Cancelled:
                abandoned.set()
                raise
            self.node_id = info["node_id"]
            self.node_ip = info["node_ip"]
            self.workspace = info["workspace"]
            self.paths = RemotePathMap(self.local_root, info["workspace"])
            self._actor = actor

    async def aclose(self) -> None:
        """Kill the running commands, remove a new workspace and kill the actor (shielded;
        at most ``kill_grace + lost_after + 5`` seconds); later calls raise
        :class:`SandboxUnavailable`."""
        self._closed = True
        actor, self._actor = self._actor, None
        if actor is None:
            return

        def release() -> None:
            try:
                if self._lost is None:  # a lost actor cannot clean up: only kill it
                    ref = actor.release.remote()
                    self._ray.wait([ref], timeout=self.kill_grace + self.lost_after)
            finally:
                self._ray.kill(actor, no_restart=True)

        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(self.kill_grace + self.lost_after + 5),
        ):
            try:
                await trio.to_thread.run_sync(release, abandon_on_cancel=True)
            except Exception:  # the actor or its node is already gone
                pass

    async def __aenter__(self) -> RayBackend:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- waiting on the actor -----------------------------------------------------------------

    def _lost_error(self, reason: str) -> SandboxUnavailable:
        where = f"{self.node_id} ({self.node_ip})" if self.node_ip else self.node_id
        self._lost = (
            f"the Ray node {where} or the actor {self.name} of this session is lost: {reason}"
        )
        return SandboxUnavailable(self._lost)

    def _check_alive(self) -> None:
        """Ping the actor (worker thread); raise the lost error when it does not answer within
        ``lost_after`` seconds or Ray says it is dead."""
        ray = self._ray
        try:
            ref = self._actor.ping.remote()
            ready, _ = ray.wait([ref], timeout=self.lost_after)
            if not ready:
                raise self._lost_error(f"no answer for {self.lost_after:g} s")
            ray.get(ref)
        except SandboxUnavailable:
            raise
        except Exception as exc:
            raise self._lost_error(_ray_error_text(exc)) from None

    def _wait_ready(self, waitable: Any, deadline: float | None) -> bool:
        """Wait (worker thread) until ``waitable`` (a ref or a generator) is ready, pinging
        the actor while it is quiet; ``False`` when ``deadline`` (``time.monotonic``) passed."""
        ray = self._ray
        while True:
            wait = PING_INTERVAL
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    return False
            ready, _ = ray.wait([waitable], timeout=wait)
            if ready:
                return True
            self._check_alive()

    async def _in_thread(self, function: Callable[[], Any]) -> Any:
        return await trio.to_thread.run_sync(
            function, abandon_on_cancel=True, limiter=self._limiter
        )

    async def _ready(self) -> None:
        if self._lost is not None:
            raise SandboxUnavailable(self._lost)
        await self.start()
        if self._lost is not None:
            raise SandboxUnavailable(self._lost)

    # -- BashOperations -----------------------------------------------------------------------

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None:
        """Run ``command`` on the actor's node in ``cwd`` (a session path); see
        :class:`pi_core.BashOperations` and the module docstring.

        Errors: ``ToolError`` ``Working directory does not exist: {cwd}\\nCannot execute bash
        commands.``; :class:`~pi_core.CommandTimeout`; :class:`SandboxUnavailable` (the actor
        cannot start, or its node or the actor is lost)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._ready()
        ray = self._ray
        remote_cwd = self.paths.to_remote(cwd)
        sent = None if env is None else remote_environment(env, self.pass_env)
        exec_id = secrets.token_hex(8)
        stream = self._actor.exec.options(num_returns="streaming").remote(
            exec_id, command, remote_cwd, sent, timeout
        )
        deadline = None if timeout is None else time.monotonic() + timeout + self.lost_after

        def next_item() -> tuple[Any, ...] | None:
            if not self._wait_ready(stream, deadline):
                return None
            try:
                ref = next(stream)
            except StopIteration:
                return ("error", "the command's output stream ended without an exit code")
            item: tuple[Any, ...] = ray.get(ref)
            return item

        finished = False
        try:
            while True:
                try:
                    item = await self._in_thread(next_item)
                except SandboxUnavailable:
                    finished = True
                    raise
                except Exception as exc:
                    finished = True
                    raise self._lost_error(_ray_error_text(exc)) from None
                if item is None:
                    raise self._lost_error(
                        f"the command did not end within its timeout ({timeout:g} s) plus "
                        f"{self.lost_after:g} s"
                    )
                kind = item[0]
                if kind == "beat":
                    continue
                if kind == "data":
                    on_data(item[1])
                    continue
                finished = True
                if kind == "exit":
                    code: int | None = item[1]
                    return code
                if kind == "timeout":
                    raise CommandTimeout(item[1])
                if kind == "cancelled":
                    raise SandboxUnavailable(
                        f"the command was cancelled on the Ray actor {self.name}"
                    )
                if kind == "tool_error":
                    text = str(item[1])
                    if text.startswith("Working directory does not exist: "):
                        raise missing_cwd_error(cwd)
                    raise ToolError(text)
                raise SandboxUnavailable(f"the Ray actor {self.name} failed: {item[-1]}")
        finally:
            if not finished:
                await self._cancel(exec_id)

    async def _cancel(self, exec_id: str) -> None:
        """Ask the actor to kill the tree of ``exec_id`` and wait for it (shielded, bounded)."""
        if self._actor is None or self._lost is not None:
            return
        ray = self._ray

        def cancel() -> None:
            ref = self._actor.cancel.remote(exec_id)
            ray.wait([ref], timeout=self.kill_grace + self.lost_after + 5)

        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(self.kill_grace + self.lost_after + 10),
        ):
            try:
                await trio.to_thread.run_sync(cancel, abandon_on_cancel=True)
            except Exception:  # the actor is gone: so is its tree
                pass

    # -- FileOperations -----------------------------------------------------------------------

    async def _file_call(self, method: str, path: str, *args: Any) -> Any:
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._ready()
        ray = self._ray
        remote = self.paths.to_remote(path)
        ref = self._actor.file_call.remote(method, (remote, *args))

        def wait() -> tuple[Any, ...]:
            self._wait_ready(ref, None)
            item: tuple[Any, ...] = ray.get(ref)
            return item

        try:
            result = await self._in_thread(wait)
        except SandboxUnavailable:
            raise
        except Exception as exc:
            raise self._lost_error(_ray_error_text(exc)) from None
        kind = result[0]
        if kind == "ok":
            return result[1]
        if kind == "oserror":
            _, code, strerror, filename = result
            if filename == remote:
                filename = path
            elif isinstance(filename, str):
                filename = self.paths.to_local(filename)
            raise OSError(code, strerror, filename)
        if kind == "tool_error":
            raise ToolError(str(result[1]))
        raise SandboxUnavailable(f"the Ray actor {self.name} failed: {result[-1]}")

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes from ``offset`` of the file at ``path`` on the node."""
        data: bytes = await self._file_call("read_bytes", path, offset, length)
        return data

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the file at ``path`` on the node atomically."""
        await self._file_call("write_bytes", path, data)

    async def stat(self, path: str) -> FileStat:
        """Kind, size, mode and mtime of ``path`` on the node."""
        _, kind, size, mode, mtime = await self._file_call("stat", path)
        return FileStat(kind=kind, size=size, mode=mode, mtime=mtime)

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """``access(2)`` of ``path`` on the node."""
        await self._file_call("access", path, mode)

    async def realpath(self, path: str) -> str:
        """``path`` with every symlink resolved on the node (a session path)."""
        resolved: str = await self._file_call("realpath", path)
        return self.paths.to_local(resolved)

    async def list_dir(self, path: str) -> list[str]:
        """Names of the entries of the directory ``path`` on the node."""
        names: list[str] = await self._file_call("list_dir", path)
        return names

    async def mkdir(self, path: str) -> None:
        """``mkdir -p path`` on the node."""
        await self._file_call("mkdir", path)

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """ripgrep on the node in ``cwd``; absolute arguments and file names mapped."""
        await self._ready()
        remote_args = [self.paths.to_remote(a) if a.startswith("/") else a for a in args]
        _, code, stdout, stderr, truncated = await self._file_call("run_rg", cwd, remote_args)
        return CommandOutput(
            exit_code=code,
            stdout=self.paths.rg_output_to_local(stdout, args),
            stderr=stderr,
            truncated=truncated,
        )


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _ray_error_text(exc: BaseException) -> str:
    """A short reason from a Ray exception: its first line and, for a traceback, the last."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    text = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return f"{type(exc).__name__}: {text}"


__all__ = [
    "CHUNK_LIMIT",
    "NODE_ID_VARIABLE",
    "PING_INTERVAL",
    "RAY_EXTRA",
    "SHIP_LIMIT",
    "RayBackend",
    "WorkspaceActor",
    "connect",
    "import_ray",
    "pack_workspace",
]
