"""Parallel-core benchmarks (pytest-benchmark, issues 20 and 33): a run in parts on 1 and 2
threads and on `threads: auto`, on an idle machine and on a loaded one.

    pytest benchmarks/test_parallel.py                                  # full size
    pytest benchmarks/test_parallel.py -k idle                          # the idle machine only
    ROCESIM_BENCH_QUICK=1 pytest benchmarks/ --benchmark-disable        # CI smoke: tiny

Each run is in a fresh interpreter and records in `extra_info` its wall and CPU seconds
(`Simulation.run`, the core and the Python between its slices, not the build), its peak
RSS, its parts, its link crossings, the threads it used (summary.json's `threads_mean`
and `threads_final`) and the machine's 1-minute load average when it started.

* `test_idle`: the k=16 fat-tree permutation (1 MB per host, no CC), the HPCC fork's
  320-host WebSearch run (30% load, 2 ms, DCQCN), scenarios/platforms/gpt_1024.yaml and
  scenarios/platforms/simai_gpt13b.yaml (packet level), in one part (`partition: none`,
  the engine as before) and at `pods` and `leaves` on 1 and 2 threads and `auto`.  The
  speed-up of 2 threads is wall(1 thread) / wall(2 threads) at the same partition.  Its
  figures mean something only on an otherwise idle machine (a load average under 0.5
  before each run: the README's Speed section says how its figures were taken).
* `test_loaded`: the quickstart, the 320-host run and gpt_1024 at the default partition,
  with one busy process per core that the benchmark starts before and stops after:
  `--threads 1` and `auto`, alternated (twice each, in the order 1, auto, auto, 1; quick:
  once); `extra_info` has each
  one's wall seconds and `auto_over_one`, the ratio of their medians (the issue's bound:
  at most 1.10).
* `test_interleaved`: the idle cases at `leaves` in one run whose thread count takes turns,
  1 and 2, every few windows (`TURN_WINDOWS`; debug.thread_schedule); `extra_info` has each
  count's wall seconds, events and windows (debug.thread_rates) and `speedup`, the ratio of
  their events per wall second: the figure a machine whose speed drifts over minutes moves
  least (benchmarks/threads_interleaved.py runs it by hand, between trees).

The results are the same for any thread count (tests/core/test_threads.py), so no figure
here depends on it but time.  No test asserts a speed.
"""
import os
import statistics
import subprocess
import sys

import pytest

from test_scale import QUICK, child, run_child

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.path.join(HERE, "..", "scenarios")

CASES = {
    "k16_permutation_1MB": f"""
t = topology.fat_tree({4 if QUICK else 16}, "100Gbps", "1us")
sim = Simulation(t, seed=1, partition=PARTITION)
sim.add_flows(traffic.permutation(t.n_hosts, {100_000 if QUICK else 1_000_000}, 0, np.random.default_rng(1)))
STOP = None
""",
    "hpcc320_websearch_30pct_2ms_dcqcn": f"""
t = topology.hpcc_320()
sim = Simulation(t, seed=1, cc="dcqcn", partition=PARTITION)
sim.add_flows(traffic.poisson_cdf(t.n_hosts, 100e9, 0.3, {50 * 10**6 if QUICK else 2 * 10**9}, traffic.WEBSEARCH,
                                  np.random.default_rng(1)))
STOP = None
""",
    "gpt_1024": f"""
from rocesim import scenario
quick = {["topology.servers=16", "topology.servers_per_pod=4", "stop=100us"] if QUICK else []!r}
scn = scenario.load({os.path.join(SCENARIOS, "platforms", "gpt_1024.yaml")!r}, ["mode=packet", f"partition={{PARTITION}}", *quick])
sim, STOP = scn.sim, scn.stop
""",
    "simai_gpt13b": f"""
from rocesim import scenario
quick = {["stop=20ms"] if QUICK else []!r}
scn = scenario.load({os.path.join(SCENARIOS, "platforms", "simai_gpt13b.yaml")!r}, ["mode=packet", f"partition={{PARTITION}}", *quick])
sim, STOP = scn.sim, scn.stop
""",
    "quickstart": f"""
from rocesim import scenario
quick = {["stop=300us"] if QUICK else []!r}
scn = scenario.load({os.path.join(SCENARIOS, "quickstart.yaml")!r}, [f"partition={{PARTITION}}", *quick])
sim, STOP = scn.sim, scn.stop
""",
}
RUN = """
load = os.getloadavg()[0]
res = sim.run(STOP, progress=False, threads=THREADS)     # (STOP: the quick form's stop, or None)
s = res.summary
out = dict(wall_s=s["wall_s"], run_cpu_s=s["cpu_s"], parts=s["parts"], crossings=s["link_crossings"],
           flows=s["flows_total"], completed=s["flows_completed"], stopped=s["stopped_at_limit"],
           threads_mean=s["threads_mean"], threads_final=s["threads_final"], load=load)
"""

