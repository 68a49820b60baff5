"""Plots of results: FCT slowdown against flow size (p50, p95, p99), one or many runs.

Runs are compared on one figure: one colour per run, one line style per percentile,
flow size (the bin's largest flow) on a log axis, as in the HPCC paper's figures.
"""
from __future__ import annotations

import json
import os
import re

import matplotlib.lines
import matplotlib.patches
import numpy as np

from rocesim.results.axes import plain_axis, plt, seed_labels, size_axis, zoomed_bars
from rocesim.results.collective_plot import plot_collectives
from rocesim.results.metrics import MIN_FLOWS_PER_BIN, background_mask, slowdown_by_size
from rocesim.results.run import read_csv
from rocesim.results.timeline_plot import plot_timeline

STYLES = {50: ":", 95: "--", 99: "-"}
MARKERS = {50: "o", 95: "s", 99: "^"}      # p95 and p99 differ in marker and line, not colour alone
EMPTY_TEXT = "no finished data flows in this run"
MARKED_KINDS = ("incast",)                  # traffic entries whose flows the slowdown figure draws one by one


def _load_run(outdir):
    """(label, flows columns) of a results folder written by `rocesim run`."""
    flows_csv = os.path.join(outdir, "flows.csv")
    flows_pq = os.path.join(outdir, "flows.parquet")
    if os.path.isfile(flows_csv):
        flows = read_csv(flows_csv)
    elif os.path.isfile(flows_pq):
        import pyarrow.parquet as pq
        table = pq.read_table(flows_pq)
        flows = {name: table.column(name).to_numpy() for name in table.column_names}
    else:
        raise FileNotFoundError(f"{outdir} holds no flows.csv or flows.parquet (is it a rocesim output folder?)")
    return _with_scheme(outdir, os.path.basename(os.path.normpath(outdir))), flows


def _with_scheme(outdir, name) -> str:
    """`name (scheme)`, the scheme from the folder's summary.json (`name` without one)."""
    summary = os.path.join(outdir, "summary.json")
    if not os.path.isfile(summary):
        return name
    with open(summary) as f:
        return f"{name} ({json.load(f).get('scheme', '?')})"


def flow_classes(flows) -> list[tuple[str, dict]]:
    """(name, columns) of the classes a run's slowdown figure shows: its network flows, or,
    when it has both background flows and training flows (a collective's or an
    iteration's), each class apart, background first."""
    flows = _data_only(flows)
    bg = background_mask(flows)
    if bg.all() or not bg.any():
        return [("", flows)]
    return [("background", {k: np.asarray(v)[bg] for k, v in flows.items()}),
            ("training", {k: np.asarray(v)[~bg] for k, v in flows.items()})]


def marked_entries(traffic) -> dict[int, str]:
    """{tag: kind} of the entries of a scenario's `traffic:` list whose flows the slowdown
    figure draws one by one (MARKED_KINDS: an incast's few large flows would vanish into the
    size bins); a flow's `tag` in flows.csv is the index of its traffic entry."""
    return {k: e["kind"] for k, e in enumerate(traffic if isinstance(traffic, list) else [])
            if isinstance(e, dict) and e.get("kind") in MARKED_KINDS}


def folder_marks(outdir) -> dict[int, str]:
    """`marked_entries` of the scenario a results folder records (a sweep's run keeps it in
    provenance.json; a `rocesim run` folder records none: {})."""
    path = os.path.join(outdir, "provenance.json")
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        scenario = json.load(f).get("scenario")
    return marked_entries(scenario.get("traffic")) if isinstance(scenario, dict) else {}


def _bins_text(name, counts) -> str:
    """'162 flows in 3 equal-count bins of 54' (a class's name first when it has one)."""
    lo, hi, n = int(counts.min()), int(counts.max()), int(counts.sum())
    return (f"{name + ': ' if name else ''}{n} flows in {counts.size} equal-count bin{'s' if counts.size > 1 else ''}"
            f" of {lo}{f'-{hi}' if hi > lo else ''}")


