"""Sizes cut into parts: a message into chunks, a buffer into a collective's blocks."""
from __future__ import annotations

import numpy as np


def split_bytes(total: int, parts: int) -> np.ndarray:
    """`parts` integer sizes that add up to `total`, as equal as possible: part i ends at
    floor(total x (i+1) / parts)."""
    return split_bytes_each(np.array([total], np.int64), parts)[:, 0]


def split_bytes_each(totals: np.ndarray, parts: int) -> np.ndarray:
    """`split_bytes(totals[k], parts)` for every k at once: shape (parts, len(totals)).
    The edges floor(total x i / parts) are q x i + floor(r x i / parts) with (q, r) =
    divmod(total, parts): no product of a total and a count, which overflows int64 for a
    petabyte cut into thousands."""
    q, r = np.divmod(np.asarray(totals, np.int64), np.int64(parts))
    i = np.arange(parts + 1, dtype=np.int64)[:, None]
    return np.diff(q[None, :] * i + r[None, :] * i // parts, axis=0)
