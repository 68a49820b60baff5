"""Figures (rocesim.results, rocesim.sweep.plot): sweep plots and the frictions of run plots.

Sweep plots: metric vs parameter, heatmap.  Run plots: compute steps left out, p95 and p99
distinguishable, plain numbers, empty runs said so, bars that differ by 2% not starting at zero."""
import csv
import os

import numpy as np
import pytest

from helpers import write_scenario
from rocesim import cli
from rocesim.results import axes, plot
from rocesim.sweep import plot as sweep_plot
from rocesim.sweep import index


def _write_index(root, rows, params):
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, index.columns(params), restval="")
        w.writeheader()
        w.writerows(rows)


def _sweep_folder(tmp_path):
    rows = []
    for scheme, base in (("hpcc", 2.0), ("dcqcn", 5.0)):
        for load in ("0.3", "0.5"):
            for seed, noise in (("1", 0.0), ("2", 1.0)):
                rows.append({"run": f"{scheme},{load},{seed}", "state": "done", "status": "ok",
                             "cc.scheme": scheme, "traffic[1].load": load, "seed": seed,
                             "slowdown_p99": base * float(load) * 10 + noise, "iteration_mean_ns": ""})
    rows.append({"run": "failed", "state": "failed", "status": "failed", "cc.scheme": "hpcc",
                 "traffic[1].load": "0.9", "seed": "1"})
    root = str(tmp_path / "sweep")
    _write_index(root, rows, ["cc.scheme", "traffic[1].load", "seed"])
    return root


def test_sweep_series_average_seeds_one_line_per_scheme(tmp_path):
    rows, params = index.read_done(_sweep_folder(tmp_path))
    assert params == ["cc.scheme", "traffic[1].load", "seed"] and len(rows) == 8     # failed left out
    xs, lines = sweep_plot.series(rows, "slowdown_p99", "traffic[1].load", "cc.scheme")
    assert xs == ["0.3", "0.5"]
    assert lines == {"hpcc": [6.5, 10.5], "dcqcn": [15.5, 25.5]}
    xs, ys, values = sweep_plot.grid(rows, "slowdown_p99", "traffic[1].load", "cc.scheme")
    assert ys == ["dcqcn", "hpcc"] or ys == ["hpcc", "dcqcn"]
    assert values[ys.index("dcqcn"), 1] == 25.5


def test_rocesim_plot_on_a_sweep_folder(tmp_path, kept_figures, capsys):
    root = _sweep_folder(tmp_path)
    assert cli.main(["plot", root]) == 0
    assert capsys.readouterr().out.strip() == os.path.join(root, "slowdown_p99.png")
    ax = kept_figures[-1].axes[0]
    assert sorted(line.get_label() for line in ax.lines) == ["dcqcn", "hpcc"]
    assert ax.get_xlabel() == "load of traffic[1]" and "mean over seed" in ax.get_title()
    assert ax.get_ylabel() == "FCT slowdown p99, all network flows"
    # the two seeds' spread: a min-max band per line (hpcc: 6-7 at load 0.3, 10-11 at 0.5)
    bands = sorted(sorted(set(c.get_paths()[0].vertices[:, 1])) for c in ax.collections)
    assert bands == [[6.0, 7.0, 10.0, 11.0], [15.0, 16.0, 25.0, 26.0]]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1                # beside the axes, not on the data
    assert cli.main(["plot", root, "--heatmap", "traffic[1].load", "cc.scheme", "-o", str(tmp_path / "h.png")]) == 0
    assert os.path.getsize(tmp_path / "h.png") > 0
    assert cli.main(["plot", root, "--x", "no.such.key"]) == 2
    assert "not a swept parameter" in capsys.readouterr().err


def test_iteration_time_bars_that_differ_by_2_percent_do_not_start_at_zero(kept_figures):
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2)
    axes.zoomed_bars(a, ["none", "hpcc"], [29.7, 30.3])
    axes.zoomed_bars(b, ["none", "timely"], [16.2, 23.6])
    lo, hi = a.get_ylim()
    assert 28.5 < lo < 29.7 and hi > 30.3
    assert any("does not start at 0" in t.get_text() for t in a.texts)
    assert b.get_ylim()[0] == 0
    assert not any("does not start at 0" in t.get_text() for t in b.texts)


def _flows(n, compute=0):
    rng = np.random.default_rng(1)
    size = np.concatenate([rng.integers(1000, 10**6, n), np.full(compute, 5 * 10**9)]).astype(float)
    sd = np.concatenate([1 + rng.random(n) * 10, np.full(compute, 1.0)])
    return {"size_bytes": size, "slowdown": sd, "is_compute": np.r_[np.zeros(n, bool), np.ones(compute, bool)]}


def test_slowdown_plot_leaves_compute_steps_out_and_tells_percentiles_apart(tmp_path, kept_figures):
    plot.plot_slowdown([("run", _flows(200, compute=20))], tmp_path / "s.png")
    fig = kept_figures[-1]
    ax = fig.axes[0]
    assert max(line.get_xdata().max() for line in ax.lines) <= 10**6      # no 5 GB "flow"
    styles = {line.get_label(): (line.get_marker(), line.get_linestyle(), line.get_color()) for line in ax.lines}
    assert len(set(styles.values())) == 3 and styles["run p95"] != styles["run p99"]
    assert styles["run p95"][0] != styles["run p99"][0] and styles["run p95"][2] != styles["run p99"][2]
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    assert labels and not any("$" in t or "^" in t for t in labels)          # plain numbers, no 10^k
    assert any(t.endswith("KB") for t in labels)


