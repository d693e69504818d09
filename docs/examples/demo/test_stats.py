"""Checks for stats.py: run with ``python3 test_stats.py`` (exit status 1 on a failure)."""

import sys

from stats import mean, median

CASES = [
    ("mean([1, 2, 3])", lambda: mean([1, 2, 3]), 2),
    ("mean([4])", lambda: mean([4]), 4),
    ("median([3, 1, 2])", lambda: median([3, 1, 2]), 2),
    ("median([4, 1, 3, 2])", lambda: median([4, 1, 3, 2]), 2.5),
]


def main():
    failed = 0
    for name, compute, want in CASES:
        try:
            got = compute()
        except Exception as exc:
            got = f"{type(exc).__name__}: {exc}"
        if got == want:
            print(f"ok    {name} == {want!r}")
        else:
            failed += 1
            print(f"FAIL  {name}: got {got!r}, want {want!r}")
    print(f"{len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
