"""The ``find`` tool: files and directories whose name matches a glob (``docs/reference/tools.md``).

Pi runs ``fd --glob --hidden --no-require-git --max-results N -- PATTERN DIR``. fd is not
available where a remote backend's files are, so this tool asks ripgrep for the file list
(``rg --files --hidden --no-require-git``: the same ``ignore`` crate, so ``.gitignore``,
``.ignore`` and ``.git/info/exclude`` are honoured hierarchically, even outside a git
repository, and hidden entries are included) and applies fd's glob semantics in Python
(:mod:`pi_builtin_tools.search.fd_glob`):

* leading ``./`` are dropped; a pattern without ``/`` matches the basename at any depth
  (``*.txt`` finds ``.secret/hidden.txt``); a pattern with ``/`` is matched from the start of
  the path relative to the search directory (Pi 1.6 anchors it at the search path:
  ``src/*.ts`` finds ``src/a.ts``, not ``pkg/src/b.ts``; ``**/src/*.ts`` finds both), an
  absolute one against the absolute path;
* matching is case-insensitive unless the pattern has an uppercase letter (fd's smart case;
  for an anchored pattern Pi decides on the pattern as given);
* directories match too and are printed with a trailing ``/``.

Deterministic order (where fd's is not): paths sorted component by component, a directory
just before its contents; the ``limit`` (default 1000; floored, at least 1, as in Pi 1.6) keeps
the first ones in that order, and the ``{L} results limit reached`` notice appears only when
more than ``limit`` results exist.

``rg --files`` lists files only: a directory is listed when it holds a listed file, or when
:mod:`pi_builtin_tools.search.find_dirs` finds it (empty directories, and directories whose files are
all ignored, that the ignore rules do not ignore themselves).

Known differences from fd: symbolic links are not listed (fd lists the link itself; following
links instead could walk whole trees outside the project); ripgrep reads ``.rgignore`` files
where fd reads ``.fdignore``. Like fd with ``--hidden``, ``.git/`` itself is not skipped.

Errors keep fd's wording, since the model learns from it: ``[fd error]: Search path '{abs}' is
not a directory.\\n[fd error]: No valid search paths given.`` and ``[fd error]: error parsing
glob '[': unclosed character class; missing ']'``.
"""

from __future__ import annotations

from typing import Any

from pi_builtin_tools.catalog.args import integer_arg
from pi_builtin_tools.files.fs_errors import check_no_nul, show_path
from pi_builtin_tools.files.truncate import DEFAULT_MAX_BYTES
from pi_builtin_tools.search.output import finish_listing
from pi_core import (
    AgentToolResult,
    FileOperations,
    OnUpdate,
    PathArgument,
    TextContent,
    ToolDefinition,
    ToolError,
    js_number_to_string,
)
from pi_core.backends import resolve_existing_path

DEFAULT_FIND_LIMIT = 1000

FIND_DESCRIPTION = (
    "Search for files by glob pattern. Returns matching file paths relative to the search "
    f"directory. Respects .gitignore. Output is truncated to {DEFAULT_FIND_LIMIT} results or "
    f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
)

FIND_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {
            "type": "string",
            "description": (
                "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without "
                "'/', e.g. '*.ts', it matches file names at any depth"
            ),
        },
        "path": {
            "type": "string",
            "description": "Directory to search in (default: current directory)",
        },
        "limit": {
            "type": "number",
            "description": f"Maximum number of results (default: {DEFAULT_FIND_LIMIT})",
        },
    },
}

RG_FILES_ARGS = ("--files", "--hidden", "--no-require-git", "--no-config", "--null")
"""ripgrep's file listing as find uses it (NUL-separated, so any file name survives)."""


async def find_files(
    operations: FileOperations, cwd: str, pattern: str, path: str | None, limit: float | None
) -> AgentToolResult:
    """Run ``find``: the result, or :class:`ToolError` with fd's message (or
    ``limit must be a positive integer, got Infinity``)."""
    effective_limit = (
        DEFAULT_FIND_LIMIT
        if limit is None
        else integer_arg("limit", limit, clamp_low=True, floor=True)
    )
    check_no_nul(path or "")
    search_path = await resolve_existing_path(path or ".", cwd, operations, for_read=False)
    try:
        is_dir = (await operations.stat(search_path)).kind == "directory"
    except OSError:
        is_dir = False
    if not is_dir:
        raise ToolError(
            f"[fd error]: Search path '{show_path(search_path)}' is not a directory.\n"
            "[fd error]: No valid search paths given."
        )
    from pi_builtin_tools.search.fd_glob import GlobError, compile_fd_glob  # on first use

    try:
        glob = compile_fd_glob(pattern, search_path)
    except GlobError as error:
        raise ToolError(f"[fd error]: {error}") from None

    try:
        output = await operations.run_rg([*RG_FILES_ARGS, "--", search_path], search_path)
    except OSError as error:
        raise ToolError(f"Failed to run ripgrep: {error}") from None
    # Exit 2 means some directory could not be read: fd hides such errors by default.
    if output.exit_code not in (0, 1, 2):
        stderr = output.stderr.decode("utf-8", "replace").strip()
        raise ToolError(stderr or f"ripgrep exited with code {output.exit_code}")

    root = search_path.rstrip("/")
    prefix = root + "/"
    rel_files = []
    for raw in output.stdout.split(b"\0"):
        if not raw:
            continue
        name = raw.decode("utf-8", "surrogateescape")
        rel_files.append(name[len(prefix) :] if name.startswith(prefix) else name)

    from pi_builtin_tools.search.find_dirs import directories_of, directories_without_files

    directories = directories_of(rel_files)
    directories.update(
        await directories_without_files(operations, search_path, rel_files, directories)
    )
    found = [(rel, "") for rel in rel_files if glob.matches(f"{root}/{rel}")]
    found += [(rel, "/") for rel in directories if glob.matches(f"{root}/{rel}")]
    # Component by component, so a directory comes just before its contents.
    found.sort(key=lambda entry: entry[0].split("/"))
    more = len(found) > effective_limit  # a notice only when a result was really cut off
    found = found[:effective_limit]
    results = [
        (rel + suffix).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        for rel, suffix in found
    ]

    if not results:
        return AgentToolResult(content=[TextContent(text="No files found matching pattern")])
    if not more:
        return finish_listing(results)
    return finish_listing(
        results,
        limit_notice=(
            f"{js_number_to_string(effective_limit)} results limit reached. "
            f"Use limit={js_number_to_string(effective_limit * 2)} for more, or refine pattern"
        ),
        limit_details={"resultLimitReached": effective_limit},
    )


def create_find_tool_definition(cwd: str, operations: FileOperations) -> ToolDefinition:
    """The ``find`` tool for a session in ``cwd`` doing its I/O through ``operations``.

    Parameters ``pattern`` (required), ``path`` (default the cwd), ``limit`` (default 1000);
    see :func:`find_files` and the module docstring.
    """

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None, ctx: Any
    ) -> AgentToolResult:
        return await find_files(
            operations, cwd, params["pattern"], params.get("path"), params.get("limit")
        )

    return ToolDefinition(
        name="find",
        label="find",
        description=FIND_DESCRIPTION,
        parameters=FIND_PARAMETERS,
        execute=execute,
        prompt_snippet="Find files by glob pattern (respects .gitignore)",
        verify="text",
        path_arguments=(PathArgument("path", read=True, default="."),),
        replay="safe",
    )


__all__ = ["DEFAULT_FIND_LIMIT", "create_find_tool_definition", "find_files"]
