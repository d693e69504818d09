"""The Starlark side of :mod:`pi_sandbox_plugin.interop.codex_rules`: evaluates Codex
``.rules`` files.

This module runs in a child process (``python -P _codex_starlark.py``) that
:func:`pi_sandbox_plugin.interop.codex_rules.load_codex_rules` starts, so that a hostile rules file
cannot take the memory or the time of pi itself: the child caps its address space
(``RLIMIT_AS``), cancels the evaluation at a deadline (``EvalOptions.check_cancelled``), bounds
the Starlark call stack, the number of rules and the size of what they hold. It imports only the
standard library and ``starlark`` (starlark-pyo3, the starlark-rust engine Codex uses).

Protocol: the child reads one JSON object from standard input, ``{"files": [{"text": ...}],
"limits": {...}}``, and writes JSON lines to standard output: ``{"start": i}`` before file ``i``,
then ``{"done": i, "calls": [...]}`` or ``{"error": i, "line": L | null, "problem": "..."}``
(and stops at the first error). Each call is a validated ``prefix_rule``, ``host_executable``
or ``network_rule`` with its ``line``.

The builtins check their arguments as Codex's ``execpolicy/src/parser.rs`` does (same checks,
same order); the messages are pi's, one line, prefixed with the builtin's name. The path and
shell-word helpers (:func:`rust_file_name`, :func:`absolutize`, :func:`split_example`) are
shared with :mod:`~pi_sandbox_plugin.interop.codex_rules`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

RULES_NAME = "<codex-rules>"
"""The file name the Starlark engine is given for a rules file (errors are mapped back)."""
PRELUDE_NAME = "<pi-prelude>"

PRELUDE = """\
def prefix_rule(*args, **kwargs):
    _pi_builtin("prefix_rule", call_stack(), args, kwargs)

def host_executable(*args, **kwargs):
    _pi_builtin("host_executable", call_stack(), args, kwargs)

def network_rule(*args, **kwargs):
    _pi_builtin("network_rule", call_stack(), args, kwargs)
"""
"""Evaluated first into each file's module: the builtins hand their call stack to Python, so a
rule knows the line of the ``prefix_rule(...)`` call (the innermost frame in the rules file)."""

DECISIONS = ("allow", "prompt", "forbidden")
PROTOCOLS = {
    "http": "http",
    "https": "https",
    "https_connect": "https",
    "http-connect": "https",
    "socks5_tcp": "socks5_tcp",
    "socks5_udp": "socks5_udp",
}

SIGNATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (parameters in positional order, required parameters) as in Codex's parser.rs
    "prefix_rule": (("pattern", "decision", "match", "not_match", "justification"), ("pattern",)),
    "host_executable": (("name", "paths"), ("name", "paths")),
    "network_rule": (
        ("host", "protocol", "decision", "justification"),
        ("host", "protocol", "decision"),
    ),
}


class RuleProblem(Exception):
    """A builtin rejected its arguments, or a cap was reached: ``problem`` (one line)."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


# ---------------------------------------------------------------------------------------------
# Helpers shared with codex_rules: paths as Rust's std::path and Codex's AbsolutePathBuf see them
# ---------------------------------------------------------------------------------------------