def _marked(flows, marks):
    """(tag, kind, sizes, slowdowns) of the finished flows of each traffic entry in `marks`
    ({tag: kind}) that has some."""
    if not marks or "tag" not in flows:
        return []
    tag = np.asarray(flows["tag"])
    sd = np.asarray(flows["slowdown"], float)
    out = []
    for t, kind in marks.items():
        sel = (tag == t) & np.isfinite(sd)
        if sel.any():
            out.append((t, kind, np.asarray(flows["size_bytes"], float)[sel], sd[sel]))
    return out


def plot_slowdown(runs, out_path, n_bins=None, title=None, marks=None):
    """Plot slowdown by size for `runs`, a list of (label, flows columns); save to out_path.

    Flows are binned by size into `n_bins` bins of equal count (None: from the flow count,
    `rocesim.results.metrics.size_bins`, so that each bin's p99 rests on about 50 flows or
    more).  The flows of the traffic entries in `marks` ({tag: kind}, `marked_entries`:
    incasts; or a list of one per run) are marked apart: one run, each flow; several runs,
    each panel's percentile of them.  One run: one panel, a line per percentile (a colour
    per class of flows when the run has background and training flows: `flow_classes`).
    Several runs: a panel per percentile (p50, p95, p99), a line per run, so that schemes
    compare at a glance; runs with both classes are drawn by their background flows, and
    the title says so.
    """
    marks = list(marks) if isinstance(marks, (list, tuple)) else [marks or {}] * len(runs)
    if len(runs) > 1:
        return _plot_panels(runs, out_path, n_bins, title, marks)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    (label, flows), = runs
    classes = flow_classes(flows)
    binned = []
    for c, (cls, part) in enumerate(classes):
        bins = slowdown_by_size(part["size_bytes"], part["slowdown"], n_bins)
        if len(bins["size_max"]) == 0:
            continue
        binned.append(_bins_text(cls, bins["count"]))
        for k, (p, style) in enumerate(STYLES.items()):
            ax.plot(bins["size_max"], bins[f"p{p}"], style, marker=MARKERS[p], markersize=4,
                    color=f"C{k + 3 * c}", label=f"{label}: {cls} flows p{p}" if cls else f"{label} p{p}")
    for t, kind, size, sd in _marked(_data_only(flows), marks[0]):       # every flow of it
        ax.plot(size, sd, linestyle="none", marker="x", markersize=6, color="k",
                label=f"{label}: {kind} (traffic[{t}], {sd.size} flows)")
    ax.set_xlabel("flow size (largest in bin)")
    ax.set_ylabel("FCT slowdown")
    ax.set_title(title or "FCT slowdown by flow size" + (f"\n({'; '.join(binned)})" if binned else ""), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.set_xscale("log")
        ax.set_yscale("log")
        size_axis(ax.xaxis)
        plain_axis(ax.yaxis, log=True)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:                                   # say so rather than draw empty axes
        ax.text(0.5, 0.5, EMPTY_TEXT, ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)
    return out_path


def _data_only(flows) -> dict:
    """Flow columns without compute steps (a training run's compute durations are not flows)."""
    if "is_compute" not in flows:
        return flows
    keep = ~np.asarray(flows["is_compute"]).astype(bool)
    return {k: np.asarray(v)[keep] for k, v in flows.items()}


def _plot_panels(runs, out_path, n_bins, title, marks):
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    classes = [flow_classes(flows) for _, flows in runs]
    background = any(len(c) > 1 for c in classes)
    binned = [(label, c[0][1], slowdown_by_size(c[0][1]["size_bytes"], c[0][1]["slowdown"], n_bins))
              for (label, _), c in zip(runs, classes)]
    said = {}                                   # the marked entries, for the legend
    for ax, p in zip(axes, STYLES):
        for k, (label, flows, bins) in enumerate(binned):
            if len(bins["size_max"]):
                ax.plot(bins["size_max"], bins[f"p{p}"], "-", marker=".", color=colors[k % len(colors)],
                        label=f"{label} ({len(bins['count'])} bins)")
            for t, kind, size, sd in _marked(flows, marks[k]):       # the panel's percentile of its flows
                ax.plot([np.median(size)], [np.percentile(sd, p)], linestyle="none", marker="X", markersize=8,
                        markeredgecolor="k", color=colors[k % len(colors)])
                said[f"{kind} (traffic[{t}]): the percentile of its {sd.size} flows"] = None
        ax.set_xlabel("flow size (largest in bin)")
        ax.set_title(f"p{p} FCT slowdown")
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.set_xscale("log")
            ax.set_yscale("log")
            size_axis(ax.xaxis)
            plain_axis(ax.yaxis, log=True)
        else:
            ax.text(0.5, 0.5, EMPTY_TEXT, ha="center", va="center", transform=ax.transAxes)
    axes[0].set_ylabel("FCT slowdown")
    if axes[0].lines:
        handles = [line for line in axes[0].lines if not line.get_label().startswith("_")]
        handles += [matplotlib.lines.Line2D([], [], linestyle="none", marker="X", markersize=8, color="0.6",
                                            markeredgecolor="k", label=text) for text in said]
        axes[-1].legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    bins_said = (f"{n_bins} equal-count bins" if n_bins else
                 f"equal-count bins of {MIN_FLOWS_PER_BIN} flows or more where a run has them")
    fig.suptitle(title or f"FCT slowdown by flow size ({bins_said}"
                 + ("; background flows of the runs with training traffic" if background else "") + ")")
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path


BREAKDOWN = (("compute only", "C0"), ("compute + communication (overlap)", "C2"),
             ("exposed communication", "C3"), ("waiting", "0.8"))


def iteration_shares(its) -> list[float]:
    """Mean shares (%) of the finished iterations: compute only, overlap, exposed
    communication, waiting (from the compute_ns, overlap_ns, exposed_comm_ns columns of
    iterations.csv); NaN when none finished."""
    d = np.asarray(its["duration_ns"], float)
    done = np.isfinite(d)
    if not done.any():
        return [np.nan] * len(BREAKDOWN)
    c, o, e = (np.asarray(its[k], float)[done] for k in ("compute_ns", "overlap_ns", "exposed_comm_ns"))
    d = d[done]
    parts = np.array([c - o, o, e, np.maximum(0.0, d - c - e)]) / d * 100
    return list(np.mean(parts, axis=1))


def _finished(values) -> np.ndarray:
    v = np.asarray(values, float)
    return v[np.isfinite(v)]


def plot_training(runs, out_path, title=None):
    """Iteration times, where the time goes, and collective durations, side by side.

    `runs` is a list of (label, iterations columns, collectives columns or None); runs that
    share a label are seeds of one configuration (a sweep's runs of it: `configuration_label`).
    A bar per configuration for the mean iteration time (the mean of its runs' means; each
    iteration a dot; with several seeds, whiskers from the lowest run's mean to the highest,
    and the panel says which differences are within that spread: `axes.spread_note`), a
    stacked bar of the iteration's shares (compute, overlap, exposed communication, waiting;
    means over hosts, see rocesim.results.overlap) when iterations.csv has them, and a box of
    the collectives' durations.  Only what finished is drawn: a configuration whose stop time
    came first says under its label how many iterations finished.
    """
    groups = {}
    for label, its, coll in runs:
        groups.setdefault(label, []).append((its, coll))
    shares = all("exposed_comm_ns" in its for _, its, _ in runs)
    n = len(groups)
    fig, axes = plt.subplots(1, 3 if shares else 2, figsize=(min(18.0, max(8, 1.6 * n + 4) * (1.5 if shares else 1)), 4.8))
    ax1, ax2 = axes[0], axes[-1]
    durations = {g: [_finished(its["duration_ns"]) / 1e6 for its, _ in members] for g, members in groups.items()}
    labels, each = seed_labels([_training_label(g, members, durations[g]) for g, members in groups.items()],
                               [len(members) for members in groups.values()])
    x = np.arange(n)
    means = [[d.mean() for d in durations[g] if d.size] for g in groups]
    seeds = any(len(m) > 1 for m in means)
    zoomed_bars(ax1, labels, [np.mean(m) if m else np.nan for m in means],
                spread=[(min(m), max(m)) if m else (np.nan, np.nan) for m in means] if seeds else None)
    for k, g in enumerate(groups):
        d = np.concatenate(durations[g])
        ax1.plot(np.full(d.size, k), d, "k.", markersize=5)
    if not any(means):
        ax1.text(0.5, 0.5, "no finished iterations", ha="center", va="center", transform=ax1.transAxes)
    ax1.set_ylabel("iteration time (ms)")
    ax1.set_title("iteration time (bar: mean, dots: iterations" + (f";\nwhiskers: min-max of the seeds' means"
                                                                  if seeds else "")
                  + (f", {each}" if each else "") + ")", fontsize=10)
    if shares:
        ax = axes[1]
        parts = np.array([_mean_shares(members) for members in groups.values()])      # [configuration, part]
        bottom = np.zeros(n)
        for j, (name, color) in enumerate(BREAKDOWN):
            ax.bar(x, np.nan_to_num(parts[:, j]), bottom=bottom, color=color, label=name)
            bottom += np.nan_to_num(parts[:, j])
        ax.set_xticks(x, labels, rotation=30, ha="right")
        ax.set_ylim(0, 100)
        ax.set_ylabel("share of the iteration (%, mean over hosts)")
        ax.set_title("where the iteration's time goes", fontsize=10)
        # under the figure, not over the bars or the y label
        fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=len(BREAKDOWN), fontsize=8,
                   frameon=False)
    data = [np.concatenate([_finished(c["duration_ns"]) / 1e3 if c is not None else np.zeros(0) for _, c in members])
            for members in groups.values()]
    if any(d.size for d in data):
        ax2.boxplot([d if d.size else [np.nan] for d in data], showfliers=True)
        ax2.set_xticks(x + 1, labels, rotation=30, ha="right")
        ax2.set_yscale("log")
        plain_axis(ax2.yaxis, log=True)
    else:
        ax2.text(0.5, 0.5, "no finished collectives", ha="center", va="center", transform=ax2.transAxes)
    ax2.set_ylabel("collective duration (us)")
    ax2.set_title("collective durations (finished)", fontsize=10)
    fig.suptitle(title or "training iterations")
    fig.tight_layout(rect=(0, 0.06 if shares else 0, 1, 1))
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path


