"""The mutation queue: the same file serialised, different files in parallel.

Three tasks start at once. ``a.txt`` (reached once through a symlink) is changed twice: the
second change waits for the first. ``b.txt`` is another file and does not wait.
"""

from __future__ import annotations

import os
import sys
import tempfile

import trio

from pi_core import with_file_mutation_queue

log: list[str] = []


async def change(path: str, name: str, seconds: float) -> None:
    async def mutate() -> None:
        log.append(f"{name} starts")
        await trio.sleep(seconds)
        log.append(f"{name} ends")

    await with_file_mutation_queue(path, mutate)


async def main(folder: str) -> None:
    a, b, link = (os.path.join(folder, n) for n in ("a.txt", "b.txt", "link-to-a.txt"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(change, a, "first a", 0.2)
        await trio.sleep(0.01)
        nursery.start_soon(change, link, "second a", 0.01)
        await trio.sleep(0.01)
        nursery.start_soon(change, b, "b", 0.01)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        for name in ("a.txt", "b.txt"):
            open(os.path.join(folder, name), "w").close()
        os.symlink(os.path.join(folder, "a.txt"), os.path.join(folder, "link-to-a.txt"))
        trio.run(main, folder)
    sys.stdout.write("\n".join(log) + "\n")
