"""Sweeps: jobs run in processes, each into its own folder; finished ones are kept and skipped."""
import json
import os

from rocesim.sweep import Job, run_job, run_sweep

SCENARIO = """
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
traffic: [{kind: incast, senders: [1, 2, 3], receiver: 0, size: 100KB}]
output: {plot: false}
"""


def jobs(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    return [Job(f"{cc}", str(path), (f"cc.scheme={cc}",), str(tmp_path / "out" / cc)) for cc in ("none", "dctcp")]


def test_sweep_runs_every_job_and_resumes(tmp_path):
    js = jobs(tmp_path)
    done = run_sweep(js, processes=2, report=None)
    assert set(done) == {"none", "dctcp"}
    for j in js:
        with open(os.path.join(j.outdir, "summary.json")) as f:
            assert json.load(f)["scheme"] == j.name
    stamp = os.path.getmtime(os.path.join(js[0].outdir, "flows.csv"))
    again = run_job(js[0])                       # finished: read back, not run again
    assert again["scheme"] == "none"
    assert os.path.getmtime(os.path.join(js[0].outdir, "flows.csv")) == stamp


def test_an_incomplete_folder_is_run_again(tmp_path):
    j = jobs(tmp_path)[0]
    os.makedirs(j.outdir)
    open(os.path.join(j.outdir, "flows.csv"), "w").close()        # left by a killed run
    summary = run_job(j)
    assert summary["flows_completed"] == 3
    assert os.path.isfile(os.path.join(j.outdir, "summary.json"))


def test_job_as_a_command_line(tmp_path):
    j = jobs(tmp_path)[1]
    assert j.command() == f"rocesim run {j.scenario} -o {j.outdir} -q --no-plot --set 'cc.scheme=dctcp'"