def _mean_shares(members) -> np.ndarray:
    """`iteration_shares` averaged over a configuration's runs that finished an iteration."""
    rows = np.array([iteration_shares(its) for its, _ in members])
    done = np.isfinite(rows).all(axis=1)
    return rows[done].mean(axis=0) if done.any() else np.full(len(BREAKDOWN), np.nan)


def _training_label(label, members, durations) -> str:
    """A configuration's label, with how many of its iterations finished when some did not."""
    done = sum(d.size for d in durations)
    total = sum(len(its["duration_ns"]) for its, _ in members)
    return label + (f"\n({done}/{total} finished)" if done < total else "")


def configuration_label(outdir) -> str:
    """A results folder's name without the seed a sweep names its runs by
    (`cc.scheme=hpcc,seed=2` -> `cc.scheme=hpcc`; `seed=2` -> `base`): a sweep's runs of one
    configuration at several seeds share it."""
    name = os.path.basename(os.path.normpath(outdir))
    kept = [p for p in name.split(",") if not re.fullmatch(r"seed=-?\d+", p)]
    return ",".join(kept) or "base"


def _load_training(outdir):
    its = os.path.join(outdir, "iterations.csv")
    if not os.path.isfile(its):
        return None
    coll = os.path.join(outdir, "collectives.csv")
    return read_csv(its), read_csv(coll) if os.path.isfile(coll) else None


