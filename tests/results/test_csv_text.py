"""Tables written in C (rocesim.results.csv_text) read exactly as csv.writer writes them.

With rocesim's cell formats: "%.3f" without ".000", NaN empty, bools 1/0."""
import csv

import numpy as np

from rocesim.results.csv_text import write_csv


def reference(path, cols):
    def cell(x, kind):
        if kind == "f":
            if np.isnan(x):
                return ""
            s = "%.3f" % x
            return s[:-4] if s.endswith(".000") else s
        if kind == "b":
            return "1" if x else "0"
        return str(x)
    names = list(cols)
    arrays = [np.asarray(cols[k]) for k in names]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for i in range(len(arrays[0])):
            w.writerow([cell(a[i].item() if a.dtype.kind != "O" else a[i], a.dtype.kind) for a in arrays])


TRICKY = [0.0, -0.0, 0.0005, 0.0015, 0.0025, 1.0625, 2.5e-4, np.inf, -np.inf, np.nan, -1.2345, 1e12,
          1e15, 1e300, 0.9995, 123.4565, 7.0, 0.001, 1e-9, 5e11 + 0.0005, 2.0**40 / 1000, 999.9995, 4.9999995]


def test_text_matches_csv_writer(tmp_path):
    rng = np.random.default_rng(5)
    n = 20_000
    f = rng.random(n) * 10.0 ** rng.integers(-4, 13, n)
    f[rng.random(n) < 0.05] = np.nan
    f[:len(TRICKY)] = TRICKY
    cols = dict(id=np.arange(n), x=f, ns=rng.integers(0, 10**12, n) / 1000.0, ok=rng.random(n) < 0.5,
                i32=(np.arange(n) * 3137 - 5).astype(np.int32), u8=rng.integers(0, 255, n).astype(np.uint8),
                big=np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max] * (n // 2)),
                huge=np.array([2**64 - 1, 0] * (n // 2), np.uint64),
                text=np.array([["x", "a,b", 'q"', "", "line\nbreak"][i % 5] for i in range(n)], object))
    write_csv(tmp_path / "fast.csv", cols)
    reference(tmp_path / "ref.csv", cols)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()


def test_single_column_and_empty_tables(tmp_path):
    for cols in (dict(x=np.array([1.5, np.nan, np.nan, 2.0])), dict(s=np.array(["", "a", ""], object)),
                 dict(a=np.zeros(0)), dict(a=np.zeros(0, np.int64), b=np.zeros(0))):
        write_csv(tmp_path / "fast.csv", cols)
        reference(tmp_path / "ref.csv", cols)
        assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()
