"""OUTPUTS.md documents every file and column rocesim writes."""
import csv
import json
import os
import re

from helpers import ROOT
from rocesim import cli
from rocesim.results import run as results_run
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


def _marked_rows(file_heading: str) -> dict:
    """{column or key: its table row} of OUTPUTS.md's section on `file_heading` (a file name)."""
    with open(os.path.join(ROOT, "OUTPUTS.md")) as f:
        sections = re.split(r"^#{2,3} ", f.read(), flags=re.M)
    section, = [s for s in sections if s.split("\n", 1)[0].startswith(f"`{file_heading}`")]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            for name in re.findall(r"`([^`\s]+)`", line.split(" | ")[0]):
                rows[name] = line
    return rows


# flow mode: every file a flow-mode run writes, with training and background traffic
FLOW_EVERYTHING = """
mode: flow
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
traffic:
  - {kind: incast, senders: [1, 2, 3], receiver: 0, size: 200KB}
  - {kind: collective, op: allreduce, algorithm: ring, ranks: all, size: 1MB}
  - {kind: workload, model: resnet50, ranks: all, iterations: 1, params: {batch_time_us: 100}}
output: {hpcc_fct: true, plot: false}
"""


def test_outputs_md_marks_exactly_what_a_flow_mode_run_leaves_empty(tmp_path, capsys):
    """The columns and keys rocesim leaves empty in flow mode (results.run.FLOW_MODE_EMPTY_*)
    are the ones a flow-mode run writes empty, and OUTPUTS.md marks those and no others."""
    (tmp_path / "flow.yaml").write_text(FLOW_EVERYTHING)
    out = tmp_path / "out"
    assert cli.main(["run", str(tmp_path / "flow.yaml"), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    assert sorted(os.listdir(out)) == ["collectives.csv", "fct.txt", "flows.csv", "iterations.csv", "pfc.csv",
                                       "ports.csv", "summary.json"]
    with open(out / "summary.json") as f:
        summary = json.load(f)
    assert summary["mode"] == "flow" and summary["flows_completed"] == summary["flows_total"]
    empty = {}
    for name in ("flows.csv", "ports.csv", "pfc.csv"):
        with open(out / name, newline="") as f:
            header, *rows = list(csv.reader(f))
        empty[name] = {c for j, c in enumerate(header) if all(r[j] == "" for r in rows)}
    assert empty["flows.csv"] == set(results_run.FLOW_MODE_EMPTY_FLOWS)
    ports_written = set(results_run.FLOW_MODE_EMPTY_PORTS) & set(_marked_rows("ports.csv"))
    assert empty["ports.csv"] == ports_written                     # tx_bytes and the rest are filled
    assert len(empty["pfc.csv"]) == 6                               # a header and no rows
    assert {k for k, v in summary.items() if v is None} >= set(results_run.FLOW_MODE_EMPTY_SUMMARY)
    expected = {"flows.csv": set(results_run.FLOW_MODE_EMPTY_FLOWS), "ports.csv": ports_written,
                "summary.json": set(results_run.FLOW_MODE_EMPTY_SUMMARY)}
    for name, names in expected.items():
        rows = _marked_rows(name)
        marked = {c for c, line in rows.items() if re.search(r"(empty|null) in flow mode", line)}
        assert marked == names, f"{name}: OUTPUTS.md marks {sorted(marked ^ names)} wrongly"
