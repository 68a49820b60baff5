"""Empirical flow-size distributions given as piecewise-linear CDFs."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from .._textfile import read_lines
from ..errors import ScenarioError
from ..units import format_size

__all__ = ["FlowSizeCDF", "WEBSEARCH", "FB_HADOOP", "builtin"]


def _piecewise_linear(x: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Evaluate the curve through ``(xs, ys)`` at ``x``, constant beyond either end.

    ``xs`` may repeat a value (a vertical step); at the step the curve takes the value of
    the last point with that ``x``, so it is right-continuous like a CDF.
    """
    x = np.asarray(x, dtype=np.float64)
    j = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, xs.size - 2)
    x0, x1, y0, y1 = xs[j], xs[j + 1], ys[j], ys[j + 1]
    width = x1 - x0
    fraction = np.clip((x - x0) / np.where(width > 0, width, 1.0), 0.0, 1.0)
    inside = y0 + fraction * (y1 - y0)
    return np.where(x < xs[0], ys[0], np.where(x >= xs[-1], ys[-1], inside))


class FlowSizeCDF:
    """A flow-size distribution given by points ``(size_bytes, cumulative_percent)``.

    Between points the CDF is linear, so sizes are spread uniformly within each segment.
    Sizes and percents must not decrease, the first percent must be 0 and the last 100.
    Two points with the same size make an atom (a share of flows of exactly that size);
    two with the same percent a gap no flow falls in.
    """

    def __init__(
        self, points: Iterable[Sequence[float]], name: str = "custom", *, key: str = "cdf"
    ) -> None:
        rows = []
        for i, point in enumerate(points):
            try:
                size, percent = (float(v) for v in point)
            except (TypeError, ValueError):
                raise ScenarioError(
                    f"{key}[{i}]",
                    f"expected a pair (size_bytes, cumulative_percent), got {point!r}",
                ) from None
            rows.append((size, percent))
        self._setup(rows, name, [f"{key}[{i}]" for i in range(len(rows))], key)

    def _setup(
        self, rows: list[tuple[float, float]], name: str, point_keys: list[str], key: str
    ) -> None:
        """Validate the points (errors keyed per point) and store them."""
        if len(rows) < 2:
            raise ScenarioError(
                key, f"needs at least 2 points, got {len(rows)}; e.g. [(0, 0), (1000, 100)]"
            )
        sizes = np.array([size for size, _ in rows], dtype=np.float64)
        percents = np.array([percent for _, percent in rows], dtype=np.float64)
        for i, (size, percent) in enumerate(rows):
            if not np.isfinite(size) or size < 0:
                raise ScenarioError(
                    point_keys[i], f"size {size:g} must be a non-negative number of bytes"
                )
            if not np.isfinite(percent) or not 0 <= percent <= 100:
                raise ScenarioError(
                    point_keys[i], f"cumulative percent {percent:g} must be within 0..100"
                )
            if i and size < sizes[i - 1]:
                raise ScenarioError(
                    point_keys[i],
                    f"size {size:g} is below the previous point's {sizes[i - 1]:g}; "
                    "sizes must not decrease",
                )
            if i and percent < percents[i - 1]:
                raise ScenarioError(
                    point_keys[i],
                    f"cumulative percent {percent:g} is below the previous point's "
                    f"{percents[i - 1]:g}; "
                    "percents must not decrease",
                )
        if percents[0] != 0:
            raise ScenarioError(
                point_keys[0],
                f"the first point must have cumulative percent 0, got {percents[0]:g}; "
                f"start with ({sizes[0]:g}, 0)",
            )
        if percents[-1] != 100:
            raise ScenarioError(
                point_keys[-1],
                f"the last point must have cumulative percent 100, got {percents[-1]:g}",
            )
        self.name = name
        self._sizes = sizes
        self._percents = percents
        sizes.flags.writeable = False
        percents.flags.writeable = False

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], name: str | None = None) -> FlowSizeCDF:
        """Read a CDF from a text file, one point ``size cumulative`` per line.

        ``cumulative`` is a percent (the last line says 100) or, as in some distribution
        files, a fraction (the last line says 1). Blank lines and ``#`` comments are
        ignored. ``name`` defaults to the file name without its extension. Problems raise
        :class:`ScenarioError` keyed ``file:line``.
        """
        file_name = os.fspath(path)
        lines = read_lines(file_name)
        rows = []
        for line in lines:
            line.expect_fields(2, "size cumulative_percent")
            rows.append((line.float_field(0, "size"), line.float_field(1, "cumulative percent")))
        if rows and rows[-1][1] == 1:
            rows = [(size, cumulative * 100) for size, cumulative in rows]
        keys = [line.where for line in lines]
        cdf = cls.__new__(cls)
        cdf._setup(rows, Path(file_name).stem if name is None else name, keys, file_name)
        return cdf

    def __repr__(self) -> str:
        mean = format_size(round(self.mean()))
        return f"FlowSizeCDF({self.name!r}, {self._sizes.size} points, mean {mean})"

    @property
    def sizes(self) -> np.ndarray:
        """Sizes of the points, bytes (read-only)."""
        return self._sizes

    @property
    def percents(self) -> np.ndarray:
        """Cumulative percents of the points (read-only)."""
        return self._percents

    def mean(self) -> float:
        """Exact mean size in bytes of the piecewise-linear distribution (before rounding)."""
        weights = np.diff(self._percents) / 100.0
        midpoints = (self._sizes[:-1] + self._sizes[1:]) / 2.0
        return float(np.dot(weights, midpoints))

    def fraction_at_most(self, size: float | np.ndarray) -> float | np.ndarray:
        """The CDF: fraction of flows no larger than ``size`` bytes."""
        result = _piecewise_linear(size, self._sizes, self._percents) / 100.0
        return float(result) if np.ndim(result) == 0 else result

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` sizes (int64 bytes, at least 1) by inverting the CDF."""
        percent = rng.random(n) * 100.0
        sizes = _piecewise_linear(percent, self._percents, self._sizes)
        return np.maximum(np.rint(sizes), 1).astype(np.int64)


WEBSEARCH = FlowSizeCDF(
    [
        (0, 0),
        (10_000, 15),
        (20_000, 20),
        (30_000, 30),
        (50_000, 40),
        (80_000, 53),
        (200_000, 60),
        (1_000_000, 70),
        (2_000_000, 80),
        (5_000_000, 90),
        (10_000_000, 97),
        (30_000_000, 100),
    ],
    name="websearch",
)
"""Web search flow sizes (DCTCP paper, as used by HPCC); mean about 1.7 MB."""

FB_HADOOP = FlowSizeCDF(
    [
        (0, 0),
        (100, 1),
        (200, 2),
        (300, 5),
        (350, 15),
        (400, 20),
        (500, 30),
        (600, 40),
        (700, 50),
        (1_000, 60),
        (2_000, 67),
        (7_000, 70),
        (30_000, 72),
        (50_000, 82),
        (80_000, 87),
        (120_000, 90),
        (300_000, 95),
        (1_000_000, 97.5),
        (2_000_000, 99),
        (10_000_000, 100),
    ],
    name="fb_hadoop",
)
"""Facebook Hadoop flow sizes (Roy et al. 2015, as used by HPCC); mean about 120 KB."""

_BUILTINS = {cdf.name: cdf for cdf in (WEBSEARCH, FB_HADOOP)}


def builtin(name: str, key: str = "cdf") -> FlowSizeCDF:
    """The built-in distribution called ``name`` (``"websearch"`` or ``"fb_hadoop"``)."""
    cdf = _BUILTINS.get(str(name).lower())
    if cdf is None:
        raise ScenarioError(
            key,
            f"unknown flow-size distribution {name!r}; valid names: {', '.join(sorted(_BUILTINS))}",
        )
    return cdf
