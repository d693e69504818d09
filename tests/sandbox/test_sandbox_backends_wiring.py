"""The sandbox plugin's wiring (issue 6 items 4-7): ``[sandbox]`` + session cwd → the backends
(``pi_bash_operations``/``pi_file_operations``), the path checks of the before-hook, and
``pi replay`` under a ``pi.toml``. Without ``[sandbox]`` the plugin changes nothing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from replay_support import call, replay, texts, tool_call

import pi_builtin_tools.plugin as builtin_plugin
import pi_sandbox_plugin.plugin as sandbox_plugin
from pi_builtin_tools.shell.local import LocalBashOperations
from pi_core._backend_kit.local_files import LocalFileOperations
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.pipeline import run_tool_call
from pi_core._plugins.manager import PiPluginManager
from pi_core._plugins.session import Session, build_session
from pi_core._wire.messages import ToolCall
from pi_sandbox_plugin.backends.bwrap import BwrapBackend
from pi_sandbox_plugin.backends.container import ContainerBackend
from pi_sandbox_plugin.backends.ssh import SshBashOperations, SshFileOperations
from pi_sandbox_plugin.backends.wiring import MappedBashOperations, MappedFileOperations
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations

SECRET = "TOP-SECRET-42"


def make_workspace(ws: Path) -> Path:
    if ws.exists():
        shutil.rmtree(ws)
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text(f"hello\n{SECRET} in a\n")
    (ws / ".env").write_text(f"TOKEN={SECRET}\n")
    (ws / "sub" / ".env").write_text(f"TOKEN={SECRET}\n")
    (ws / "sub" / "b.txt").write_text("bee\n")
    return ws


def session_of(ws: Path, config: dict[str, Any], *, sandbox: bool = True) -> Session:
    pm = PiPluginManager()
    pm.register(builtin_plugin, name="builtin_tools")
    if sandbox:
        pm.register(sandbox_plugin, name="sandbox")
    return build_session(pm, ws, config)


async def assert_full_output_readable(session: Session) -> None:
    """bash's full-output file (written by pi on this machine) is readable with the read tool."""
    text, is_error = await call(session, "bash", command="seq 1 5000")
    found = re.search(r"Full output: (/\S+/pi-bash-[0-9a-f]{16}\.log)", text)
    assert found is not None and not is_error, text
    assert await call(session, "read", path=found.group(1), offset=4999) == (
        "4999\n5000\n",
        False,
    )


SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("read", {"path": "a.txt"}),
    ("read", {"path": ".env"}),
    ("read", {"path": "/etc/hostname"}),
    ("read", {"path": "missing.txt"}),
    ("write", {"path": "new/f.txt", "content": "x\n"}),
    ("edit", {"path": "a.txt", "edits": [{"oldText": "hello", "newText": "bye"}]}),
    ("ls", {}),
    ("ls", {"path": "sub"}),
    ("find", {"pattern": "**/.env"}),
    ("find", {"pattern": "*"}),
    ("grep", {"pattern": "TOKEN"}),
    ("grep", {"pattern": "bee", "path": "sub/b.txt"}),
    ("bash", {"command": "cat .env; ln -s /etc/hostname h"}),
    ("read", {"path": "h"}),
]


async def run_script(ws: Path, config: dict[str, Any], *, sandbox: bool) -> list[Any]:
    make_workspace(ws)
    session = session_of(ws, config, sandbox=sandbox)
    results = []
    for name, args in SCRIPT:
        outcome = await run_tool_call(
            ToolCall(id="c1", name=name, arguments=args),
            AgentContext(tools=session.tools),
            session.loop_config(),
        )
        result = outcome.result.to_json_dict() | {"isError": outcome.is_error}
        structured = result.get("structuredContent")
        if isinstance(structured, dict) and "wall_time_seconds" in structured:
            assert isinstance(structured["wall_time_seconds"], float)
            structured["wall_time_seconds"] = "(timed)"  # a clock reading, not a result
        results.append(result)
    return results


# -- without [sandbox] (or without a policy on the local backend): nothing changes ------------


