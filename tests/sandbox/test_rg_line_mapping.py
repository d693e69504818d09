"""grep's ``rg --null --line-number`` records through the remote path map and the guard.

grep reads ripgrep's plain ``PATH\\0LINE:TEXT`` records (``docs/reference/tools.md``, "Memory
bounds"); the ssh and container backends map each record's remote file name back, and the
guarded backend drops the records (and ripgrep's own notices) of refused files.
"""

from __future__ import annotations

from pathlib import Path

from pi_core.backends import LocalFileOperations, iter_rg_records
from pi_sandbox_plugin.backends.ssh import RemotePathMap
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations
from pi_sandbox_plugin.policies.path_policy import PathPolicy

ARGS = ["--line-number", "--with-filename", "--null", "--no-heading", "--", "x", "/srv/work"]


def test_every_record_name_maps_back() -> None:
    stdout = (
        b"/srv/work/a.txt\x001:x one\n/srv/work/a.txt\x002:x: /srv/work/z\n"
        b"/srv/work/b\nc.txt\x007:x\n"
        b'/srv/work/d.bin: WARNING: stopped searching binary file after match (found "\\0" '
        b"byte around offset 9)\n/srv/workshop/e\x001:x\n"
    )
    mapped = RemotePathMap("/home/me/proj", "/srv/work").rg_output_to_local(stdout, ARGS)
    assert mapped == (
        b"/home/me/proj/a.txt\x001:x one\n/home/me/proj/a.txt\x002:x: /srv/work/z\n"
        b"/home/me/proj/b\nc.txt\x007:x\n"
        b'/home/me/proj/d.bin: WARNING: stopped searching binary file after match (found "\\0" '
        b"byte around offset 9)\n/srv/workshop/e\x001:x\n"
    )
    records = [(r.path, r.line_number, r.text) for r in iter_rg_records(mapped)]
    assert records == [
        (b"/home/me/proj/a.txt", 1, b"x one"),
        (b"/home/me/proj/a.txt", 2, b"x: /srv/work/z"),
        (b"/home/me/proj/b\nc.txt", 7, b"x"),
        (None, None, None),
        (b"/srv/workshop/e", 1, b"x"),
    ]


async def test_the_guard_drops_refused_records_and_notices(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("x fine\n")
    (tmp_path / "secret.txt").write_text("x hidden\n")
    (tmp_path / "bin.dat").write_bytes(b"x first\n" + b"z" * 100_000 + b"\n\0\n")
    guard = GuardedFileOperations(
        LocalFileOperations(), PathPolicy(str(tmp_path), deny_paths=[f"{tmp_path}/secret.txt"])
    )
    output = await guard.run_rg(["--sort=path", *ARGS[:-1], str(tmp_path)], str(tmp_path))
    assert output.stdout == (
        f"{tmp_path}/bin.dat\x001:x first\n{tmp_path}/ok.txt\x001:x fine\n".encode()
    )
