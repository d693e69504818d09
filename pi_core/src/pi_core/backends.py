"""The kit backend plugins build on: what a bash or file backend implements and reuses.

A backend plugin (SSH, containers, bubblewrap, a cluster) implements :class:`BashOperations` and
:class:`FileOperations` and returns an instance from ``pi_bash_operations`` /
``pi_file_operations``; it depends on ``pi_core`` alone. The helpers here are the ones the
built-in and sandbox backends share:

* protocols and their value types: :class:`BashOperations`, :class:`FileOperations`,
  :class:`FileStat`, :class:`CommandOutput`, ``FileKind``;
* the local file backend :class:`LocalFileOperations`, :func:`find_rg` (the ripgrep binary),
  :func:`find_program` (a program on ``PATH``'s absolute folders),
  :func:`file_kind` (a ``st_mode`` as a ``FileKind``);
* :func:`atomic_write_bytes`: temporary file, fsync, rename;
* the file mutation queue: :func:`with_file_mutation_queue`,
  :func:`with_tool_path_mutation_queue`, :func:`run_shielded`, and its group commit
  (:func:`staged_file_content`, :func:`stage_file_write`);
* path resolution of the file tools: :func:`resolve_to_cwd`, :func:`resolve_existing_path`,
  :func:`path_candidates` (the names it tries, for a backend that tries them in one hop);
* ripgrep's plain match lines (``PATH\\0LINE:TEXT``, what grep reads): :func:`iter_rg_records`,
  :class:`RgRecord`;
* local processes: :func:`stream_process`, :func:`kill_process_group`,
  :func:`unwrap_exception_group`;
* errors: :class:`~pi_core.CommandTimeout`, :func:`missing_cwd_error`;
* commands longer than one ``argv`` element (128 KiB): :func:`command_fits_argv`,
  :func:`long_command_file`, :func:`sourcing_command` (run ``SHELL -c COMMAND`` when it fits,
  else ``SHELL -c ". /dev/fd/N"`` with the command in descriptor ``N``);
* a workspace as checkpoints read and restore it: :class:`WorkspaceTree` (what a backend's
  optional ``FileOperations.checkpoint_tree(root, exclude)`` returns), :class:`TreeEntry`,
  :class:`LocalWorkspaceTree` (a workspace on this machine);
* the command environment policy (``[env]``): :class:`EnvPolicy`, :func:`looks_secret` (what
  it drops by default), :func:`command_environment`
  (what a command starts from), :func:`remote_environment` (what an ssh or container backend
  sends: never this machine's environment).

The contract suites every backend must pass are in :mod:`pi_core.testing.bash_contract` and
:mod:`pi_core.testing.file_contract`.
"""

from __future__ import annotations

from pi_core._backend_kit.atomic import atomic_write_bytes
from pi_core._backend_kit.env_policy import (
    EnvPolicy,
    command_environment,
    looks_secret,
    remote_environment,
)
from pi_core._backend_kit.local_files import (
    LocalFileOperations,
    file_kind,
    find_program,
    find_rg,
    kill_process_group,
)
from pi_core._backend_kit.long_command import (
    command_fits_argv,
    long_command_file,
    sourcing_command,
)
from pi_core._backend_kit.mutation_queue import (
    run_shielded,
    stage_file_write,
    staged_file_content,
    with_file_mutation_queue,
    with_tool_path_mutation_queue,
)
from pi_core._backend_kit.operations import (
    BashOperations,
    CommandOutput,
    FileKind,
    FileOperations,
    FileStat,
)
from pi_core._backend_kit.paths import path_candidates, resolve_existing_path, resolve_to_cwd
from pi_core._backend_kit.process_stream import stream_process, unwrap_exception_group
from pi_core._backend_kit.rg_output import RgRecord, iter_rg_records
from pi_core._backend_kit.tree import LocalWorkspaceTree, TreeEntry, WorkspaceTree
from pi_core._errors import CommandTimeout, missing_cwd_error

__all__ = [
    "BashOperations",
    "CommandOutput",
    "CommandTimeout",
    "EnvPolicy",
    "FileKind",
    "FileOperations",
    "FileStat",
    "LocalFileOperations",
    "LocalWorkspaceTree",
    "RgRecord",
    "TreeEntry",
    "WorkspaceTree",
    "atomic_write_bytes",
    "command_environment",
    "command_fits_argv",
    "file_kind",
    "find_program",
    "find_rg",
    "iter_rg_records",
    "kill_process_group",
    "long_command_file",
    "looks_secret",
    "missing_cwd_error",
    "path_candidates",
    "remote_environment",
    "resolve_existing_path",
    "resolve_to_cwd",
    "run_shielded",
    "sourcing_command",
    "stage_file_write",
    "staged_file_content",
    "stream_process",
    "unwrap_exception_group",
    "with_file_mutation_queue",
    "with_tool_path_mutation_queue",
]
