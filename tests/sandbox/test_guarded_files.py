"""The path-policy guard of the file tools (issue 6 item 4): the real read, write, edit, ls,
find, grep and bash tools over ``GuardedFileOperations(LocalFileOperations())``. No file tool
reads or writes through a symlink leading out of the allowed roots, whatever the order of the
calls of a batch; grep and find never return denied files; pi's full-output files stay
readable."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
from replay_support import call

import pi_builtin_tools.plugin as builtin_plugin
from pi_builtin_tools.files.read import read_file
from pi_core import AgentContext, LoopConfig, ToolError
from pi_core._backend_kit.local_files import LocalFileOperations
from pi_core._loop.loop import run_agent_loop
from pi_core._plugins.contexts import BackendContext
from pi_core._plugins.markers import hookimpl
from pi_core._plugins.session import Session, build_session
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.messages import AssistantMessage, ToolCall
from pi_core.backends import CommandOutput
from pi_sandbox_plugin.backends.shell_files import ShellFileOperations
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations, PathDenied
from pi_sandbox_plugin.policies.path_policy import PathPolicy

SECRET = "TOP-SECRET-42"


class GuardPlugin:
    """Provides the guarded local backend for the file tools."""

    def __init__(self, policy: PathPolicy) -> None:
        self.policy = policy

    @hookimpl
    def pi_file_operations(self, context: BackendContext) -> GuardedFileOperations:
        return GuardedFileOperations(LocalFileOperations(), self.policy)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with a readable file, denied ``.env`` files and, beside it, an outside file
    holding the secret."""
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "a.txt").write_text(f"hello\n{SECRET} in a\n")
    (workspace / ".env").write_text(f"TOKEN={SECRET}\n")
    (workspace / "sub" / ".env").write_text(f"TOKEN={SECRET}\n")
    (workspace / "sub" / "b.txt").write_text("bee\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(f"{SECRET} outside\n")
    return workspace


@pytest.fixture
def session(plugin_manager: Any, register_plugin: Any, ws: Path) -> Session:
    register_plugin(builtin_plugin, name="builtin_tools")
    register_plugin(GuardPlugin(PathPolicy(str(ws), deny_paths=[".env"])), name="guard")
    return build_session(plugin_manager, ws)


async def batch(session: Session, *calls: tuple[str, dict[str, Any]]) -> list[tuple[str, bool]]:
    """One assistant message with ``calls`` run by the loop (parallel), results in call order."""
    message = AssistantMessage(
        content=[
            ToolCall(id=f"t{i}", name=name, arguments=args) for i, (name, args) in enumerate(calls)
        ],
        stop_reason="toolUse",
    )
    config = LoopConfig()
    session.hooks.apply_to(config)
    config.provider = ScriptedProvider([message], when_exhausted="stop")

    async def sink(event: Any) -> None:
        return None

    messages = await run_agent_loop(["go"], AgentContext(tools=session.tools), config, sink)
    results = {m.tool_call_id: m for m in messages if m.role == "toolResult"}
    return [
        (
            "".join(c.text for c in results[f"t{i}"].content if c.type == "text"),
            results[f"t{i}"].is_error,
        )
        for i in range(len(calls))
    ]


def eacces(syscall: str, path: Path | str) -> str:
    return f"EACCES: permission denied, {syscall} '{path}'"


# -- reading ---------------------------------------------------------------------------------


async def test_reads_inside_the_workspace_work(session: Session) -> None:
    assert await call(session, "read", path="a.txt") == (f"hello\n{SECRET} in a\n", False)


async def test_dotenv_is_denied(session: Session, ws: Path) -> None:
    text, is_error = await call(session, "read", path=".env")
    assert is_error and SECRET not in text
    text, is_error = await call(session, "read", path="sub/.env")
    assert is_error and SECRET not in text


async def test_read_through_a_symlink_made_by_bash_is_refused(session: Session, ws: Path) -> None:
    outside = ws.parent / "outside" / "secret.txt"
    assert await call(session, "bash", command=f"ln -s {outside} x && ln -s /etc etc") == (
        "(no output)",
        False,
    )
    text, is_error = await call(session, "read", path="x")
    assert (is_error, SECRET in text) == (True, False)
    text, is_error = await call(session, "read", path="etc/passwd")
    assert (is_error, "root:" in text) == (True, False)
    text, is_error = await call(session, "read", path=str(outside))
    assert (is_error, SECRET in text) == (True, False)


async def test_symlink_to_a_denied_file_is_refused(session: Session, ws: Path) -> None:
    (ws / "innocent").symlink_to(ws / ".env")
    text, is_error = await call(session, "read", path="innocent")
    assert (is_error, SECRET in text) == (True, False)


# -- writing ---------------------------------------------------------------------------------


async def test_write_and_edit_through_an_outward_symlink_are_refused(
    session: Session, ws: Path
) -> None:
    outside = ws.parent / "outside" / "secret.txt"
    (ws / "link").symlink_to(outside)
    (ws / "dirlink").symlink_to(ws.parent / "outside")
    text, is_error = await call(session, "write", path="link", content="pwned")
    assert is_error and text == eacces("open", ws / "link")
    text, is_error = await call(
        session, "edit", path="link", edits=[{"oldText": "outside", "newText": "pwned"}]
    )
    assert is_error and "pwned" not in outside.read_text()
    text, is_error = await call(session, "write", path="dirlink/new.txt", content="pwned")
    assert is_error
    assert outside.read_text() == f"{SECRET} outside\n"
    assert sorted(p.name for p in (ws.parent / "outside").iterdir()) == ["secret.txt"]


async def test_write_inside_the_workspace_works(session: Session, ws: Path) -> None:
    text, is_error = await call(session, "write", path="new/dir/f.txt", content="ok")
    assert (text, is_error) == ("Successfully wrote to new/dir/f.txt", False)
    assert (ws / "new" / "dir" / "f.txt").read_text() == "ok"
    text, is_error = await call(session, "write", path=".env", content="x")
    assert is_error and (ws / ".env").read_text() == f"TOKEN={SECRET}\n"


# -- batches: whatever the order -------------------------------------------------------------


async def test_parallel_batch_symlink_then_read(session: Session, ws: Path) -> None:
    outside = ws.parent / "outside" / "secret.txt"
    results = await batch(
        session,
        ("bash", {"command": f"ln -s {outside} x"}),
        ("read", {"path": "x"}),
        ("bash", {"command": "ln -s /etc/passwd y"}),
        ("read", {"path": "y"}),
        ("grep", {"pattern": "root|TOP-SECRET", "path": "."}),
    )
    assert results[0] == ("(no output)", False)
    assert results[2] == ("(no output)", False)
    for text, is_error in (results[1], results[3]):
        assert is_error and SECRET not in text and "root:" not in text
    assert results[4] == (f"a.txt:2: {SECRET} in a", False)


async def test_sequential_batches_symlink_then_read_write_edit(session: Session, ws: Path) -> None:
    outside = ws.parent / "outside" / "secret.txt"
    await batch(session, ("bash", {"command": f"ln -s {outside} x"}))
    results = await batch(
        session,
        ("read", {"path": "x"}),
        ("write", {"path": "x", "content": "pwned"}),
        ("edit", {"path": "x", "edits": [{"oldText": "outside", "newText": "pwned"}]}),
        ("ls", {"path": "x"}),
        ("grep", {"pattern": "TOP", "path": "x"}),
        ("find", {"pattern": "*", "path": "x"}),
    )
    assert all(is_error for _, is_error in results), results
    assert not any(SECRET in text for text, _ in results)
    assert outside.read_text() == f"{SECRET} outside\n"


# -- listing and searching -------------------------------------------------------------------


async def test_ls_find_grep_hide_denied_files(session: Session, ws: Path) -> None:
    assert await call(session, "ls") == ("a.txt\nsub/", False)
    assert await call(session, "ls", path="sub") == ("b.txt", False)
    assert await call(session, "find", pattern="*") == ("a.txt\nsub/\nsub/b.txt", False)
    assert await call(session, "find", pattern="**/.env") == (
        "No files found matching pattern",
        False,
    )
    assert await call(session, "grep", pattern="TOKEN") == ("No matches found", False)
    assert await call(session, "grep", pattern=SECRET, context=1) == (
        f"a.txt-1- hello\na.txt:2: {SECRET} in a",
        False,
    )
    text, is_error = await call(session, "grep", pattern="TOKEN", path=".env")
    assert is_error and SECRET not in text


async def test_grep_and_find_outside_the_roots_are_refused(session: Session, ws: Path) -> None:
    text, is_error = await call(session, "grep", pattern=SECRET, path=str(ws.parent / "outside"))
    assert is_error and SECRET not in text
    text, is_error = await call(session, "find", pattern="*", path=str(ws.parent))
    assert is_error and "secret.txt" not in text


async def test_anchored_and_absolute_patterns_are_filtered_from_search(
    plugin_manager: Any, register_plugin: Any, ws: Path
) -> None:
    (ws / "config").mkdir()
    (ws / "config" / "keys.json").write_text(f"{SECRET}\n")
    (ws / "sub" / "config").mkdir()
    (ws / "sub" / "config" / "keys.json").write_text(f"{SECRET} allowed\n")
    register_plugin(builtin_plugin, name="builtin_tools")
    policy = PathPolicy(str(ws), deny_paths=[".env", "config/keys.json", f"{ws}/sub/b.txt"])
    register_plugin(GuardPlugin(policy), name="guard")
    session = build_session(plugin_manager, ws)
    assert await call(session, "grep", pattern=SECRET) == (
        f"a.txt:2: {SECRET} in a\nsub/config/keys.json:1: {SECRET} allowed",
        False,
    )
    assert await call(session, "find", pattern="**/*.json") == ("sub/config/keys.json", False)
    assert await call(session, "find", pattern="*.txt", path="sub") == (
        "No files found matching pattern",
        False,
    )


# -- pi's own full-output files --------------------------------------------------------------


async def test_full_output_file_of_bash_is_readable(session: Session) -> None:
    text, is_error = await call(session, "bash", command="seq 1 5000")
    assert not is_error
    found = re.search(r"Full output: (/\S+/pi-bash-[0-9a-f]{16}\.log)", text)
    assert found is not None, text
    full = found.group(1)
    text, is_error = await call(session, "read", path=full, offset=4999)
    assert (text, is_error) == ("4999\n5000\n", False)


# -- the wrapper alone -----------------------------------------------------------------------


async def test_guard_raises_path_denied_naming_the_requested_path(ws: Path) -> None:
    guard = GuardedFileOperations(LocalFileOperations(), PathPolicy(str(ws), deny_paths=[".env"]))
    (ws / "x").symlink_to("/etc/passwd")
    with pytest.raises(PathDenied) as caught:
        await guard.read_bytes(str(ws / "x"))
    assert (caught.value.errno, caught.value.filename, caught.value.reason) == (
        13,
        str(ws / "x"),
        f"Reading '{ws}/x' (resolved: '/etc/passwd') is not allowed by the sandbox path "
        f"policy: it is outside the allowed read_roots ({ws})",
    )
    assert await guard.read_bytes(str(ws / "a.txt"), 0, 5) == b"hello"
    assert sorted(await guard.list_dir(str(ws))) == ["a.txt", "sub", "x"]
    with pytest.raises(PathDenied):
        await guard.mkdir(str(ws / "x" / "d"))
    with pytest.raises(FileNotFoundError) as missing:
        await guard.read_bytes(str(ws / "nope"))
    assert missing.value.filename == str(ws / "nope")


# -- the one-hop head read over a backend of shell scripts ------------------------------------


class HostShellFiles(ShellFileOperations):
    """:class:`ShellFileOperations` whose scripts run in this machine's ``bash`` (real
    processes), counted in ``scripts``."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts = 0

    async def run_script(
        self, script: str, args: Sequence[str], *, stdin: bytes | None = None
    ) -> CommandOutput:
        self.scripts += 1
        done = await trio.run_process(
            ["bash", "-c", script, "pi-files", *args],
            stdin=stdin or b"",
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
        return CommandOutput(done.returncode, done.stdout, done.stderr)


async def _read_text(ops: Any, path: str, cwd: str) -> str:
    try:
        result = await read_file(path, cwd, ops)
    except ToolError as error:
        return f"error: {error}"
    return "".join(getattr(part, "text", "") for part in result.content)


async def test_guarded_head_reads_give_the_checked_results(ws: Path) -> None:
    """Over a backend of shell scripts the read tool gives, through the guard, what the checked
    ``stat`` and ``read_bytes`` of the local backend give: in one script per read when the
    policy restricts no read, the checked way when it does (a one-hop read would open a denied
    file before the policy saw where its name leads)."""
    outside = ws.parent / "outside"
    (ws / "link-out").symlink_to(outside / "secret.txt")
    (ws / "link-env").symlink_to(ws / ".env")
    (ws / "link-in").symlink_to(ws / "sub" / "b.txt")
    (ws / "dangling").symlink_to(outside / "gone")
    (ws / "a b.txt").write_text("spaced\n")
    os.mkfifo(ws / "fifo")
    names = [
        "a.txt", ".env", "sub/.env", "link-out", "link-env", "link-in", "dangling", "nope",
        "sub", "fifo", "a.txt/x", "../outside/secret.txt", "../outside/gone", "a\u00a0b.txt",
    ]  # fmt: skip
    scripts: dict[str, list[int]] = {}
    for label, policy in (
        ("restricted", PathPolicy(str(ws), deny_paths=[".env"])),
        ("unrestricted", PathPolicy(str(ws), read_roots=["/"])),
    ):
        shell = HostShellFiles()
        fast = GuardedFileOperations(shell, policy)
        checked = GuardedFileOperations(LocalFileOperations(), policy)
        scripts[label] = []
        for name in names:
            before = shell.scripts
            got = await _read_text(fast, name, str(ws))
            scripts[label].append(shell.scripts - before)
            assert got == await _read_text(checked, name, str(ws)), (label, name)
        assert await _read_text(fast, "a.txt", str(ws)) == f"hello\n{SECRET} in a\n"
    assert await _read_text(
        GuardedFileOperations(HostShellFiles(), PathPolicy(str(ws), deny_paths=[".env"])),
        "link-env",
        str(ws),
    ) == (f"error: EACCES: permission denied, access '{ws}/link-env'")
    assert scripts["unrestricted"] == [1] * len(names)
    assert scripts["restricted"][0] > 1  # a.txt: resolved and judged before it is read


async def _stat_outcome(ops: Any, path: str) -> Any:
    try:
        return await ops.stat(path)
    except OSError as error:
        return type(error).__name__, error.errno, error.strerror, error.filename


async def test_guarded_stat_is_one_script_with_the_checked_results(ws: Path) -> None:
    """Over a backend with ``stat_probed`` the guard judges the resolved path the one script
    reported before it gives the ``stat``: what the checked ``realpath`` and ``stat`` give."""
    outside = ws.parent / "outside"
    (ws / "link-out").symlink_to(outside / "secret.txt")
    (ws / "link-env").symlink_to(ws / ".env")
    (ws / "dangling").symlink_to(outside / "gone")
    policy = PathPolicy(str(ws), deny_paths=[".env"])
    shell = HostShellFiles()
    fast = GuardedFileOperations(shell, policy)
    checked = GuardedFileOperations(LocalFileOperations(), policy)
    names = ["a.txt", ".env", "link-out", "link-env", "dangling", "nope", "sub", "a.txt/x"]
    outcomes = []
    for name in names:
        path = str(ws / name)
        got = await _stat_outcome(fast, path)
        assert got == await _stat_outcome(checked, path), name
        outcomes.append(got if isinstance(got, tuple) else got.kind)
    assert outcomes[:3] == [
        "file",
        ("PathDenied", 13, f"Reading '{ws}/.env' is denied by the sandbox path policy "
         "(deny_paths pattern '.env')", f"{ws}/.env"),
        ("PathDenied", 13, f"Reading '{ws}/link-out' (resolved: '{outside}/secret.txt') is "
         f"not allowed by the sandbox path policy: it is outside the allowed read_roots ({ws})",
         f"{ws}/link-out"),
    ]  # fmt: skip
    assert shell.scripts == len(names)


async def test_a_subclass_that_reads_its_own_way_gets_no_one_hop_read(ws: Path) -> None:
    class Masked(HostShellFiles):
        async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
            raise PermissionError(13, "masked", path)

    masked = Masked()
    assert await masked.read_head("a.txt", str(ws), whole_limit=100, head_size=10) is None
    guard = GuardedFileOperations(masked, PathPolicy(str(ws), deny_paths=[".env"]))
    assert await guard.read_head("a.txt", str(ws), whole_limit=100, head_size=10) is None
    assert masked.scripts == 0
    assert await _read_text(guard, "a.txt", str(ws)) == (
        f"error: EACCES: permission denied, access '{ws}/a.txt'"
    )


async def test_guarded_count_newlines_only_when_no_read_is_restricted(ws: Path) -> None:
    """The rest of a large file is counted by the wrapped backend only when the policy
    restricts no read; otherwise ``None``, and the read tool reads the rest through the
    checked ``read_bytes``."""
    (ws / "outside-link").symlink_to(ws.parent / "outside" / "secret.txt")
    unrestricted = GuardedFileOperations(
        LocalFileOperations(), PathPolicy(str(ws), read_roots=["/"])
    )
    restricted = GuardedFileOperations(
        LocalFileOperations(), PathPolicy(str(ws), deny_paths=[".env"])
    )
    assert await unrestricted.count_newlines(str(ws / "a.txt"), 2) == (23, 2, ord("\n"))
    assert await restricted.count_newlines(str(ws / "a.txt"), 2) is None
    assert await restricted.count_newlines(str(ws / "outside-link"), 0) is None
