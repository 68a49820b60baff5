"""OUTPUTS.md documents every file and column rocesim writes."""
import csv
import json
import os
import re

from helpers import ROOT
from rocesim import cli
from rocesim.sweep import index


# a scenario that writes every file: training, sampling, faults, deadlock detection, pauses
EVERYTHING = """
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 1MB}
traffic:
  - {kind: incast, senders: [1, 2, 3], receiver: 0, size: 2MB}
  - {kind: collective, op: allreduce, algorithm: ring, ranks: all, size: 1MB}
  - {kind: workload, model: resnet50, ranks: all, iterations: 1, params: {batch_time_us: 100}}
faults: [{kind: link_rate, link: [0, 4], at: 10us, rate: 50Gbps}]
deadlock: {enabled: true}
output: {sample_interval: 20us, hpcc_fct: true}
"""


def _documented():
    with open(os.path.join(ROOT, "OUTPUTS.md")) as f:
        text = f.read()
    return set(re.findall(r"`([^`\s]+)`", text))


def test_every_file_and_column_written_is_in_outputs_md(tmp_path, capsys):
    (tmp_path / "all.yaml").write_text(EVERYTHING)
    out = tmp_path / "out"
    assert cli.main(["run", str(tmp_path / "all.yaml"), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    documented = _documented()
    files = sorted(os.listdir(out))
    assert {"flows.csv", "rates.csv", "queues.csv", "faults.csv", "deadlocks.csv", "pfc_timeline.csv",
            "collectives.csv", "iterations.csv", "fct.txt", "training.png"} <= set(files)
    missing = [f for f in files if f not in documented]
    for name in files:
        if name.endswith(".csv"):
            with open(out / name, newline="") as f:
                missing += [f"{name}:{c}" for c in next(csv.reader(f)) if c not in documented]
    with open(out / "summary.json") as f:
        missing += [f"summary.json:{k}" for k in json.load(f) if k not in documented]
    missing += [f"index.csv:{c}" for c in index.columns([]) if c not in documented]
    missing += [f for f in ("params.json", "error.txt", "index.csv", "index.parquet") if f not in documented]
    assert not missing, f"not documented in OUTPUTS.md: {missing}"
