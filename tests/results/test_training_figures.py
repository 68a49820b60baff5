"""Training figures: collectives of different communicators and fabrics are told apart, the
breakdown's legend covers nothing, and iteration bars show the seeds' spread and say which
differences are within it."""
import numpy as np
import pytest

from helpers import TWO_SERVERS, write_scenario
from rocesim import cli
from rocesim.results import axes, plot
from rocesim.results.metrics import collective_fabric

# 2 servers of 4 GPUs: TP 4 inside each server (scale-up), DP 2 across them (network)
TP_DP = TWO_SERVERS + """
traffic:
  - kind: workload
    model: gpt
    gpus: 8
    params: {layers: 1, hidden: 512, seq: 512, micro_batches: 1}
    parallelism: {tp: 4, pp: 1}
    iterations: 1
"""


def test_collective_fabric_from_the_flows():
    coll = {"collective_id": np.array([0, 1, 2, 3]), "ranks": np.array([8, 2, 1, 4]),
            "size_bytes": np.array([1e6, 1e6, 1e6, 0.0])}
    flows = {"collective": np.array([0, 0, 1, 1, -1]), "is_compute": np.array([1, 1, 0, 1, 0])}
    assert collective_fabric(coll, flows).tolist() == ["scale-up", "network", "none", "none"]


def test_collectives_of_two_communicators_are_two_lines(tmp_path, kept_figures):
    assert cli.main(["run", write_scenario(tmp_path, TP_DP), "-o", str(tmp_path / "r"), "-q"]) == 0
    fig = next(f for f in kept_figures if f._suptitle and "collectives" in f._suptitle.get_text())
    duration = fig.axes[0]
    assert sorted(line.get_label() for line in duration.lines) == ["allreduce, 2 ranks, network",
                                                                   "allreduce, 4 ranks, scale-up"]
    styles = {line.get_label(): (line.get_color(), line.get_fillstyle()) for line in duration.lines}
    assert styles["allreduce, 2 ranks, network"] != styles["allreduce, 4 ranks, scale-up"]
    assert styles["allreduce, 4 ranks, scale-up"][1] == "none"           # hollow: the scale-up domain
    # `rocesim plot` reads the fabric from flows.csv: the same lines
    assert cli.main(["plot", str(tmp_path / "r"), "-o", str(tmp_path / "p.png")]) == 0
    fig = kept_figures[-1]
    assert sorted(line.get_label() for line in fig.axes[0].lines) == ["allreduce, 2 ranks, network",
                                                                      "allreduce, 4 ranks, scale-up"]


def _iterations(ms):
    d = np.array(ms, float) * 1e6
    return {"duration_ns": d, "compute_ns": d * 0.2, "overlap_ns": d * 0.1, "exposed_comm_ns": d * 0.6}


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_the_breakdown_legend_covers_no_label_and_no_data(tmp_path, kept_figures):
    plot.plot_training([("run", _iterations([1.5]), None)], tmp_path / "t.png")
    fig = kept_figures[-1]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = (fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()])[0].get_window_extent(renderer)
    for ax in fig.axes:
        assert not _overlaps(legend, ax.yaxis.label.get_window_extent(renderer)), ax.get_ylabel()
        assert not _overlaps(legend, ax.get_window_extent(renderer)), ax.get_title()


def test_iteration_bars_show_the_seeds_spread_and_say_what_is_within_it(tmp_path, kept_figures):
    runs = [("none", _iterations([14.80]), None), ("none", _iterations([14.84]), None),
            ("none", _iterations([14.91]), None), ("dcqcn", _iterations([14.76]), None),
            ("dcqcn", _iterations([14.86]), None), ("hpcc", _iterations([15.6]), None),
            ("hpcc", _iterations([15.7]), None)]
    plot.plot_training(runs, tmp_path / "t.png")
    ax = kept_figures[-1].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none\n(3 seeds)", "dcqcn\n(2 seeds)", "hpcc\n(2 seeds)"]
    assert [round(p.get_height(), 3) for p in ax.patches] == [14.85, 14.81, 15.65]       # means of the seeds
    whiskers = [c for c in ax.collections if c.get_segments()]
    assert [tuple(np.round(s[:, 1], 2)) for s in whiskers[0].get_segments()] == [(14.8, 14.91), (14.76, 14.86),
                                                                                (15.6, 15.7)]
    note = " ".join(t.get_text().replace("\n", " ") for t in ax.texts)
    assert "bars that share a letter differ by less than the seeds' spread" in note
    # none (14.80-14.91) and dcqcn (14.76-14.86) overlap, hpcc (15.6-15.7) neither: a letter under each value
    assert [t.get_text() for t in ax.texts if t.get_text()[:1].isdigit()] == ["14.85\na", "14.81\na", "15.65\nb"]


def test_single_seed_bars_on_a_zoomed_axis_say_the_spread_is_unknown(tmp_path, kept_figures):
    plot.plot_training([("none", _iterations([14.80]), None), ("dcqcn", _iterations([14.79]), None)],
                       tmp_path / "t.png")
    text = " ".join(t.get_text().replace("\n", " ") for t in kept_figures[-1].axes[0].texts)
    assert axes.TRUNCATED in text and axes.SINGLE_RUNS in text


@pytest.mark.parametrize("spread, letters, note", [
    ([(1, 2), (1.5, 3), (2.5, 4)], ["a", "ab", "b"], axes.SHARED),      # a chain: the ends do not overlap
    ([(1, 2), (1.5, 3), (1.8, 4)], ["a", "a", "a"], axes.WITHIN_ALL),
    ([(1, 2), (3, 4)], ["a", "b"], axes.BEYOND_ALL),
    ([(1, 2), (5, 6), (1.8, 2.2), (5.5, 7)], ["a", "b", "a", "b"], axes.SHARED),
    ([(1, 1), (np.nan, np.nan)], ["a", ""], ""),
])
def test_spread_letters(spread, letters, note):
    assert axes.spread_letters(spread) == letters and axes.spread_note(spread) == note
