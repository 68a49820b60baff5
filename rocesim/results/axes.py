"""What every rocesim figure shares: matplotlib without a screen, plain numbers on axes,
flow sizes as 1KB/10MB, bars that zoom in on small differences and say so, and say whether
the differences are within the seeds' spread.

Only the figure modules import this (and so matplotlib), never the simulator.
"""
from __future__ import annotations

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import textwrap  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plt", "plain_axis", "size_axis", "zoomed_bars", "seed_labels", "spread_letters", "spread_note",
           "TRUNCATED"]


def _size_text(b, _pos=None) -> str:
    """Bytes as 1KB, 20KB, 1.5MB."""
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= f:
            return f"{b / f:g}{unit}"
    return f"{b:g}B"


def plain_axis(axis, log=False) -> None:
    """Plain numbers on an axis (2, 5, 10, 200 rather than 10^0 and 2x10^2)."""
    if log:
        axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _p: f"{v:g}"))


def size_axis(axis) -> None:
    """A log axis of sizes labelled 1KB, 10KB, 1MB (and 2KB, 5KB when the data span less
    than two decades, so that an axis within one decade has labels)."""
    lo, hi = sorted(axis.get_view_interval())
    narrow = lo > 0 and hi / lo < 100
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(_size_text))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


TRUNCATED = "axis does not start at 0"
WITHIN_ALL = "every difference is within the seeds' spread (whiskers: min-max of the runs)"
BEYOND_ALL = "no two bars' min-max ranges overlap: every difference exceeds the seeds' spread"
SHARED = ("bars that share a letter differ by less than the seeds' spread (their min-max ranges "
          "overlap); the others by more")
SINGLE_RUNS = "one run a bar: no seed spread to judge the differences by"


def seed_labels(labels, counts) -> tuple[list[str], str]:
    """Bar labels with the number of seeds (runs) behind each, and what a title says of them:
    when every bar has the same number, the labels as they are and "3 seeds each" (''
    for one each); otherwise "(3 seeds)" under the label of each bar of more than one."""
    if len(set(counts)) == 1:
        return list(labels), (f"{counts[0]} seeds each" if counts and counts[0] > 1 else "")
    return [f"{label}\n({n} seeds)" if n > 1 else label for label, n in zip(labels, counts)], ""


def spread_letters(spread) -> list[str]:
    """A compact letter display of the bars' min-max ranges (`spread`: a (low, high) pair per
    bar, NaN for none): two bars share a letter when their ranges overlap, that is when
    their difference is within the seeds' spread.  Each letter is a largest set of ranges
    that hold a common value (ranges that overlap pairwise all do), lettered from the lowest."""
    lo, hi = (np.asarray(v, float) for v in zip(*spread))
    ok = np.flatnonzero(~np.isnan(lo))
    sets = []
    for v in np.unique(lo[ok]):              # a largest set holds the low end of one of its ranges
        members = {int(k) for k in ok if lo[k] <= v <= hi[k]}
        if not any(members <= other for other in sets):
            sets = [other for other in sets if not other <= members] + [members]
    letters = [""] * len(lo)
    for j, members in enumerate(sets):
        for k in members:
            letters[k] += "abcdefghijklmnopqrstuvwxyz"[j % 26]
    return letters


def spread_note(spread) -> str:
    """What the seeds' spread (`spread_letters`) says of the differences between bars, in words;
    '' with fewer than two bars that have one."""
    letters = [x for x in spread_letters(spread) if x]
    if len(letters) < 2:
        return ""
    if len(set("".join(letters))) == 1:
        return WITHIN_ALL
    if len(set("".join(letters))) == len(letters):
        return BEYOND_ALL
    return SHARED


def zoomed_bars(ax, labels, heights, colors=None, spread=None) -> str:
    """A bar per label with its value written on it (and, with `spread`, a (low, high)
    pair per bar, the min-max of the runs behind it, an error bar from low to high;
    without, each bar is one run).  When the bars differ by less than a
    fifth of the tallest, the axis starts near the shortest (and says it does not start at
    zero), so that a 2% difference is visible.  The figure says whether the differences are
    within the spread (`spread_note`; when some are and some are not, a letter per bar under
    its value, `spread_letters`), or, on a zoomed axis without one, that nothing tells them
    from seed-to-seed variation; returns what it says ('' for nothing)."""
    heights = np.asarray(heights, float)
    x = np.arange(len(labels))
    ax.bar(x, np.nan_to_num(heights), color=colors or [f"C{k % 10}" for k in range(len(labels))], alpha=0.7)
    lo, hi = heights, heights
    if spread is not None:
        lo, hi = (np.asarray(v, float) for v in zip(*spread))
        ok = ~np.isnan(heights)
        ax.errorbar(x[ok], heights[ok], yerr=[heights[ok] - lo[ok], hi[ok] - heights[ok]], fmt="none",
                    ecolor="0.2", capsize=4, lw=1)
    ax.set_xticks(x, labels, rotation=30 if max(map(len, map(str, labels)), default=0) > 6 else 0, ha="right")
    ok = ~np.isnan(heights)
    notes = []
    if ok.any():
        low, high = np.nanmin(lo[ok]), np.nanmax(hi[ok])
        if ok.sum() > 1 and low > 0 and (high - low) < 0.2 * high:
            pad = max(high - low, 0.01 * high)
            ax.set_ylim(low - 1.5 * pad, high + 0.8 * pad)
            notes.append(TRUNCATED)
            if spread is None:
                notes.append(SINGLE_RUNS)
        note = spread_note(spread) if spread is not None else ""
        letters = spread_letters(spread) if note == SHARED else [""] * len(heights)
        if note:
            notes.append(note)
        for k, h in enumerate(heights):
            if not np.isnan(h):
                ax.annotate(f"{h:.4g}" + (f"\n{letters[k]}" if letters[k] else ""), (k, hi[k] if spread is not None else h),
                            ha="center", va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
    plain_axis(ax.yaxis)
    if not notes:
        return ""
    text = "\n".join(line for note in notes for line in textwrap.wrap(note, 80))
    bottom, top = ax.get_ylim()
    ax.set_ylim(bottom, top + 0.07 * text.count("\n") * (top - bottom) + 0.05 * (top - bottom))   # room for it
    ax.text(0.01, 0.99, text, transform=ax.transAxes, ha="left", va="top", fontsize=7, color="0.35")
    return text
