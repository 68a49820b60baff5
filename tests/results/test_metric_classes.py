"""Metrics by class (rocesim.results.metrics): network flows, background, collectives, iterations.

What a researcher reads on a training run with background traffic, in summary.json, the
terminal, a sweep's index.csv and table, and the figures; a run whose stop time comes
before its iteration ends reports it unfinished and still exits 0."""
import json
import warnings

import numpy as np
import pytest

from helpers import interrupt_on_slice, write_scenario
from rocesim import cli, scenario, sweep
from rocesim.results import read_csv
from rocesim.results.metrics import background_mask

LEAF_SPINE = {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 4,
              "host_link": {"rate": "100Gbps", "delay": "1us"}, "fabric_link": {"rate": "100Gbps", "delay": "1us"}}
# a DLRM iteration on 8 hosts, with WebSearch and an incast on a lower priority beside it
TRAINING = {"topology": LEAF_SPINE, "seed": 3,
            "traffic": [{"kind": "workload", "model": "dlrm", "iterations": 1, "params": {"local_batch": 256}},
                        {"kind": "cdf", "distribution": "websearch", "load": 0.5, "duration": "2ms", "prio": 5},
                        {"kind": "incast", "senders": [1, 2, 3, 5, 6, 7], "receiver": 4, "size": "2MB",
                         "start": "1ms"}]}


@pytest.fixture(scope="module")
def mixed():
    return scenario.build(TRAINING).sim.run()


def _pct(values, p):
    v = values[~np.isnan(values)]
    return round(float(np.percentile(v, p)), 4)


def test_background_slowdown_is_reported_apart_from_the_collectives(mixed):
    s, f = mixed.summary, mixed.flows
    network = ~f["is_compute"]
    background = network & (f["collective"] < 0) & (f["iteration"] < 0)
    assert background.sum() == s["background_flows"] > 0 and (network & ~background).sum() > 0
    assert (background_mask(f) == background).all()
    for p in (50, 95, 99):
        assert s[f"slowdown_p{p}"] == _pct(f["slowdown"][network], p)
        assert s[f"background_slowdown_p{p}"] == _pct(f["slowdown"][background], p)
    # the collectives' chunk flows are many and alike: the classes really differ here
    assert s["background_slowdown_p99"] != s["slowdown_p99"]


def test_collective_and_iteration_metrics_and_bus_bandwidth(mixed):
    s, c, it = mixed.summary, mixed.collectives, mixed.iterations
    assert s["collectives"] == len(c["op"]) == s["collectives_completed"]
    d = c["duration_ns"]
    assert s["collective_duration_p50_ns"] == round(float(np.percentile(d, 50)), 4)
    assert s["collective_duration_p99_ns"] == round(float(np.percentile(d, 99)), 4)
    assert s["iterations"] == s["iterations_completed"] == 1
    assert s["iteration_mean_ns"] == s["iteration_p99_ns"] == round(float(it["duration_ns"][0]), 4)
    # nccl-tests: algbw = size / time, busbw = algbw x 2(n-1)/n for an all-reduce, (n-1)/n all-to-all
    n = c["ranks"].astype(float)
    factor = np.where(c["op"] == "allreduce", 2 * (n - 1) / n, np.where(c["op"] == "alltoall", (n - 1) / n, 1.0))
    assert np.allclose(c["algbw_gbps"], 8 * c["size_bytes"] / d)
    assert np.allclose(c["busbw_gbps"], c["algbw_gbps"] * factor)
    assert (c["busbw_gbps"] < 100).all()          # no rank's link carries more than its 100 Gb/s


def test_terminal_prints_each_class(mixed):
    text = mixed.describe()
    s = mixed.summary
    assert f"FCT slowdown (all {s['data_flows']:,} network flows)" in text
    assert f"FCT slowdown ({s['background_flows']:,} background flows)  p50 {s['background_slowdown_p50']:.2f}" in text
    assert f"collectives: {s['collectives']}/{s['collectives']} finished, duration  p50 " in text
    assert f"training iterations: 1/1 finished, mean {s['iteration_mean_ns'] / 1e6:.3f} ms" in text