def test_an_empty_run_says_so_on_its_figure(tmp_path, kept_figures):
    f = _flows(5)
    f["slowdown"][:] = np.nan
    plot.plot_slowdown([("nothing finished", f)], tmp_path / "e.png")
    assert [t.get_text() for t in kept_figures[-1].axes[0].texts] == [plot.EMPTY_TEXT]
    plot.plot_slowdown([("a", f), ("b", f)], tmp_path / "e2.png")
    assert all(plot.EMPTY_TEXT in [t.get_text() for t in ax.texts] for ax in kept_figures[-1].axes)


def test_keys_varied_together_with_the_scheme_give_a_bar_per_configuration(tmp_path, kept_figures):
    rows = [{"run": f"{s},{w}", "state": "done", "status": "ok", "cc.scheme": s, "cc.params.window": w,
             "iteration_mean_ns": t} for s, w, t in (("none", "", 14.8e6), ("dcqcn", "", 14.5e6),
                                                       ("dcqcn", "bdp", 14.85e6), ("hpcc", "", 15.6e6))]
    root = str(tmp_path / "training")
    _write_index(root, rows, ["cc.scheme", "cc.params.window"])
    sweep_plot.plot_sweep(root)                         # default metric: iteration time
    ax = kept_figures[-1].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "dcqcn", "dcqcn, cc.params.window=bdp", "hpcc"]
    assert [round(p.get_height(), 2) for p in ax.patches] == [14.8, 14.5, 14.85, 15.6]
    assert ax.get_ylim()[0] > 10                       # 2%-apart bars: the axis does not start at zero


def test_bus_bandwidth_is_nccl_tests_figure():
    from rocesim.results.metrics import bandwidths_gbps, bus_factor
    assert bus_factor("allreduce", 4) == 1.5 and bus_factor("alltoall", 4) == 0.75
    assert bus_factor("allgather", 8) == 7 / 8 and bus_factor("broadcast", 8) == 1.0
    coll = {"op": np.array(["allreduce", "alltoall"]), "ranks": np.array([4, 4]),
            "size_bytes": np.array([1e6, 1e6]), "duration_ns": np.array([1e6, np.nan])}
    alg, bw = bandwidths_gbps(coll)               # 1 MB in 1 ms: 8 Gb/s of algorithm bandwidth
    assert alg[0] == pytest.approx(8.0) and bw[0] == pytest.approx(12.0) and np.isnan(bw[1])


def test_timeline_draws_the_busiest_flows_and_ports(tmp_path, kept_figures):
    from rocesim.results.timeline_plot import MAX_LINES, plot_timeline
    t = np.repeat(np.arange(5) * 1000.0, 12)
    rates = {"time_ns": t, "flow_id": np.tile(np.arange(12), 5), "rate_bps": np.full(60, 1e11),
             "throughput_bps": np.tile(np.arange(12) * 1e9, 5)}
    queues = {"time_ns": t[:10], "node": np.full(10, 4), "port": np.tile([1, 3], 5), "queue_bytes": np.arange(10) * 1e3}
    plot_timeline(rates, queues, tmp_path / "t.png")
    top, bottom = kept_figures[-1].axes[:2]
    labels = [ln.get_label() for ln in top.lines if not ln.get_label().startswith("_")]
    assert labels == [f"flow {f}" for f in range(11, 11 - MAX_LINES, -1)]       # the most delivered first
    assert "8 of 12" in top.get_title()
    assert len(bottom.lines) == 2 and bottom.get_xlabel() == "time (us)"


def test_rocesim_plot_draws_collectives_and_timeline(tmp_path, capsys):
    scn = write_scenario(tmp_path, """
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
traffic: [{kind: collective, op: allreduce, algorithm: ring, ranks: all, size: 1MB}]
output: {sample_interval: 10us, plot: false}
""")
    assert cli.main(["run", str(scn), "-o", str(tmp_path / "r"), "-q"]) == 0
    assert cli.main(["plot", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out.split()
    for name in ("slowdown.png", "collectives.png", "timeline.png"):
        assert str(tmp_path / "r" / name) in out and os.path.getsize(tmp_path / "r" / name) > 0


def test_iteration_breakdown_closed_form():
    from rocesim.results.overlap import iteration_breakdown, union_length
    assert union_length(np.array([0.0, 5, 20]), np.array([10.0, 8, 30])) == 20.0
    # host 0 computes [0, 50), sends to host 1 over [40, 100), host 1 computes [100, 130)
    flows = {"iteration": np.array([0, 0, 0]), "is_compute": np.array([True, False, True]),
             "start_ns": np.array([0.0, 40, 100]), "fct_ns": np.array([50.0, 65, 30]),
             "rx_fct_ns": np.array([np.nan, 60, np.nan]), "src": np.array([0, 0, 1]), "dst": np.array([0, 1, 1])}
    its = {"iteration": np.array([0]), "start_ns": np.array([0.0]), "finish_ns": np.array([130.0])}
    b = iteration_breakdown(flows, its)
    # host 0: compute 50, overlap 10 (40-50), exposed 50 (50-100); host 1: 30, 0, 60
    assert (b["compute_ns"][0], b["overlap_ns"][0], b["exposed_comm_ns"][0]) == (40.0, 5.0, 55.0)
    its["duration_ns"] = np.array([130.0])
    its.update(b)
    shares = plot.iteration_shares(its)
    assert shares == pytest.approx([35 / 130 * 100, 5 / 130 * 100, 55 / 130 * 100, 35 / 130 * 100])