IDLE_CASES = ("k16_permutation_1MB", "hpcc320_websearch_30pct_2ms_dcqcn", "gpt_1024", "simai_gpt13b")
# windows per turn of a thread count: ten turns or more each, of milliseconds (the k=16 run has
# 437 windows, the HPCC run 5.5 k, simai_gpt13b 211 k; docs/parallel_core.md, section 21)
TURN_WINDOWS = {"k16_permutation_1MB": 16, "hpcc320_websearch_30pct_2ms_dcqcn": 64, "gpt_1024": 256,
                "simai_gpt13b": 256, "quickstart": 16}
# the case's `sim` run with its core's thread count cycling through COUNTS, EVERY windows each;
# `out` gets each count's (wall s, events, windows) and the speed-up of each over the first
INTERLEAVED = """
from rocesim import run_loop
from rocesim._core import debug
plain, cores = run_loop.RunLoop.run, []
def scheduled(loop):
    if loop.core.n_parts > 1 and not cores:
        debug.thread_schedule(loop.core, COUNTS, every=EVERY)
        cores.append(loop.core)
    return plain(loop)
run_loop.RunLoop.run = scheduled
res = sim.run(STOP, progress=False, threads=COUNTS[0])   # (the first window runs on the count asked)
if not cores:
    raise SystemExit("interleaved: the case ran in one part (no thread count to alternate)")
got = debug.thread_rates(cores[0])
rate = {k: events / wall for k, (wall, events, _) in got.items()}
out = dict(wall_s=res.summary["wall_s"], events=res.summary["events"], counts={str(k): v for k, v in got.items()},
           speedup={str(k): rate[k] / rate[COUNTS[0]] for k in COUNTS[1:] if k in rate and COUNTS[0] in rate})
"""
# (one part runs on one thread)
IDLE_RUNS = [("none", 1), ("pods", 1), ("pods", 2), ("leaves", 1), ("leaves", 2), ("leaves", "auto")]
LOADED_CASES = ("quickstart", "hpcc320_websearch_30pct_2ms_dcqcn", "gpt_1024")


def body(case: str, partition: str, threads) -> str:
    return f"import os\nPARTITION = {partition!r}\nTHREADS = {threads!r}\n" + CASES[case] + RUN


def interleaved_body(case: str, partition: str, counts, every: int) -> str:
    """The program (for `child`) that runs `case` with the thread count cycling through
    `counts`, `every` windows each (INTERLEAVED)."""
    return (f"import os\nPARTITION = {partition!r}\nCOUNTS = {tuple(counts)!r}\nEVERY = {every}\n" + CASES[case]
            + INTERLEAVED)


@pytest.mark.parametrize("partition,threads", IDLE_RUNS)
@pytest.mark.parametrize("case", IDLE_CASES)
def test_idle(benchmark, case, partition, threads):
    info = run_child(benchmark, body(case, partition, threads))
    benchmark.extra_info.update(threads=threads, partition=partition)
    assert info["completed"] == info["flows"] or info["stopped"]


@pytest.mark.parametrize("case", IDLE_CASES)
def test_interleaved(benchmark, case):
    info = run_child(benchmark, interleaved_body(case, "leaves", (1, 2), 2 if QUICK else TURN_WINDOWS[case]))
    counts = {int(k): v for k, v in info["counts"].items()}
    # every event ran in a window on one count or the other; at full size both had windows
    # (the quick gpt_1024 runs one window)
    assert set(counts) <= {1, 2} and sum(events for _, events, _ in counts.values()) == info["events"]
    assert QUICK or set(counts) == {1, 2}


@pytest.fixture
def busy_cores():
    """One process per core spinning, from before the test to after it."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    yield len(hogs)
    for p in hogs:
        p.kill()
        p.wait()


@pytest.mark.parametrize("case", LOADED_CASES)
def test_loaded(benchmark, busy_cores, case):
    walls = {1: [], "auto": []}
    runs = []

    def alternate():
        for r in range(1 if QUICK else 2):
            for threads in ((1, "auto") if r % 2 == 0 else ("auto", 1)):     # 1, auto, auto, 1
                info = child(body(case, "auto", threads))
                assert info["completed"] == info["flows"] or info["stopped"]
                walls[threads].append(info["wall_s"])
                runs.append({k: info[k] for k in ("wall_s", "run_cpu_s", "threads_mean", "threads_final", "load")}
                            | dict(threads=threads))

    benchmark.pedantic(alternate, rounds=1, iterations=1)
    one, auto = statistics.median(walls[1]), statistics.median(walls["auto"])
    benchmark.extra_info.update(busy_processes=busy_cores, runs=runs, one_thread_wall_s=one, auto_wall_s=auto,
                                auto_over_one=round(auto / one, 3))