def rust_file_name(path: str) -> str | None:
    """``Path::new(path).file_name()`` of Rust: the last normal component (``/bin/ls/.`` ->
    ``ls``, ``git/`` -> ``git``), ``None`` for ``/``, ``.``, ``..`` or ``a/..``."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or parts[-1] == "..":
        return None
    return parts[-1]


def home_dir() -> str | None:
    """The home directory as Rust's ``dirs::home_dir`` finds it (``$HOME``, else the passwd
    entry)."""
    home = os.environ.get("HOME")
    if home:
        return home
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir or None
    except (ImportError, KeyError):
        return None


def absolutize(path: str, cwd: str, home: str | None) -> str:
    """``path`` made absolute the way Codex's ``AbsolutePathBuf`` does: ``~`` and ``~/...``
    expanded, a relative path joined to ``cwd``, then ``.``, ``..`` and repeated slashes removed
    lexically (``..`` stops at the root)."""
    if home is not None and path.startswith("~"):
        rest = path[1:]
        if rest == "":
            path = home
        elif rest.startswith("/"):
            path = home.rstrip("/") + "/" + rest.lstrip("/")
    if not path.startswith("/"):
        path = cwd.rstrip("/") + "/" + path
    stack: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if stack:
                stack.pop()
        else:
            stack.append(part)
    return "/" + "/".join(stack)


def split_example(text: str) -> list[str] | None:
    """Split an example command string as the Rust ``shlex`` crate Codex uses does: blanks
    separate words, ``#`` at the start of a word starts a comment to the end of the line,
    single quotes are literal, double quotes keep ``\\`` before ``$ ` " \\`` and newline only,
    a backslash outside quotes escapes the next character. ``None`` when the string is not
    valid (an unterminated quote, a trailing backslash)."""
    words: list[str] = []
    i = 0
    n = len(text)
    while True:
        while i < n and text[i] in " \t\n":
            i += 1
        if i >= n:
            return words
        if text[i] == "#":
            end = text.find("\n", i)
            if end < 0:
                return words
            i = end + 1
            continue
        word: list[str] = []
        while i < n and text[i] not in " \t\n":
            c = text[i]
            if c == "\\":
                if i + 1 >= n:
                    return None
                if text[i + 1] != "\n":
                    word.append(text[i + 1])
                i += 2
            elif c == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    return None
                word.append(text[i + 1 : end])
                i = end + 1
            elif c == '"':
                i += 1
                while True:
                    if i >= n:
                        return None
                    c = text[i]
                    if c == '"':
                        i += 1
                        break
                    if c == "\\":
                        if i + 1 >= n:
                            return None
                        e = text[i + 1]
                        if e in '$`"\\':
                            word.append(e)
                        elif e != "\n":
                            word.append("\\" + e)
                        i += 2
                    else:
                        word.append(c)
                        i += 1
            else:
                word.append(c)
                i += 1
        words.append("".join(word))


# ---------------------------------------------------------------------------------------------
# The builtins' argument checks (Codex parser.rs order)
# ---------------------------------------------------------------------------------------------


def type_name(value: object) -> str:
    """The Starlark name of a converted value's type (``string``, ``int``, ``NoneType``...)."""
    if value is None:
        return "NoneType"
    names = {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "dict"}
    return names.get(type(value), type(value).__name__)