def plot_dirs(outdirs, out_path=None, n_bins=None):
    """Plot one or more results folders; returns the image paths.

    FCT slowdown by size (default <first folder>/slowdown.png) and, when the runs hold
    training iterations, iteration and collective times (<first folder>/training.png,
    or `out_path` with "-training" before the extension).
    """
    runs = [_load_run(d) for d in outdirs]
    written = []
    slow_path = out_path or os.path.join(outdirs[0], "slowdown.png")
    # a sweep's runs of one configuration at several seeds: one bar with their spread
    training = [(_with_scheme(d, configuration_label(d)), *t) for d, t in zip(outdirs, map(_load_training, outdirs))
                if t is not None]
    finished = any((~np.isnan(_data_only(flows)["slowdown"])).any() for _, flows in runs)
    if finished or not training:          # an empty run gets a figure that says so
        written.append(plot_slowdown(runs, slow_path, n_bins, marks=[folder_marks(d) for d in outdirs]))
    if training:
        base, ext = os.path.splitext(slow_path)
        path = f"{base}-training{ext}" if out_path else os.path.join(outdirs[0], "training.png")
        written.append(plot_training(training, path))
    colls = [(label, read_csv(os.path.join(d, "collectives.csv")), flows) for (label, flows), d in zip(runs, outdirs)
             if os.path.isfile(os.path.join(d, "collectives.csv"))]
    if colls:
        written.append(plot_collectives(colls, _beside(slow_path, out_path, outdirs[0], "collectives")))
    for d in outdirs[:1]:                      # the first run's rates and queues over time
        rates, queues = (os.path.join(d, f) for f in ("rates.csv", "queues.csv"))
        if os.path.isfile(rates) or os.path.isfile(queues):
            written.append(plot_timeline(read_csv(rates) if os.path.isfile(rates) else None,
                                         read_csv(queues) if os.path.isfile(queues) else None,
                                         _beside(slow_path, out_path, d, "timeline"), title=f"{runs[0][0]}: rates and queues"))
    return written


