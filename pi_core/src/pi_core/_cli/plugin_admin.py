"""``pi plugins install``, ``pi plugins uninstall`` and ``pi plugins new``.

``install`` and ``uninstall`` change the environment pi runs in (``sys.executable``'s) with the
installer pi was installed with, like ``llm install``: uv (``uv pip install --python
PYTHON``) when pi runs under ``uv run`` (``UV`` names the uv binary) or in a virtual
environment uv created (its ``pyvenv.cfg`` has a ``uv`` line), else pip (``PYTHON -m pip``).
The installer's output goes to stderr, sanitised; then each plugin that appeared, changed or
went is named on stdout. Neither command loads a plugin, so a broken one can be uninstalled.

``new`` writes a plugin distribution from the templates in ``plugin_template/``.
"""

from __future__ import annotations

import keyword
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from pi_core._backend_kit.local_files import find_program
from pi_core._cli.context import CommandContext
from pi_core._cli.parser import UsageError
from pi_core._cli.terminal import sanitise
from pi_core._errors import PiError
from pi_core._plugins.manager import (
    ENV_BLOCK,
    PI_DISTRIBUTIONS,
    disable_hint,
    installed_plugins,
    unknown_plugin,
)

Plugin = tuple[str, str | None, str | None]
"""``(name, distribution, version)`` of an installed plugin."""


# ---------------------------------------------------------------------------------------------
# The installer
# ---------------------------------------------------------------------------------------------