@pytest.mark.parametrize(
    "config", [{}, {"other": {"x": 1}}, {"sandbox": {"backend": "local"}}], ids=str
)
async def test_without_a_path_policy_the_tools_give_identical_results(
    tmp_path: Path, config: dict[str, Any]
) -> None:
    ws = tmp_path / "ws"
    without = await run_script(ws, config, sandbox=False)
    with_plugin = await run_script(ws, config, sandbox=True)
    assert with_plugin == without
    assert without[1]["content"] == [{"type": "text", "text": f"TOKEN={SECRET}\n"}]
    session = session_of(ws, config)
    assert type(session.bash_operations) is LocalBashOperations
    files = session.file_operations
    if "sandbox" not in config:
        assert type(files) is LocalFileOperations
    else:  # pi's own files are kept from the agent: the only thing this guard refuses
        assert isinstance(files, GuardedFileOperations)
        assert type(files.inner) is LocalFileOperations
        assert (files.policy.read_roots, files.policy.write_roots) == (("/",), ("/",))
        assert (files.policy.deny_patterns, files.policy.protected) == ((), {})
        # no read is restricted: the local backend's one-hop read stays (P1's cost)
        head = await files.read_head("a.txt", str(ws), whole_limit=1 << 20, head_size=4096)
        assert head is not None and head[2] == (ws / "a.txt").read_bytes()


# -- local backend with a policy --------------------------------------------------------------

POLICY = {"sandbox": {"policy": {"deny_paths": [".env"]}}}


async def test_local_policy_guards_the_file_tools_and_the_before_hook_explains(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path / "ws")
    session = session_of(ws, POLICY)
    assert type(session.bash_operations) is LocalBashOperations
    files = session.file_operations
    assert isinstance(files, GuardedFileOperations) and type(files.inner) is LocalFileOperations
    assert await call(session, "read", path="/etc/hostname") == (
        "Reading '/etc/hostname' is not allowed by the sandbox path policy: it is outside the "
        f"allowed read_roots ({ws})",
        True,
    )
    assert await call(session, "read", path=".env") == (
        f"Reading '{ws}/.env' is denied by the sandbox path policy (deny_paths pattern '.env')",
        True,
    )
    assert await call(session, "write", path="../escape.txt", content="x") == (
        f"Writing '{tmp_path}/escape.txt' is not allowed by the sandbox path policy: it is "
        f"outside the allowed write_roots ({ws})",
        True,
    )
    assert await call(session, "grep", pattern="TOKEN", path="sub/.env") == (
        f"Reading '{ws}/sub/.env' is denied by the sandbox path policy (deny_paths pattern '.env')",
        True,
    )
    assert await call(session, "bash", command="ln -s /etc/hostname h") == ("(no output)", False)
    assert await call(session, "read", path="h") == (
        f"Reading '{ws}/h' (resolved: '/etc/hostname') is not allowed by the sandbox path "
        f"policy: it is outside the allowed read_roots ({ws})",
        True,
    )
    assert await call(session, "edit", path="h", edits=[{"oldText": "a", "newText": "b"}]) == (
        f"Reading '{ws}/h' (resolved: '/etc/hostname') is not allowed by the sandbox path "
        f"policy: it is outside the allowed read_roots ({ws})",
        True,
    )
    assert await call(session, "find", pattern="*") == (
        "a.txt\nsub/\nsub/b.txt",
        False,
    )  # rg lists no links
    assert await call(session, "read", path="a.txt") == (f"hello\n{SECRET} in a\n", False)
    await assert_full_output_readable(session)


async def test_read_roots_and_write_roots_from_the_config(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "d.md").write_text("doc\n")
    config = {"sandbox": {"policy": {"read_roots": [".", "../docs"], "write_roots": ["sub"]}}}
    session = session_of(ws, config)
    assert await call(session, "read", path="../docs/d.md") == ("doc\n", False)
    assert await call(session, "write", path="sub/ok.txt", content="ok") == (
        "Successfully wrote to sub/ok.txt",
        False,
    )
    assert await call(session, "write", path="top.txt", content="no") == (
        f"Writing '{ws}/top.txt' is not allowed by the sandbox path policy: it is outside the "
        f"allowed write_roots ({ws}/sub)",
        True,
    )
    assert not (ws / "top.txt").exists()


# -- bwrap ----------------------------------------------------------------------------------