def bind(name: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a call to builtin ``name`` by parameter name; unknown, repeated, missing
    or surplus arguments are a :class:`RuleProblem`."""
    params, required = SIGNATURES[name]
    if len(args) > len(params):
        raise RuleProblem(
            f"{name}: takes at most {len(params)} positional arguments ({len(args)} given)"
        )
    bound = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        if key not in params:
            raise RuleProblem(f"{name}: unknown argument {key}")
        if key in bound:
            raise RuleProblem(f"{name}: argument {key} given twice")
        bound[key] = value
    for key in required:
        if key not in bound:
            raise RuleProblem(f"{name}: missing argument {key}")
    return bound


def _typed(name: str, bound: dict[str, Any], param: str, expected: type, what: str) -> Any:
    value = bound.get(param)
    if param in bound and not (isinstance(value, expected) and not isinstance(value, bool)):
        raise RuleProblem(f"{name}: {param} must be {what} (got {type_name(value)})")
    return value


def _justification(name: str, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise RuleProblem(f"{name}: justification cannot be empty")
    return value


def _pattern(pattern: list[Any]) -> list[list[str]]:
    positions: list[list[str]] = []
    for element in pattern:
        if isinstance(element, str):
            positions.append([element])
        elif isinstance(element, list):
            for alt in element:
                if not isinstance(alt, str):
                    raise RuleProblem(
                        f"prefix_rule: pattern alternative must be a string (got {type_name(alt)})"
                    )
            if not element:
                raise RuleProblem("prefix_rule: pattern alternatives cannot be empty")
            positions.append(list(element))
        else:
            raise RuleProblem(
                "prefix_rule: pattern element must be a string or a list of strings "
                f"(got {type_name(element)})"
            )
    if not positions:
        raise RuleProblem("prefix_rule: pattern cannot be empty")
    return positions


def _examples(kind: str, examples: list[Any]) -> list[list[str]]:
    parsed: list[list[str]] = []
    for example in examples:
        if isinstance(example, str):
            tokens = split_example(example)
            if tokens is None:
                raise RuleProblem(
                    f"prefix_rule: {kind} example {json.dumps(example)} is not valid shell syntax"
                )
        elif isinstance(example, list):
            for token in example:
                if not isinstance(token, str):
                    raise RuleProblem(
                        f"prefix_rule: {kind} example tokens must be strings "
                        f"(got {type_name(token)})"
                    )
            tokens = list(example)
        else:
            raise RuleProblem(
                f"prefix_rule: {kind} example must be a string or a list of strings "
                f"(got {type_name(example)})"
            )
        if not tokens:
            raise RuleProblem(f"prefix_rule: {kind} example cannot be empty")
        parsed.append(tokens)
    return parsed


def prefix_rule(args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Check a ``prefix_rule(pattern, decision, match, not_match, justification)`` call."""
    name = "prefix_rule"
    bound = bind(name, args, kwargs)
    pattern = _typed(name, bound, "pattern", list, "a list")
    decision = _typed(name, bound, "decision", str, "a string")
    matches = _typed(name, bound, "match", list, "a list")
    not_matches = _typed(name, bound, "not_match", list, "a list")
    justification = _typed(name, bound, "justification", str, "a string")
    if decision is None:
        decision = "allow"
    elif decision not in DECISIONS:
        raise RuleProblem(f"{name}: decision must be allow, prompt or forbidden (got {decision})")
    justification = _justification(name, justification)
    positions = _pattern(pattern)
    return {
        "kind": name,
        "pattern": pattern,
        "positions": positions,
        "decision": decision,
        "justification": justification,
        "match": _examples("match", matches or []),
        "not_match": _examples("not_match", not_matches or []),
    }


def host_executable(args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Check a ``host_executable(name, paths)`` call; the paths come back absolute (``~/``
    expanded) and normalized."""
    builtin = "host_executable"
    bound = bind(builtin, args, kwargs)
    name = _typed(builtin, bound, "name", str, "a string")
    paths = _typed(builtin, bound, "paths", list, "a list")
    if not name:
        raise RuleProblem(f"{builtin}: name cannot be empty")
    if "/" in name or name in (".", ".."):
        raise RuleProblem(f"{builtin}: name must be a bare executable name (got {name})")
    home = home_dir()
    normalized: list[str] = []
    for raw in paths:
        if not isinstance(raw, str):
            raise RuleProblem(f"{builtin}: paths must be strings (got {type_name(raw)})")
        if not (raw.startswith("/") or (raw.startswith("~/") and home is not None)):
            raise RuleProblem(f"{builtin}: paths must be absolute or start with ~/ (got {raw})")
        path = absolutize(raw, "/", home)
        if rust_file_name(path) != name:
            raise RuleProblem(f"{builtin}: path {raw} must have basename {name}")
        if path not in normalized:
            normalized.append(path)
    return {"kind": builtin, "name": name, "paths": normalized}


def normalize_host(raw: str) -> str:
    """A ``network_rule`` host as Codex's ``normalize_network_rule_host`` makes it: trimmed, a
    ``:port`` and brackets removed, trailing dots removed, lower case."""
    host = raw.strip()
    if not host:
        raise RuleProblem("network_rule: host cannot be empty")
    if "://" in host or any(c in host for c in "/?#"):
        raise RuleProblem(
            "network_rule: host must be a hostname or IP literal (without scheme or path)"
        )
    if host.startswith("["):
        inside, bracket, rest = host[1:].partition("]")
        if not bracket:
            raise RuleProblem("network_rule: host has an invalid bracketed IPv6 literal")
        port = rest[1:] if rest.startswith(":") else None
        port_ok = port is not None and port != "" and port.isascii() and port.isdigit()
        if rest and not port_ok:
            raise RuleProblem(f"network_rule: host contains an unsupported suffix: {raw}")
        host = inside
    elif host.count(":") == 1:
        candidate, _, port = host.rpartition(":")
        if candidate and port and port.isascii() and port.isdigit():
            host = candidate
    normalized = host.rstrip(".").strip().lower()
    if not normalized:
        raise RuleProblem("network_rule: host cannot be empty")
    if "*" in normalized:
        raise RuleProblem("network_rule: host must be a specific host; wildcards are not allowed")
    if any(c.isspace() for c in normalized):
        raise RuleProblem("network_rule: host cannot contain whitespace")
    return normalized


def network_rule(args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Check a ``network_rule(host, protocol, decision, justification)`` call (kept, but it has
    no effect on commands)."""
    name = "network_rule"
    bound = bind(name, args, kwargs)
    host = _typed(name, bound, "host", str, "a string")
    protocol = _typed(name, bound, "protocol", str, "a string")
    decision = _typed(name, bound, "decision", str, "a string")
    justification = _typed(name, bound, "justification", str, "a string")
    if protocol not in PROTOCOLS:
        raise RuleProblem(
            f"{name}: protocol must be one of http, https, socks5_tcp, socks5_udp (got {protocol})"
        )
    if decision == "deny":
        decision = "forbidden"
    elif decision not in DECISIONS:
        raise RuleProblem(
            f"{name}: decision must be allow, prompt, forbidden or deny (got {decision})"
        )
    justification = _justification(name, justification)
    return {
        "kind": name,
        "host": normalize_host(host),
        "protocol": PROTOCOLS[protocol],
        "decision": decision,
        "justification": justification,
    }


BUILTINS: dict[str, Callable[[list[Any], dict[str, Any]], dict[str, Any]]] = {
    "prefix_rule": prefix_rule,
    "host_executable": host_executable,
    "network_rule": network_rule,
}

# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------

_FRAME = re.compile(r"^\s*\* (.*):(\d+), in (.*)$", re.M)
_LOCATION = re.compile(r"^ --> (.*):(\d+):\d+$", re.M)
_ERROR = re.compile(r"^error: (.*?)(?=\n --> |\Z)", re.M | re.S)
_NOT_SERIALIZABLE = re.compile(r"Operation `serde::serialize` not supported on type `([^`]*)`")
MAX_PROBLEM = 300


def seconds_text(seconds: float) -> str:
    """``1 second``, ``2.5 seconds``."""
    return "1 second" if seconds == 1 else f"{seconds:g} seconds"


def one_line(text: str, limit: int = MAX_PROBLEM) -> str:
    """``text`` on one line (runs of blanks and control characters become one space), cut to
    ``limit`` characters."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def innermost_rules_line(stack: str) -> int | None:
    """The line of the innermost frame of a ``call_stack()`` or traceback text that is in the
    rules file."""
    lines = [int(m.group(2)) for m in _FRAME.finditer(stack) if m.group(1) == RULES_NAME]
    return lines[-1] if lines else None


def starlark_problem(text: str) -> tuple[int | None, str]:
    """The line and the one-line problem of a ``StarlarkError`` message."""
    found = _ERROR.search(text)
    problem = found.group(1) if found else text
    location = _LOCATION.search(text)
    if location and location.group(1) == RULES_NAME:
        line: int | None = int(location.group(2))
    else:
        line = innermost_rules_line(text)
    unsupported = _NOT_SERIALIZABLE.search(problem)
    if unsupported:
        frames = [m.group(3) for m in _FRAME.finditer(text) if m.group(1) == PRELUDE_NAME]
        builtin = frames[-1] if frames else "a builtin"
        problem = f"{builtin}: an argument is a {unsupported.group(1)}, not a string or a list"
    if problem.strip() == "Evaluation cancelled":
        problem = "evaluation cancelled"
    return line, one_line(problem)


class _Budget:
    """What the rules files of one load may still hold: rules, examples, bytes."""

    def __init__(self, limits: dict[str, Any]) -> None:
        self.rules = int(limits["max_rules"])
        self.examples = int(limits["max_examples"])
        self.data = int(limits["max_data_bytes"])
        self.limits = limits

    def take(self, call: dict[str, Any]) -> None:
        if call["kind"] == "prefix_rule":
            self.rules -= len(call["positions"][0])
            self.examples -= len(call["match"]) + len(call["not_match"])
        else:
            self.rules -= 1
        self.data -= len(json.dumps(call))
        if self.rules < 0:
            raise RuleProblem(f"more than {self.limits['max_rules']} rules")
        if self.examples < 0:
            raise RuleProblem(f"more than {self.limits['max_examples']} match/not_match examples")
        if self.data < 0:
            mib = self.limits["max_data_bytes"] / (1 << 20)
            raise RuleProblem(f"the rules hold more than {mib:g} MiB of data")


def evaluate_file(
    text: str, budget: _Budget, check_cancelled: Callable[[], bool]
) -> list[dict[str, Any]]:
    """Evaluate one rules file in a fresh module; returns its checked calls in order or raises
    :class:`RuleProblem` (with the line when there is one)."""
    import starlark

    dialect = starlark.Dialect.extended()
    dialect.enable_f_strings = True
    globals_ = starlark.Globals.extended_by([starlark.LibraryExtension.CallStack])
    module = starlark.Module()
    calls: list[dict[str, Any]] = []
    failure: list[RuleProblem] = []

    def builtin(name: str, stack: object, args: object, kwargs: object) -> None:
        line = innermost_rules_line(stack) if isinstance(stack, str) else None
        try:
            if name not in BUILTINS or not isinstance(args, list) or not isinstance(kwargs, dict):
                raise RuleProblem(f"_pi_builtin: not a builtin call: {name}")
            call = BUILTINS[name](args, kwargs)
            call["line"] = line
            budget.take(call)
        except RuleProblem as e:
            e.line = line
            failure.append(e)
            raise
        calls.append(call)

    module.add_callable("_pi_builtin", builtin)
    options = starlark.EvalOptions(
        check_cancelled=check_cancelled,
        max_callstack_size=int(budget.limits["max_call_depth"]),
    )
    try:
        prelude = starlark.parse(PRELUDE_NAME, PRELUDE, dialect)
        starlark.eval_with(options, module, prelude, globals_)
        ast = starlark.parse(RULES_NAME, text, dialect)
        starlark.eval_with(options, module, ast, globals_)
    except starlark.StarlarkError as e:
        if failure:
            raise failure[0] from None
        line, problem = starlark_problem(str(e))
        if problem == "evaluation cancelled":
            problem = f"evaluation took longer than {seconds_text(budget.limits['seconds'])}"
        raise RuleProblem(problem, line) from None
    return calls


def main() -> None:
    """The child process: read the request on stdin, write JSON lines on stdout."""
    request = json.loads(sys.stdin.read())
    limits = request["limits"]
    try:
        import resource

        cap = int(limits["memory_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # pragma: no cover - no rlimit on this system
        pass
    deadline = time.monotonic() + float(limits["seconds"])

    def cancelled() -> bool:
        return time.monotonic() > deadline

    budget = _Budget(limits)
    out = sys.stdout
    for index, file in enumerate(request["files"]):
        out.write(json.dumps({"start": index}) + "\n")
        out.flush()
        try:
            calls = evaluate_file(file["text"], budget, cancelled)
        except RuleProblem as e:
            out.write(json.dumps({"error": index, "line": e.line, "problem": e.problem}) + "\n")
            out.flush()
            return
        except MemoryError:
            mib = int(limits["memory_bytes"]) >> 20
            problem = f"evaluation needs more than {mib} MiB of memory"
            out.write(json.dumps({"error": index, "line": None, "problem": problem}) + "\n")
            out.flush()
            return
        out.write(json.dumps({"done": index, "calls": calls}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
