"""Text helpers that tool results and the command line share."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def format_size(n: int) -> str:
    """A byte count as Pi writes it (its ``formatSize``): ``512B``, ``1.3KB``, ``2.0MB``.

    ``n < 1024`` → ``"{n}B"``; below 1 MiB one decimal of KB; else one decimal of MB. Rounding is
    JavaScript's ``toFixed(1)``: half up on the exact value (1280 → ``"1.3KB"``).
    """
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        value, unit = Decimal(n) / Decimal(1024), "KB"
    else:
        value, unit = Decimal(n) / Decimal(1024 * 1024), "MB"
    return f"{value.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}{unit}"


__all__ = ["format_size"]
