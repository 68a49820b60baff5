"""CSV files of numpy columns, formatted in C (no Python per row).

`write_csv` writes what Python's `csv.writer` would, byte for byte (CRLF line ends,
fields quoted only when they must be), with rocesim's cell formats: integers in
decimal, booleans 1/0, floats as ``"%.3f"`` without a trailing ``.000``, NaN as an
empty cell.  The lines are built in C by `rocesim.results._csv_cells` (a Cython module
beside this one) a block of rows at a time, so 10 million flows take seconds instead of
minutes.
"""
from __future__ import annotations

import csv
import io

import numpy as np

from rocesim.results._csv_cells import format_rows

BLOCK_ROWS = 1 << 15           # rows formatted at once (bounds the working memory: ~4 MB of text)
_INT, _FLOAT, _BOOL, _TEXT = 0, 1, 2, 3


def _quote(s: str) -> str:
    """A field as csv.writer (QUOTE_MINIMAL, ',' and '"') writes it."""
    if any(c in s for c in ',"\r\n'):
        return '"' + s.replace('"', '""') + '"'
    return s


def _column(a: np.ndarray):
    """(kind, data) of one column for format_rows."""
    kind = a.dtype.kind
    if kind == "b":
        return _BOOL, a.astype(np.uint8)
    if kind in "iu" and not (a.dtype == np.uint64 and a.size and a.max() > np.iinfo(np.int64).max):
        return _INT, a.astype(np.int64, copy=False)
    if kind == "f":
        return _FLOAT, a.astype(np.float64, copy=False)
    if kind in "iu":                      # beyond int64: Python's digits
        return _TEXT, [str(int(x)).encode() for x in a]
    cell = {}                             # each distinct value quoted once (ops, algorithms, jobs repeat)
    return _TEXT, [cell[x] if x in cell else cell.setdefault(x, _quote(str(x)).encode()) for x in a.tolist()]


def write_csv(path, cols: dict) -> None:
    """Write equal-length columns as CSV; NaN floats become empty cells."""
    names = list(cols)
    arrays = [np.asarray(cols[k]) for k in names]
    n = len(arrays[0]) if arrays else 0
    if len(arrays) == 1:
        _write_one_column(path, names[0], arrays[0])
        return
    head = io.StringIO()
    csv.writer(head).writerow(names)
    with open(path, "wb") as f:
        f.write(head.getvalue().encode())
        for lo in range(0, n, BLOCK_ROWS):      # (each block's columns converted on their own)
            kinds, data = zip(*(_column(a[lo:lo + BLOCK_ROWS]) for a in arrays))
            f.write(format_rows(list(data), list(kinds), 0, len(data[0])))


def _write_one_column(path, name, a):
    """One column: through csv.writer, which quotes a lone empty field."""
    kind, data = _column(a)
    if kind == _TEXT:
        cells = [str(x) for x in a]
    else:
        cells = format_rows([data], [kind], 0, len(a)).decode().split("\r\n")[:-1]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([name])
        w.writerows([c] for c in cells)