async def test_bwrap_backend_masks_denied_paths_from_bash(tmp_path: Path, bwrap_ok: None) -> None:
    ws = make_workspace(tmp_path / "ws")
    config = {"sandbox": {"backend": "bwrap", "policy": {"deny_paths": [".env"]}}}
    session = session_of(ws, config)
    bash = session.bash_operations
    assert isinstance(bash, BwrapBackend)
    bash.sandbox_args()  # the masks are found when a sandbox starts
    assert sorted(bash.deny_paths) == [str(ws / ".env"), str(ws / "sub" / ".env")]
    files = session.file_operations
    assert isinstance(files, GuardedFileOperations) and files.inner is bash
    text, is_error = await call(session, "bash", command="cat .env sub/.env; echo rc=$?")
    assert (SECRET in text, text.endswith("rc=1\n"), is_error) == (False, True, False)
    assert await call(session, "bash", command="echo hi > made.txt; cat made.txt") == (
        "hi\n",
        False,
    )
    assert await call(session, "read", path="made.txt") == ("hi\n", False)
    assert await call(session, "grep", pattern=SECRET) == (f"a.txt:2: {SECRET} in a", False)
    assert (await call(session, "read", path=".env"))[1] is True
    await assert_full_output_readable(session)


async def test_bwrap_without_a_policy_only_protects_pis_files(
    tmp_path: Path, bwrap_ok: None
) -> None:
    ws = make_workspace(tmp_path / "ws")
    session = session_of(ws, {"sandbox": {"backend": "bwrap", "bwrap": {"network": False}}})
    assert isinstance(session.bash_operations, BwrapBackend)
    files = session.file_operations
    assert isinstance(files, GuardedFileOperations) and files.inner is session.bash_operations
    assert (files.policy.deny_patterns, files.policy.protected) == ((), {})
    assert session.bash_operations.deny_paths == []
    assert await call(session, "read", path=".env") == (f"TOKEN={SECRET}\n", False)


# -- ssh ------------------------------------------------------------------------------------


async def test_ssh_backend_runs_in_remote_cwd_with_the_policy(
    tmp_path: Path, ssh_server: Any
) -> None:
    remote = make_workspace(tmp_path / "remote")
    local = tmp_path / "local"  # the session's cwd; it maps to remote_cwd
    local.mkdir()
    conn = ssh_server.connection()
    config = {
        "sandbox": {
            "backend": "ssh",
            "ssh": {
                "host": conn.host,
                "port": conn.port,
                "user": conn.user,
                "identity_file": conn.identity_file,
                "remote_cwd": str(remote),
                "options": list(conn.options),
            },
            "policy": {"deny_paths": [".env"]},
        }
    }
    session = session_of(local, config)
    bash = session.bash_operations
    files = session.file_operations
    assert isinstance(bash, SshBashOperations)
    assert isinstance(files, GuardedFileOperations) and isinstance(files.inner, SshFileOperations)
    assert files.inner.connection is bash.connection
    try:
        assert await call(session, "bash", command="pwd") == (f"{remote}\n", False)
        assert await call(session, "read", path="a.txt") == (f"hello\n{SECRET} in a\n", False)
        assert await call(session, "write", path="w.txt", content="ok") == (
            "Successfully wrote to w.txt",
            False,
        )
        assert (remote / "w.txt").read_text() == "ok"
        assert await call(session, "grep", pattern="TOKEN|bee") == ("sub/b.txt:1: bee", False)
        assert await call(session, "bash", command=f"ln -s {tmp_path}/outside.txt x") == (
            "(no output)",
            False,
        )
        (tmp_path / "outside.txt").write_text(SECRET)
        text, is_error = await call(session, "read", path="x")
        assert (is_error, SECRET in text) == (True, False)
        assert await call(session, "read", path=".env") == (
            f"Reading '{local}/.env' is denied by the sandbox path policy (deny_paths pattern "
            "'.env')",
            True,
        )
        await assert_full_output_readable(session)
    finally:
        await bash.connection.aclose()


# -- container (objects and path mapping; the real container is test_container_backend's) -----