def test_background_only_run_keeps_its_one_slowdown_line():
    raw = {"topology": LEAF_SPINE, "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0,
                                                 "size": "100KB"}]}
    res = scenario.build(raw).sim.run()
    s = res.summary
    assert s["background_flows"] == 3 and s["background_slowdown_p99"] == s["slowdown_p99"]
    assert "collectives" not in s and "iterations" not in s
    lines = [x for x in res.describe().splitlines() if x.startswith("FCT slowdown")]
    assert len(lines) == 1 and lines[0].startswith("FCT slowdown  p50")


def test_a_training_run_stopped_before_its_iteration_ends(tmp_path, capsys):
    """`--set stop=...` before the iteration ends: exit 0, a summary with the iteration
    unfinished, figures of what finished, no numpy warnings, and the terminal says so."""
    path = write_scenario(tmp_path, TRAINING, "t.yaml")
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # "All-NaN slice", "Mean of empty slice"
        assert cli.main(["run", str(path), "-o", str(out), "--set", "stop=300us", "-q"]) == 0
    text = capsys.readouterr().out
    s = json.loads((out / "summary.json").read_text())
    assert s["stopped_at_limit"] and s["iterations"] == 1 and s["iterations_completed"] == 0
    assert s["iteration_mean_ns"] is None and s["iteration_p99_ns"] is None
    assert "training iterations: 0/1 finished" in text and "the stop time (300us) was reached" in text
    it = read_csv(out / "iterations.csv")
    assert it["start_ns"][0] == 0 and np.isnan(it["finish_ns"][0]) and np.isnan(it["duration_ns"][0])
    for png in ("training.png", "slowdown.png", "collectives.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert "nan" not in text


def test_a_run_that_never_starts_its_iteration_has_no_warnings():
    raw = dict(TRAINING, traffic=[dict(TRAINING["traffic"][0], start="1ms")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = scenario.build(raw).sim.run("500us")
    it = res.iterations
    assert np.isnan(it["start_ns"][0]) and np.isnan(it["duration_ns"][0])
    assert res.summary["iterations_completed"] == 0 and res.summary["collectives_completed"] == 0


def test_sweep_index_and_table_carry_both_classes(tmp_path, capsys):
    sw = sweep.expand({"base": TRAINING, "grid": {"cc.scheme": ["none", "dctcp"]}})
    out = str(tmp_path / "sw")
    sweep.run_runs(sw, out, processes=1, progress=False)
    idx = read_csv(f"{out}/index.csv")
    for run, name in zip(idx["run"], ("none", "dctcp")):
        s = json.loads(open(f"{out}/{run}/summary.json").read())
        k = list(idx["run"]).index(run)
        for m in ("slowdown_p99", "background_slowdown_p99", "collective_duration_p50_ns", "iteration_mean_ns",
                  "iteration_p99_ns"):
            assert idx[m][k] == pytest.approx(s[m])
    assert cli.main(["table", out]) == 0                # a training sweep with background: both by default
    head = capsys.readouterr().out.splitlines()[0]
    assert head == "| congestion-control scheme | iteration time, mean (ms) | FCT slowdown p99, background flows | runs |"


def test_slowdown_figure_of_one_run_draws_background_apart(mixed, tmp_path, kept_figures):
    from rocesim.results import plot
    plot.plot_slowdown([("run", mixed.data_flows())], tmp_path / "s.png")
    labels = [line.get_label() for line in kept_figures[-1].axes[0].lines]
    assert "run: background flows p99" in labels and "run: training flows p99" in labels


def test_ctrl_c_during_a_training_run_exits_130_with_its_results(tmp_path, monkeypatch, capsys):
    import rocesim.simulation as simulation
    monkeypatch.setattr(simulation.RunProgress, "update", interrupt_on_slice(3, []))
    path = write_scenario(tmp_path, TRAINING, "t.yaml")
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "-o", str(out)]) == 130
    s = json.loads((out / "summary.json").read_text())
    assert s["interrupted"] and s["iterations_completed"] == 0
    assert (out / "training.png").is_file() and "interrupted: results are partial" in capsys.readouterr().out
