"""Run results (rocesim.results): arrays, flows.csv and Parquet, HPCC fct.txt, slowdown bins, plots."""
import csv
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from rocesim import Simulation, topology
from rocesim import scenario as sc
from rocesim.results.metrics import PERCENTILES, format_bins, slowdown_by_size
from rocesim.results.plot import plot_dirs, plot_slowdown
from rocesim.results import FLOW_COLUMNS, Results, read_flows_csv, write_csv

US = 10**6
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def partial():
    """Three hosts on a switch: two short flows that finish and a 1 MB flow cut off at 30 us."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    sim.add_flow(1, 0, "20KB")
    sim.add_flow(2, 0, "15KB", "2us", prio=5, tag=4)
    sim.add_flow(1, 2, "1MB")
    return sim.run("30us", progress=False)


def _equal_nan(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def test_results_arrays(partial):
    f, s = partial.flows, partial.summary
    assert partial.completed.tolist() == [True, True, False]
    assert np.isnan(f["fct_ns"][2]) and np.isnan(f["slowdown"][2])
    assert (f["fct_ns"][:2] >= f["ideal_fct_ns"][:2]).all()
    np.testing.assert_allclose(f["slowdown"][:2], f["fct_ns"][:2] / f["ideal_fct_ns"][:2])
    assert f["start_ns"].tolist() == [0, 2000, 0]
    assert f["prio"].tolist() == [3, 5, 3] and f["tag"].tolist() == [0, 4, 0]
    assert s["flows_total"] == 3 and s["flows_completed"] == 2
    assert s["stopped_at_limit"] is True and 29_000 < s["sim_time_ns"] <= 30_000
    assert s["slowdown_p50"] == round(float(np.median(f["slowdown"][:2])), 4)
    assert s["slowdown_max"] == round(float(np.max(f["slowdown"][:2])), 4)
    assert "2/3 flows completed" in partial.describe()
    assert set(partial.data_flows()) == set(f)


def test_flows_csv_round_trip(partial, tmp_path):
    written = partial.write(tmp_path)
    assert written == [str(tmp_path / n) for n in ("flows.csv", "ports.csv", "pfc.csv", "summary.json")]
    with open(tmp_path / "flows.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == FLOW_COLUMNS
    assert len(rows) == 4
    fct = FLOW_COLUMNS.index("fct_ns")
    assert rows[3][fct] == "" and rows[3][FLOW_COLUMNS.index("slowdown")] == ""
    assert rows[1][fct] != "" and float(rows[1][fct]) > 0
    back = read_flows_csv(tmp_path / "flows.csv")
    assert list(back) == list(FLOW_COLUMNS)
    for name in FLOW_COLUMNS:
        want = np.round(np.asarray(partial.flows[name], float), 3)       # times are written to the ps
        assert _equal_nan(back[name], want), name
    summary = json.loads((tmp_path / "summary.json").read_text())
    for key in ("events", "link_crossings", "drops", "pfc_pauses", "flows_total", "flows_completed",
                "sim_time_ns", "wall_s"):
        assert summary[key] == partial.summary[key], key
    with open(tmp_path / "ports.csv", newline="") as fh:
        ports = list(csv.DictReader(fh))
    assert len(ports) == 6                                              # 3 links, 2 ports each
    assert sum(int(p["tx_bytes"]) for p in ports) == int(partial.ports["tx_bytes"].sum())
    assert [int(p["peer_node"]) for p in ports] == partial.ports["peer_node"].tolist()


def test_write_csv_cells(tmp_path):
    path = tmp_path / "x.csv"
    write_csv(path, {"i": np.array([1, -2]), "f": np.array([1.0, np.nan]), "g": np.array([2.5, 1e-4]),
                     "b": np.array([True, False])})
    assert path.read_text().splitlines() == ["i,f,g,b", "1,1,2.500,1", "-2,,0,0"]
    back = read_flows_csv(path)
    assert back["i"].tolist() == [1, -2] and _equal_nan(back["f"], [1.0, np.nan])


def test_unknown_flows_format(partial, tmp_path):
    with pytest.raises(ValueError, match="flows_format must be 'csv' or 'parquet'"):
        partial.write(tmp_path, flows_format="json")


def test_parquet_without_pyarrow(partial, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)                 # as if not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(RuntimeError, match=r"flows_format 'parquet' needs pyarrow: pip install"):
        partial.write(tmp_path, flows_format="parquet")
    assert not (tmp_path / "flows.parquet").exists()


def test_parquet_with_pyarrow(partial, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    written = partial.write(tmp_path, flows_format="parquet")
    assert written[0] == str(tmp_path / "flows.parquet") and not (tmp_path / "flows.csv").exists()
    table = pq.read_table(tmp_path / "flows.parquet")
    assert tuple(table.column_names) == FLOW_COLUMNS
    for name in FLOW_COLUMNS:
        assert _equal_nan(table.column(name).to_numpy(), partial.flows[name]), name
    # the plot reads a parquet folder too
    out = plot_dirs([str(tmp_path)], str(tmp_path / "p.png"))[0]
    assert Path(out).read_bytes()[:8] == PNG


# --- the HPCC fct.txt file ----------------------------------------------------------------


HPCC_TOPO = """\
6 2 5
1 4
0 1 100Gbps 1000ns 0
2 1 100Gbps 1000ns 0
1 4 100Gbps 1000ns 0
3 4 100Gbps 1000ns 0
5 4 100Gbps 1000ns 0
"""
HPCC_FLOWS = """\
3
0 5 3 100 10000 0.000001
3 2 3 100 5000 0
5 0 3 100 3000000 0
"""


def _ip_node(text):
    ip = int(text, 16)
    assert ip >> 24 == 0x0B and ip & 0xFF == 1
    return (ip >> 8) & 0xFFFF


def test_hpcc_fct_file(tmp_path):
    (tmp_path / "topo.txt").write_text(HPCC_TOPO)
    (tmp_path / "flows.txt").write_text(HPCC_FLOWS)
    raw = {"seed": 1, "stop": "60us", "topology": {"kind": "hpcc_file", "path": "topo.txt"},
           "traffic": [{"kind": "hpcc_flow_file", "path": "flows.txt"}], "output": {"hpcc_fct": True}}
    scn = sc.build(raw, str(tmp_path))
    res = scn.sim.run(scn.stop, progress=False)
    assert res.completed.tolist() == [True, True, False]                # 3 MB does not fit in 60 us
    written = res.write(tmp_path / "out", hpcc_fct=scn.output["hpcc_fct"])
    assert written[-1] == str(tmp_path / "out" / "fct.txt")
    lines = (tmp_path / "out" / "fct.txt").read_text().splitlines()
    assert len(lines) == 2                                              # finished flows only
    f = res.flows
    file_pairs = [(0, 5), (3, 2)]                                       # node ids of the files, not rocesim's
    for i, line in enumerate(lines):
        fields = line.split()
        assert len(fields) == 8
        sip, dip, sport, dport, size, start, fct, ideal = fields
        assert len(sip) == 8 and len(dip) == 8
        assert (_ip_node(sip), _ip_node(dip)) == file_pairs[i]
        assert int(sport) == 10000 + i and int(dport) == 100
        assert int(size) == f["size_bytes"][i]
        assert int(start) == round(f["start_ns"][i])
        assert int(fct) == round(f["fct_ns"][i]) and int(ideal) == round(f["ideal_fct_ns"][i])
    assert int(lines[0].split()[5]) == 1000                              # 1 us in ns


def test_hpcc_fct_ip_of_large_node_ids(tmp_path):
    res = Results(flows={"flow_id": np.array([0]), "src": np.array([300]), "dst": np.array([2]),
                         "size_bytes": np.array([1000]), "start_ns": np.array([1.4]),
                         "fct_ns": np.array([2000.6]), "ideal_fct_ns": np.array([1500.0]),
                         "is_compute": np.array([False])}, ports={}, summary={})
    line = Path(res.write_hpcc_fct(tmp_path / "fct.txt")).read_text()
    assert line == "0b012c01 0b000201 10000 100 1000 1 2001 1500\n"      # 300 = 0x012c
    assert _ip_node("0b012c01") == 300


# --- metrics --------------------------------------------------------------------------------


def test_slowdown_by_size_bins_and_percentiles():
    rng = np.random.default_rng(0)
    sizes = np.arange(1, 401) * 10                                      # 4 bins of 100 flows
    slowdown = np.empty(400)
    for b in range(4):                                                  # bin b holds 1..100 + 1000 b
        slowdown[b * 100:(b + 1) * 100] = rng.permutation(np.arange(1, 101)) + 1000 * b
    order = rng.permutation(400)                                        # input order must not matter
    sizes_in, slow_in = sizes[order], slowdown[order]
    # unfinished flows (NaN) are left out
    sizes_in = np.concatenate([sizes_in, [5, 4005]])
    slow_in = np.concatenate([slow_in, [np.nan, np.nan]])
    bins = slowdown_by_size(sizes_in, slow_in, n_bins=4)
    assert bins["count"].tolist() == [100, 100, 100, 100]
    assert bins["size_max"].tolist() == [1000, 2000, 3000, 4000]
    assert bins["size_median"].tolist() == [505, 1505, 2505, 3505]
    offsets = 1000 * np.arange(4)
    np.testing.assert_allclose(bins["p50"], 50.5 + offsets)             # linear interpolation of 1..100
    np.testing.assert_allclose(bins["p95"], 95.05 + offsets)
    np.testing.assert_allclose(bins["p99"], 99.01 + offsets)
    assert PERCENTILES == (50, 95, 99)


def test_slowdown_by_size_bin_counts():
    bins = slowdown_by_size(np.arange(10), np.ones(10), n_bins=3)
    assert bins["count"].tolist() == [4, 3, 3] and bins["size_max"].tolist() == [3, 6, 9]
    bins = slowdown_by_size([5, 1, 3], [2.0, 1.0, 3.0], n_bins=20)     # more bins than flows
    assert bins["count"].tolist() == [1, 1, 1] and bins["p99"].tolist() == [1.0, 3.0, 2.0]
    bins = slowdown_by_size([1, 2], [np.nan, np.nan])
    assert all(v.size == 0 for v in bins.values())


def test_format_bins():
    text = format_bins(slowdown_by_size(np.arange(1, 5) * 1000, [1.0, 2.0, 3.0, 4.0], n_bins=2))
    lines = text.splitlines()
    assert lines[0].split() == ["size<=", "flows", "p50", "p95", "p99"]
    assert lines[1].split() == ["2000", "2", "1.50", "1.95", "1.99"]
    assert lines[2].split() == ["4000", "2", "3.50", "3.95", "3.99"]


# --- plots ------------------------------------------------------------------------------------


def test_plot_slowdown_and_dirs(partial, tmp_path):
    out = plot_slowdown([("a", partial.data_flows()), ("b", partial.data_flows())], tmp_path / "s.png")
    assert Path(out).read_bytes()[:8] == PNG
    empty = {k: v[2:] for k, v in partial.flows.items()}                # only the unfinished flow
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                  # e.g. an empty legend
        assert Path(plot_slowdown([("none done", empty)], tmp_path / "e.png")).read_bytes()[:8] == PNG
    partial.write(tmp_path / "run1")
    partial.write(tmp_path / "run2")
    assert plot_dirs([str(tmp_path / "run1"), str(tmp_path / "run2")]) == [str(tmp_path / "run1" / "slowdown.png")]
    assert (tmp_path / "run1" / "slowdown.png").read_bytes()[:8] == PNG
    with pytest.raises(FileNotFoundError, match="holds no flows.csv"):
        plot_dirs([str(tmp_path)])


def test_a_compute_step_sends_no_bytes(tmp_path):
    """A compute step's size is 0 in the results and flows.csv (its fct_ns is its duration):
    the bytes of flows.csv sum to the bytes that crossed the network."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    f = sim.add_flow(1, 0, 20_000)
    c = sim.add_compute(0, "5us", after=[f])
    res = sim.run(progress=False)
    assert res.flows["size_bytes"][c] == 0 and res.flows["fct_ns"][c] == pytest.approx(5000)
    assert sim.flow_column("duration")[c] == 5 * 10**6 and sim.flow_column("size")[c] == 0
    assert res.flows["size_bytes"].sum() == res.summary["data_bytes_delivered"] == 20_000
    res.write(tmp_path)
    with open(tmp_path / "flows.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[c]["size_bytes"] == "0" and rows[f]["size_bytes"] == "20000"
