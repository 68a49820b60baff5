"""Sizes cut into parts: a message into chunks, a buffer into a collective's blocks."""
from __future__ import annotations

import numpy as np


def split_bytes(total: int, parts: int) -> np.ndarray:
    """`parts` integer sizes that add up to `total`, as equal as possible."""
    edges = (np.int64(total) * np.arange(parts + 1, dtype=np.int64)) // parts
    return np.diff(edges)


def split_bytes_each(totals: np.ndarray, parts: int) -> np.ndarray:
    """`split_bytes(totals[k], parts)` for every k at once: shape (parts, len(totals))."""
    edges = (np.asarray(totals, np.int64)[None, :] * np.arange(parts + 1, dtype=np.int64)[:, None]) // parts
    return np.diff(edges, axis=0)