def _created_by_uv(prefix: str) -> bool:
    """Whether the virtual environment ``prefix`` was created by uv (``uv = VERSION`` in its
    ``pyvenv.cfg``)."""
    try:
        text = Path(prefix, "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.partition("=")[0].strip() == "uv" for line in text.splitlines())


@dataclass(frozen=True)
class Installer:
    """The installer of this environment: ``kind`` ``"uv"`` (``program`` is ``[UV]``) or
    ``"pip"`` (``[PYTHON, "-m", "pip"]``)."""

    kind: Literal["uv", "pip"]
    program: list[str]

    def command(self, action: Literal["install", "uninstall"], arguments: list[str]) -> list[str]:
        """``uv pip ACTION --python PYTHON ARGUMENTS`` or ``PYTHON -m pip ACTION [-y]
        ARGUMENTS``."""
        if self.kind == "uv":
            return [*self.program, "pip", action, "--python", sys.executable, *arguments]
        confirm = ["-y"] if action == "uninstall" else []
        return [*self.program, action, *confirm, *arguments]


def installer() -> Installer:
    """The installer pi was installed with: uv under ``uv run`` (``UV``) or in an environment
    uv created (when ``uv`` is on ``PATH``), else pip. Raises ``PiError`` when neither can be
    used."""
    uv = os.environ.get("UV", "")
    if uv and os.path.isfile(uv) and os.access(uv, os.X_OK):
        return Installer("uv", [uv])
    if _created_by_uv(sys.prefix):
        found = find_program("uv")
        if found is not None:
            return Installer("uv", [found])
    import importlib.util

    if importlib.util.find_spec("pip") is None:
        raise PiError(
            f"cannot install into {sys.prefix}: pip is not installed there and uv was not found "
            "(install uv, or run python -m ensurepip)"
        )
    return Installer("pip", [sys.executable, "-m", "pip"])


def _run(command: list[str], err: IO[str]) -> None:
    """Run the installer, its output (both streams) copied to ``err`` line by line."""
    err.write(f"pi: {' '.join(command)}\n")
    err.flush()
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            err.write(sanitise(line.decode("utf-8", "replace")))
            err.flush()
    if process.returncode != 0:
        raise PiError(f"the installer failed (exit status {process.returncode})")


def _changes(before: list[Plugin], after: list[Plugin]) -> tuple[list[Plugin], list[Plugin]]:
    """The plugins that appeared or changed, and those that went."""
    old, new = set(before), set(after)
    names = {name for name, _, _ in after}
    return [p for p in after if p not in old], [
        p for p in before if p not in new and p[0] not in names
    ]


def _described(plugin: Plugin) -> str:
    name, dist, version = plugin
    return f"{name} ({dist or '?'} {version or '?'})"


def _missing_path(spec: str, *, editable: bool) -> str | None:
    """What is wrong with a SPEC that names a local path (pip's rule: it holds a path separator
    or starts with ``.``; every ``-e PATH`` that is not a URL) that is not there, or None."""
    if "://" in spec or not (editable or os.sep in spec or spec.startswith(".")):
        return None
    path = Path(os.path.expanduser(spec))
    if not path.exists():
        return f"{'-e ' if editable else ''}{spec}: no such file or directory"
    if editable and not path.is_dir():
        return f"-e {spec}: not a directory (an editable install takes a project's folder)"
    return None


def cmd_install(ctx: CommandContext) -> int:
    """``pi plugins install [-U] [-e PATH]... [SPEC]...``. A local path that is not there is
    refused before the installer runs (one line, exit status 2)."""
    args = ctx.args
    if not args.specs and not args.editable:
        raise UsageError("pi plugins install: give at least one SPEC or -e PATH")
    for spec, editable in [*((p, True) for p in args.editable), *((s, False) for s in args.specs)]:
        problem = _missing_path(spec, editable=editable)
        if problem is not None:
            raise UsageError(f"pi plugins install: {problem}")
    arguments = [*(["--upgrade"] if args.upgrade else [])]
    for path in args.editable:
        arguments += ["--editable", path]
    arguments += args.specs
    before = installed_plugins()
    _run(installer().command("install", arguments), ctx.stderr)
    added, _ = _changes(before, installed_plugins())
    for plugin in added:
        ctx.stdout.write(sanitise(f"installed plugin {_described(plugin)}\n"))
    if not added:
        ctx.stderr.write("pi: no plugin was installed or changed\n")
    return 0


def cmd_uninstall(ctx: CommandContext) -> int:
    """``pi plugins uninstall NAME...``: NAME is a plugin's name or its distribution's."""
    before = installed_plugins()
    by_plugin = {name: dist for name, dist, _ in before if dist is not None}
    by_dist = {_normalised(dist): dist for dist in by_plugin.values()}
    dists: list[str] = []
    for name in ctx.args.names:
        dist = by_plugin.get(name) or by_dist.get(_normalised(name))
        if dist is None:
            raise UsageError(
                unknown_plugin("pi plugins uninstall", name, [n for n, _, _ in before])
            )
        if _normalised(dist) in {_normalised(d) for d in PI_DISTRIBUTIONS}:
            if name in by_plugin:
                way_out = f" ({dist}); {disable_hint(name, uninstall=False)}"
            else:
                plugins = [n for n, d in by_plugin.items() if d == dist]
                way_out = (
                    f"; disable its plugins with --no-plugin NAME or {ENV_BLOCK}=NAME,... "
                    f"({', '.join(plugins)})"
                )
            raise UsageError(f"pi plugins uninstall: {name} is part of pi{way_out}")
        if dist not in dists:
            dists.append(dist)
    _run(installer().command("uninstall", dists), ctx.stderr)
    _, removed = _changes(before, installed_plugins())
    for plugin in removed:
        ctx.stdout.write(sanitise(f"uninstalled plugin {_described(plugin)}\n"))
    return 0


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------------------------------------
# pi plugins new
# ---------------------------------------------------------------------------------------------

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_TAKEN = frozenset({"annotations", "hookimpl", "json", "plugin", "tool"})
"""Names the template's module already uses (the tool's function is named after the plugin)."""

TEMPLATE_FILES = (
    ("pyproject.toml.tmpl", "pyproject.toml"),
    ("README.md.tmpl", "README.md"),
    ("package_init.py.tmpl", "src/{package}/__init__.py"),
    ("plugin.py.tmpl", "src/{package}/plugin.py"),
    (None, "src/{package}/py.typed"),
    ("test_plugin.py.tmpl", "tests/test_plugin.py"),
)
"""The files ``pi plugins new`` writes: (template, path in the distribution)."""


def cmd_new(ctx: CommandContext) -> int:
    """``pi plugins new NAME [--dir DIR]``: the distribution ``pi-NAME`` in ``DIR/pi-NAME``."""
    import importlib.metadata
    import importlib.resources
    import string

    name = ctx.args.name
    if not _NAME.match(name) or keyword.iskeyword(name) or name in _TAKEN:
        raise UsageError(
            f"pi plugins new: {name!r} cannot name a plugin: use lower case letters, digits "
            "and _, starting with a letter (not a Python keyword or one of "
            f"{', '.join(sorted(_TAKEN))})"
        )
    if name in {plugin for plugin, _, _ in installed_plugins()}:
        raise UsageError(f"pi plugins new: a plugin named {name!r} is already installed")
    parent = Path(ctx.args.dir)
    if not parent.is_dir():
        raise UsageError(f"--dir {ctx.args.dir}: no such directory")
    distribution = "pi-" + name.replace("_", "-")
    package = "pi_" + name
    root = parent / distribution
    if root.exists():
        raise UsageError(f"pi plugins new: {root} already exists")
    values = {
        "name": name,
        "distribution": distribution,
        "package": package,
        "pi_version": importlib.metadata.version("pi-tool-core"),
    }
    templates = importlib.resources.files("pi_core._cli") / "plugin_template"
    written = []
    for template, target in TEMPLATE_FILES:
        path = root / target.format(package=package)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = ""
        if template is not None:
            text = string.Template((templates / template).read_text("utf-8")).substitute(values)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    out = ctx.stdout
    out.write(sanitise(f"created {root} (plugin {name}, distribution {distribution}):\n"))
    for path in written:
        out.write(sanitise(f"  {path}\n"))
    python = _python_from(root)
    out.write(
        sanitise(f"next:\n  pi plugins install -e {root}\n  cd {root} && {python} -m pytest\n")
    )
    return 0


def _python_from(root: Path) -> str:
    """The python of the environment pi runs in (where ``pi plugins install`` puts the plugin,
    with pi-tool-core), as a command run in ``root``: relative when that environment is inside
    the working directory (a project's ``.venv``: ``../.venv/bin/python``), else absolute. A
    plain ``python`` may be another interpreter, without pi."""
    import shlex

    executable = os.path.abspath(sys.executable)
    inside = executable.startswith(os.path.join(os.getcwd(), ""))
    path = os.path.relpath(executable, os.path.abspath(root)) if inside else executable
    return shlex.quote(path)


__all__ = ["TEMPLATE_FILES", "Installer", "cmd_install", "cmd_new", "cmd_uninstall", "installer"]
