"""Batch sweeps: many (scenario, overrides) runs on the cores of one machine.

Each job writes its own result folder, and a job whose folder already holds a
summary.json is not run again: an interrupted sweep keeps every finished result and
resumes where it stopped.  Jobs are independent processes' work, so the same job list
can be handed to a cluster engine (e.g. one `rocesim run SCENARIO -o DIR --set ...`
per job) instead of `run_sweep`.

    jobs = [Job("ws30-hpcc", "scenarios/hpcc_paper/websearch30.yaml", ["cc.scheme=hpcc"],
                "out/ws30/hpcc")]
    summaries = run_sweep(jobs, processes=2)
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field


# The congestion-control configurations compared by the shipped sweeps (--set overrides).
SCHEME_VARIANTS = {
    "pfc-only": ["cc.scheme=none"],
    "dcqcn": ["cc.scheme=dcqcn"],
    "dcqcn+win": ["cc.scheme=dcqcn", "cc.params.window=bdp"],
    "hpcc": ["cc.scheme=hpcc"],
    "timely": ["cc.scheme=timely"],
    "dctcp": ["cc.scheme=dctcp"],
    "swift": ["cc.scheme=swift"],
}


@dataclass(frozen=True)
class Job:
    name: str
    scenario: str                          # path of a YAML scenario
    overrides: tuple = field(default=())   # "key.path=value" strings
    outdir: str = "."

    def command(self) -> str:
        """The same job as one shell command (for a cluster's job array)."""
        sets = " ".join(f"--set '{o}'" for o in self.overrides)
        return f"rocesim run {self.scenario} -o {self.outdir} -q --no-plot {sets}".strip()


def run_job(job: Job) -> dict:
    """Run one job unless its summary exists; returns the summary (with `run_wall_s`)."""
    from rocesim import scenario
    path = os.path.join(job.outdir, "summary.json")
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    scn = scenario.load(job.scenario, list(job.overrides))
    t0 = time.time()
    res = scn.sim.run(scn.stop, progress=False, sample_interval=scn.output["sample_interval"],
                      queue_ports=scn.output["queue_ports"])
    res.summary["run_wall_s"] = round(time.time() - t0, 1)
    tmp = job.outdir + ".partial"
    res.write(tmp, flows_format=scn.output["flows_format"], hpcc_fct=scn.output["hpcc_fct"])
    if os.path.isdir(job.outdir):                       # a half-written earlier attempt
        import shutil
        shutil.rmtree(job.outdir)
    os.replace(tmp, job.outdir)                         # the folder appears complete or not at all
    return res.summary


def run_sweep(jobs, processes: int = 2, report=print) -> dict:
    """Run `jobs` (`processes` at a time); returns {job name: summary} as they finish."""
    done = {}
    with ProcessPoolExecutor(max(1, processes)) as pool:
        futures = {pool.submit(run_job, j): j for j in jobs}
        for fut in as_completed(futures):
            job = futures[fut]
            summary = fut.result()
            done[job.name] = summary
            if report:
                report(f"{job.name}: {summary['flows_completed']}/{summary['flows_total']} flows, "
                       f"{summary.get('run_wall_s', summary['wall_s'])} s")
    return done