def test_container_backend_maps_the_session_cwd_to_workdir(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    config = {
        "sandbox": {
            "backend": "container",
            "container": {"cli": "podman", "container": "dev-box", "workdir": "/work"},
        }
    }
    session = session_of(ws, config)
    bash, guard = session.bash_operations, session.file_operations
    assert isinstance(guard, GuardedFileOperations)  # pi's own files are kept from the agent
    files = guard.inner
    assert isinstance(bash, MappedBashOperations) and isinstance(files, MappedFileOperations)
    assert isinstance(bash.inner, ContainerBackend) and bash.inner is files.inner
    assert bash.inner.container == "dev-box"
    assert files.paths.to_remote(str(ws / "sub" / "b.txt")) == "/work/sub/b.txt"
    assert files.paths.to_local("/work/sub") == str(ws / "sub")
    assert files.paths.to_remote("/etc/passwd") == "/etc/passwd"


# -- pi replay under a pi.toml ------------------------------------------------------------------


def test_pi_replay_with_a_sandbox_policy(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    outside = tmp_path / "outside.txt"
    outside.write_text(f"{SECRET} outside\n")
    (ws / "pi.toml").write_text('[sandbox.policy]\ndeny_paths = [".env", "pi.toml"]\n')
    results = texts(
        replay(
            ws,
            [
                [
                    tool_call("p1", "bash", command=f"ln -s {outside} x"),
                    tool_call("p2", "read", path="x"),
                    tool_call("p3", "grep", pattern="TOP-SECRET|TOKEN"),
                ],
                [
                    tool_call("s1", "read", path="x"),
                    tool_call("s2", "write", path="x", content="pwned"),
                    tool_call("s3", "edit", path="x", edits=[{"oldText": "T", "newText": "p"}]),
                    tool_call("s4", "read", path=".env"),
                    tool_call("s5", "find", pattern="**/.env"),
                    tool_call("s6", "ls"),
                ],
            ],
            tmp_path,
        )
    )
    outside_reason = (
        f"Reading '{ws}/x' (resolved: '{outside}') is not allowed by the sandbox path policy: "
        f"it is outside the allowed read_roots ({ws})"
    )
    assert results["p1"] == ("(no output)", False)
    assert results["p2"][1] is True and SECRET not in results["p2"][0], results["p2"]
    assert results["p3"] == (f"a.txt:2: {SECRET} in a", False)
    assert results["s1"] == (outside_reason, True)
    assert results["s2"] == (
        f"Writing '{ws}/x' (resolved: '{outside}') is not allowed by the sandbox path policy: "
        f"it is outside the allowed write_roots ({ws})",
        True,
    )
    assert results["s3"] == (outside_reason, True)
    assert results["s4"] == (
        f"Reading '{ws}/.env' is denied by the sandbox path policy (deny_paths pattern '.env')",
        True,
    )
    assert results["s5"] == ("No files found matching pattern", False)
    assert results["s6"] == ("a.txt\nsub/", False)  # x: its stat is refused, ls skips it
    assert outside.read_text() == f"{SECRET} outside\n"


def test_pi_replay_without_sandbox_is_unchanged(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    (ws / "pi.toml").write_text('[pi]\ntool_execution = "sequential"\n')
    results = texts(
        replay(ws, [[tool_call("r1", "read", path=".env"), tool_call("r2", "ls")]], tmp_path)
    )
    assert results == {
        "r1": (f"TOKEN={SECRET}\n", False),
        "r2": (".env\na.txt\npi.toml\nsub/", False),
    }


# -- container, for real: started from an image, the workspace mounted at workdir ------------


async def test_container_backend_from_the_config(tmp_path: Path, podman: Any) -> None:
    podman_image = podman
    image = podman_image.image()
    ws = make_workspace(tmp_path / "ws")
    config = {
        "sandbox": {
            "backend": "container",
            "container": {
                "cli": podman_image.cli,
                "image": image,
                "workdir": "/work",
                "cli_args": podman_image.cli_args,
                "run_args": podman_image.run_args,
            },
            "policy": {"deny_paths": [".env"]},
        }
    }
    session = session_of(ws, config)
    files = session.file_operations
    assert isinstance(files, GuardedFileOperations)
    assert isinstance(files.inner, MappedFileOperations)
    container = files.inner.inner
    try:
        assert await call(session, "bash", command="pwd; cat a.txt") == (
            f"/work\nhello\n{SECRET} in a\n",
            False,
        )
        assert await call(session, "write", path="sub/new.txt", content="made\n") == (
            "Successfully wrote to sub/new.txt",
            False,
        )
        assert (ws / "sub" / "new.txt").read_text() == "made\n"
        assert await call(session, "read", path="sub/new.txt") == ("made\n", False)
        assert await call(session, "grep", pattern="TOKEN|made") == ("sub/new.txt:1: made", False)
        assert await call(session, "find", pattern="**/*.txt") == (
            "a.txt\nsub/b.txt\nsub/new.txt",
            False,
        )
        assert await call(session, "ls", path="sub") == ("b.txt\nnew.txt", False)
        assert await call(session, "bash", command="ln -s /etc/hostname x") == (
            "(no output)",
            False,
        )
        text, is_error = await call(session, "read", path="x")
        assert is_error, text
        assert await call(session, "read", path=".env") == (
            f"Reading '{ws}/.env' is denied by the sandbox path policy (deny_paths pattern '.env')",
            True,
        )
        await assert_full_output_readable(session)
    finally:
        await container.aclose()


def test_a_bad_deny_pattern_is_a_config_error(tmp_path: Path) -> None:
    from pi_core._errors import ConfigError

    config = {"sandbox": {"policy": {"deny_paths": [".env", "\\"]}}}
    with pytest.raises(ConfigError) as caught:
        session_of(tmp_path, config)
    assert str(caught.value) == (
        "pi.toml: sandbox.policy.deny_paths[1]: bad denied path pattern '\\\\': "
        "Invalid git pattern: '\\\\'"
    )


async def test_one_config_object_in_two_cwds_keeps_the_guard(tmp_path: Path) -> None:
    """Each session keeps its own objects in its ``state``, so the before-hook of each knows
    its cwd and explains the refusal (no cache keyed by the config object)."""
    first = make_workspace(tmp_path / "one")
    second = make_workspace(tmp_path / "two")
    config = {"sandbox": {"policy": {"deny_paths": [".env"]}}}
    session_one = session_of(first, config)
    session_two = session_of(second, config)
    assert session_one.file_operations is not session_two.file_operations
    assert await call(session_two, "read", path="a.txt") == (f"hello\n{SECRET} in a\n", False)
    assert await call(session_one, "read", path=f"{second}/a.txt") == (
        f"Reading '{second}/a.txt' is not allowed by the sandbox path policy: it is outside "
        f"the allowed read_roots ({first})",
        True,
    )
    assert await call(session_two, "read", path=".env") == (
        f"Reading '{second}/.env' is denied by the sandbox path policy (deny_paths pattern '.env')",
        True,
    )


def test_pi_replay_with_bwrap_missing_fails_every_call_with_the_reason(tmp_path: Path) -> None:
    """Issue 6 item 5: no bubblewrap → every tool call is an error result naming the reason;
    nothing runs unsandboxed."""
    ws = make_workspace(tmp_path / "ws")
    (ws / "pi.toml").write_text(
        '[sandbox]\nbackend = "bwrap"\n[sandbox.bwrap]\nbwrap = "no-bwrap"\n'
    )
    reason = "bubblewrap (no-bwrap) is not installed: the bwrap sandbox cannot run"
    results = texts(
        replay(
            ws,
            [
                [
                    tool_call("b1", "bash", command="touch ran"),
                    tool_call("r1", "read", path="a.txt"),
                    tool_call("w1", "write", path="w.txt", content="x"),
                    tool_call("e1", "edit", path="a.txt", edits=[{"oldText": "h", "newText": "j"}]),
                    tool_call("l1", "ls"),
                    tool_call("f1", "find", pattern="*"),
                    tool_call("g1", "grep", pattern="hello"),
                ]
            ],
            tmp_path,
        )
    )
    assert results == {
        "b1": (reason, True),
        "r1": (reason, True),
        "w1": (reason, True),
        "e1": (reason, True),  # a backend's own error, not framed as a file error
        "l1": (reason, True),
        "f1": (reason, True),
        "g1": (reason, True),
    }
    assert not (ws / "ran").exists() and not (ws / "w.txt").exists()
    assert (ws / "a.txt").read_text() == f"hello\n{SECRET} in a\n"