def _beside(slow_path, out_path, first_dir, kind):
    """<out_path base>-<kind>.png when an output path was given, else <first_dir>/<kind>.png."""
    if out_path:
        base, ext = os.path.splitext(slow_path)
        return f"{base}-{kind}{ext}"
    return os.path.join(first_dir, f"{kind}.png")


PAUSE_COLORS = {False: "C0", True: "C3"}     # by whether the pause is still on at the end


def plot_pfc_timeline(timeline, out_path, end_ns, max_links=60, title=None):
    """Pause state over time: one row per paused (port, priority), a bar per pause.

    `timeline` holds the columns of pfc_timeline.csv; pauses still on at the end run to
    `end_ns`.  Rows are ordered by their first pause, so a cascade reads top to bottom
    (with more than `max_links` rows, those paused longest are kept).
    """
    port = np.asarray(timeline["port"], np.int64)
    prio = np.asarray(timeline["priority"], np.int64)
    start = np.asarray(timeline["pause_start_ns"], float) / 1e3
    end = np.asarray(timeline["pause_end_ns"], float) / 1e3
    end = np.where(np.isnan(end), end_ns / 1e3, end)
    keys = port * 8 + prio
    rows, inverse = np.unique(keys, return_inverse=True)
    total = np.bincount(inverse, weights=end - start)
    keep = np.argsort(-total, kind="stable")[:max_links]
    first = np.array([start[inverse == r].min() for r in keep]) if keep.size else np.zeros(0)
    keep = keep[np.argsort(first, kind="stable")]
    fig, ax = plt.subplots(figsize=(11, max(2.5, 0.22 * len(keep) + 1.5)))
    labels = []
    still = np.isnan(np.asarray(timeline["pause_end_ns"], float))
    for y, r in enumerate(keep):
        sel = inverse == r
        ax.broken_barh(list(zip(start[sel], (end - start)[sel])), (y - 0.4, 0.8),
                       facecolors=[PAUSE_COLORS[bool(x)] for x in still[sel]])
        i = np.flatnonzero(sel)[0]
        labels.append(f"{int(timeline['node'][i])}->{int(timeline['peer'][i])} p{int(prio[i])}")
    ax.set_yticks(np.arange(len(keep)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, end_ns / 1e3 if end_ns > 0 else 1)
    ax.set_xlabel("time (us)")
    ax.set_ylabel("paused transmitter: node->peer\n(the peer sent the PAUSE), priority")
    shown = f"the {len(keep)} paused longest of {len(rows)}" if len(keep) < len(rows) else f"{len(rows)}"
    ax.set_title(f"{title or 'PFC pauses over time'}\n(a row per paused transmitter and priority: {shown}; "
                 f"a bar per pause)", fontsize=10)
    ax.legend(handles=[matplotlib.patches.Patch(color=PAUSE_COLORS[False], label="pause (ended)"),
                       matplotlib.patches.Patch(color=PAUSE_COLORS[True],
                                                label="pause still on at\nthe end of the run")],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return out_path
