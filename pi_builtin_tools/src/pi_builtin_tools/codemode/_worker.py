"""The codemode worker: one JavaScript script in a QuickJS VM (``jsbox``), in its own process.

Started by :mod:`pi_builtin_tools.codemode.javascript` as ``python -I <this file>``; it imports
nothing of pi. It speaks JSON lines (the messages of Pi 1.6.0's ``pi-codemode`` runtime protocol):

* stdin, first line: ``{"code", "tools": [{name, jsName, description}], "globals":
  [{name, spread}], "store": {key: json}, "memoryLimitBytes"}``; then
  ``{"type": "result", "id", "ok", "payload", "properties"?}`` for each call the script made.
* stdout: ``{"type": "call", "id", "target": "tool"|"global", "name", "args"}``,
  ``{"type": "waiting"}`` (the script waits for a result: the calls sent since may run),
  ``{"type": "output", "item"}``, ``{"type": "done", "ok", ...}``, ``{"type": "crash",
  "message"}``.

The VM runs only while this process handles a message: it has no timers and no I/O, so a
script waits until the host delivers a result. The host ends the process when the script is
done, at its deadline, or on abort (the VM cannot be trusted to stop on its own: one long
native operation is not interruptible).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from typing import Any

import jsbox

PARENT_PID = int(os.environ.get("PI_CODEMODE_PARENT_PID", os.getppid()))
PRELUDE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prelude.js")

OUT_OF_MEMORY = {
    "name": "InternalError",
    "message": "out of memory",
    "stack": "InternalError: out of memory",
}


MAX_VALUE_BYTES = 3 * 16 * 1024 * 1024 + 64 * 1024
"""The largest value that crosses between the VM and this process (jsbox's ``max_value_bytes``,
16 MiB by default)."""


def _send(message: dict[str, Any], *, flush: bool = False) -> None:
    """Write one message. A call reaches the host with the ``waiting`` message the worker sends
    when it waits for a result (:meth:`Worker.receive`): the host registers the calls a script
    makes before it awaits (``Promise.all([...])``) in the script's order and runs them once it
    waits, as Pi's do. Output and the end are sent at once."""
    sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    if flush:
        sys.stdout.flush()


def _describe(error: jsbox.JavaScriptError) -> dict[str, Any]:
    """Pi's ``describeException``: ``name``, ``message``, ``stack`` = ``Name: message`` and the
    frames. An error without a name (QuickJS throws ``null`` when it cannot even allocate the
    error object) is the heap limit."""
    name = getattr(error, "name", None)
    message = getattr(error, "message", None)
    if not name:  # QuickJS threw null: it could not allocate the error either
        return dict(OUT_OF_MEMORY)
    head = f"{name}: {message}" if message else str(name)
    frames = (getattr(error, "stack", None) or "").rstrip()
    return {
        "name": name,
        "message": message or "",
        "stack": f"{head}\n{frames}" if frames else head,
    }


