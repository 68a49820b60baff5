"""Sweeps on Dask (rocesim.sweep.cluster): the same runs and index as the local process pool.

Skipped when distributed is not installed: pip install ".[dask]"."""
import csv
import os

import pytest

from rocesim import sweep

distributed = pytest.importorskip("distributed")

SWEEP = {"base": {"topology": {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"}},
                  "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "200KB"},
                              {"kind": "cdf", "distribution": "websearch", "load": 0.3, "duration": "30us"}]},
         "grid": {"cc.scheme": ["none", "dcqcn", "hpcc"]}, "zip": {"nic.ack_every": [1, 2]}, "seeds": [1, 2]}

TIMING = {"cpu_s"}          # the only columns that may differ between two runs of a scenario


def _index(root):
    with open(os.path.join(root, "index.csv"), newline="") as f:
        return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(f)]


def test_dask_local_cluster_matches_the_local_pool(tmp_path):
    sw = sweep.expand(SWEEP)
    local = sweep.run_runs(sw, str(tmp_path / "local"), processes=2, progress=False)
    assert (local.done, local.failed) == (12, 0)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        rep = sweep.run_runs(sw, str(tmp_path / "dask"), scheduler=client, progress=False)
        assert (rep.done, rep.failed) == (12, 0)
        again = sweep.run_runs(sw, str(tmp_path / "dask"), scheduler=client, progress=False)
        assert (again.skipped, again.done) == (12, 0)                 # resumes like the local pool
    rows = _index(tmp_path / "dask")
    assert len(rows) == 12 and rows == _index(tmp_path / "local")
    assert sorted(os.listdir(tmp_path / "dask")) == sorted(os.listdir(tmp_path / "local"))
    for r in rows:                       # each run's files are the same, byte for byte
        for f in ("flows.csv", "ports.csv"):
            with open(tmp_path / "dask" / r["run"] / f, "rb") as a, open(tmp_path / "local" / r["run"] / f, "rb") as b:
                assert a.read() == b.read()