class Worker:
    def __init__(self, start: dict[str, Any]) -> None:
        self.finished = False
        self.pending: set[int] = set()
        self._loop = asyncio.new_event_loop()  # a factory of futures only; it never runs
        self.memory_limit = int(start["memoryLimitBytes"])
        # above what the prelude lets cross (16 MiB of arguments, 16 Mi characters of output,
        # up to 3 bytes each): the prelude's own limits, with their texts, apply first
        self.runtime = jsbox.Runtime(
            memory_limit=self.memory_limit, max_value_bytes=MAX_VALUE_BYTES
        )
        self.runtime.bind_function("__pi_bridge", self.bridge)
        self.runtime.bind_function("__pi_next", self._loop.create_future)
        self.runtime.bind_object(
            "__pi_data",
            {
                "tools": json.dumps(start["tools"]),
                "globals": json.dumps(start["globals"]),
                "store": json.dumps(start["store"]),
            },
        )
        with open(PRELUDE_PATH, encoding="utf-8") as f:
            prelude = f.read()
        # jsbox's console goes: the prelude defines its own.
        self.runtime.add_static_module(
            "codemode-prelude.js",
            "const bridge = globalThis.__pi_bridge; delete globalThis.__pi_bridge;\n"
            "const data = globalThis.__pi_data; delete globalThis.__pi_data;\n"
            "const next = globalThis.__pi_next; delete globalThis.__pi_next;\n"
            "delete globalThis.console;\n"
            f"const api = {prelude};\n"
            "const vm = api(bridge, data.tools, data.globals, data.store);\n"
            "const main = async (fn) => {\n"
            "  vm.run(fn);\n"
            "  for (;;) {\n"
            "    const m = await next();\n"
            '    if (m.type === "stalled") { vm.stalled(); return; }\n'
            "    vm.settle(m.id, m.ok, m.payload ?? undefined, m.properties ?? undefined);\n"
            "  }\n"
            "};\n"
            'Object.defineProperty(globalThis, "__pi", { value: main });\n',
        )

    def bridge(self, kind: str, a: Any = None, b: Any = None, c: Any = None) -> None:
        if kind in ("call", "global"):
            self.pending.add(int(a))
            _send(
                {
                    "type": "call",
                    "id": int(a),
                    "target": "tool" if kind == "call" else "global",
                    "name": b,
                    "args": c,
                }
            )
        elif kind == "output":
            if a == "image":
                item = {"type": "image", "data": b, "mimeType": c}
            elif a == "console":
                item = {"type": "text", "text": b, "console": True}
            else:
                item = {"type": "text", "text": b}
            _send({"type": "output", "item": item}, flush=True)
        elif kind == "done":
            self.finished = True
            if a:
                _send({"type": "done", "ok": True, "value": b, "writes": c}, flush=True)
            else:
                if b == '{"message":"null"}' and self.near_memory_limit():
                    b = json.dumps(OUT_OF_MEMORY)
                _send({"type": "done", "ok": False, "error": b}, flush=True)

    def near_memory_limit(self) -> bool:
        """Whether this process grew to half the VM's heap limit: QuickJS throws ``null``
        instead of ``InternalError: out of memory`` when it cannot even allocate that error."""
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        return peak >= self.memory_limit // 2

    def run(self, code: str) -> None:
        """Run the script to its end: after each drain of the promise jobs, either deliver the
        next result from the host or, when no call is pending, fail the stalled script."""
        runtime = self.runtime
        try:
            runtime.eval_module("codemode-prelude.js")
        except jsbox.JavaScriptError as e:
            _send({"type": "crash", "message": f"{e.name}: {e.message}"}, flush=True)
            return
        # The prefix has the length of Pi's `(async (tools, console) => {` and shares the first
        # line with the script, so reported lines and columns are those of Pi.
        try:
            runtime._begin_async(f"__pi(async(tools,console)=>{{{code}\n}})", None)
        except jsbox.JavaScriptError as e:  # a syntax error
            self.fail(e)
            return
        try:
            while not self.finished:
                done, waiting = runtime._poll()
                if done or self.finished:
                    return
                for wait_id, _future in waiting:
                    if self.pending:
                        message = self.receive()
                        if message is None:
                            return
                    else:
                        message = {"type": "stalled"}
                    runtime._settle(wait_id, True, message)
        except jsbox.JavaScriptError as e:
            self.fail(e)
        finally:
            runtime._end_async()

    def fail(self, error: jsbox.JavaScriptError) -> None:
        """Report an error the prelude could not report itself."""
        if not self.finished:
            self.finished = True
            _send({"type": "done", "ok": False, "error": json.dumps(_describe(error))}, flush=True)

    def receive(self) -> dict[str, Any] | None:
        """The next result from the host (``None``: the host closed stdin)."""
        _send({"type": "waiting"}, flush=True)  # with the calls written since the last wait
        while True:
            line = sys.stdin.readline()
            if not line:
                return None
            message = json.loads(line)
            if message.get("type") == "result":
                self.pending.discard(message.get("id"))
                return message


def _die_with_parent() -> None:
    """End this process when the process that started it dies (a host killed without its
    cleanup must not leave a script running).

    The host passes the read end of a pipe whose write end only it holds
    (``PI_CODEMODE_LIFELINE``). With ``O_ASYNC`` the kernel sends ``SIGIO`` when that end
    closes, and ``SIGIO``'s default action ends the process at once, even while a script holds
    the interpreter. (``PR_SET_PDEATHSIG`` follows the *thread* that spawned the worker, and
    trio spawns from worker threads it retires after 10 idle seconds; a watcher thread cannot
    run while QuickJS holds the GIL.)"""
    if os.getppid() != PARENT_PID:  # it died before we got here
        os._exit(1)
    lifeline = os.environ.get("PI_CODEMODE_LIFELINE")
    if lifeline is None:
        return
    try:
        import fcntl

        fd = int(lifeline)
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_ASYNC | os.O_NONBLOCK)
    except (OSError, ValueError, ImportError):
        return
    if os.getppid() != PARENT_PID:  # it died while we armed the lifeline
        os._exit(1)


def main() -> None:
    _die_with_parent()
    line = sys.stdin.readline()
    if not line:
        return
    start = json.loads(line)
    Worker(start).run(start["code"])


if __name__ == "__main__":
    main()
