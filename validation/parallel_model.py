"""A model of the parallel core's scaling beyond the 2 cores it can be measured on (issue 20,
stage 6; docs/parallel_core.md, sections 3.6 and 5).  It is a model, not a measurement.

    python validation/parallel_model.py measure [WORKLOAD ...]   # timed runs -> parallel_model.json
    python validation/parallel_model.py profile    # window profiles -> out/parallel_model/*.npz
    python validation/parallel_model.py report     # fit, validate, predict -> PARALLEL_MODEL.md

`measure` takes about 10 minutes, `profile` about 5 (k=32 and a whole gpt_1024 iteration,
one process at a time), `report` 10 s.  `measure` and `profile` add to what is stored (the
runs in parallel_model.json, the profiles in out/parallel_model/): after a change of the
core delete both first, on another machine the runs (the profiles are the same on any
machine), so that the fit is of one core on one machine.  Times are of the core only
(`Core.run` in slices of 100 us), wall by time.perf_counter and CPU by time.process_time.
Each run waits for the machine to be quiet (other processes below 0.3 of a core over 1 s,
from /proc/stat) and records how much of a core the others took meanwhile; one where they
took more than a quarter is run again (3 tries) and left out of the medians.

## The model

The core runs windows of the lookahead L (rocesim/_core/window.pyx; docs/parallel_core.md,
sections 15-17).  In a window every part with work runs its turn: it first takes the
hand-offs the window before left it (the packets other parts sent it over cut links),
then runs its events.  Each thread takes its home parts first (each tier of parts cut in
id order into runs of equal recent cost, one per thread), then what another thread left,
for that window.  Then the last thread to arrive alone closes the window (dependency
messages, the parts' next events) and opens the next.  One barrier per window, none for a
window with a single part to run (its thread runs it while the others wait).  So a
window costs, on n threads:

    turns     a list schedule (each part's turn, costliest first, to the thread free
              first: what homes cut by cost and stealing come to) of
              events * (c_ev + c_log * log2(events)) * (1 + s * (1 - 1/n)) + c_v
              + c_x * hand-offs taken + c_q * in_cut (in_cut: its incoming cut ports,
              looked at when it takes hand-offs)
    serial    c_w + c_p * parts (the closing step's loops over every part), and c_x
              per dependency message
    barrier   c_bar(n) = a + b * n, a = 0, in windows with two parts or more to run

The window profiles record the hand-offs a part took at a window's end (a profiled run
flushes every window, on one thread); the model moves them to the part's turn in the
next window, where the core takes them.

* c_ev: per workload (an event's cost depends on its kind: DCQCN, PFC, compute).  c_log:
  an event costs more in a part with more events in the window (its queue and packet pool
  are larger and colder; fitted, not derived).  Without it no constant c_ev meets the
  1-thread runs, where 320 parts run k=16 faster than 32 or 1.
* c_v, c_q, c_p, c_w: the windows' own cost, from runs of thin windows (a one-packet
  flow every 2 us between random hosts, on k=16 and k=32: their ports fit in cache or
  not, and these costs differ 3-12x between the two); hpcc320 and gpt_1024 take k=16's.
* s: what two threads cost beyond that, as a share of the events' cost (the packets and
  flows that parts on different cores trade move between their caches: on this machine
  a line takes 66 ns to move, docs/parallel_core.md section 18), from each workload's
  2-thread runs; with the parts spread evenly, a hand-off stays on its core with chance
  about 1/n, hence (1 - 1/n).
* c_bar(n): the core's barrier is one central sense-reversing counter (each arrival an
  atomic add on one line, each waiter re-reading the released line): about 3n bus
  transactions on its critical path (Culler, UC Berkeley CS258 lecture 9, "Centralized
  Barrier Performance"), so a + b*n.  Two threads give one figure, c_bar(2), from the
  thin k=16 runs; all of it is put in b (a = 0): the pessimistic extrapolation.  The
  predictions also show a flat barrier (c_bar(n) = c_bar(2)) as the optimistic one.  (A
  waiting thread spins 50 us, then sleeps: on an idle machine with windows of similar
  work the wait is spun, and the model counts no wake-up.)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from rocesim import scenario, topology, traffic
from rocesim.network import partition
from rocesim.simulation import Simulation

ROOT = Path(__file__).resolve().parent.parent
MEASURED = ROOT / "validation" / "parallel_model.json"
PROFILES = ROOT / "out" / "parallel_model"
REPORT = ROOT / "validation" / "PARALLEL_MODEL.md"
RESORT_EVERY = 16          # window.pyx: windows between two re-sorts of the parts by cost
BUSY = 0.25               # of a core: a timed run while others used more is run again, then flagged
EVENT = ("c_log", "c_x")                  # shared by every workload
WINDOW = ("c_v", "c_q", "c_p", "c_w")     # per fabric size: fitted on a thin workload (THIN_OF)

# workload: (Python that builds `sim` at partition none, until in ps or None: to the end)
K32 = """t = topology.fat_tree(32, "100Gbps", "1us")
sim = Simulation(t, seed=1, nic={"payload": "4000B"}, switch={"pfc": {"enabled": True}}, partition="none")"""
GPT = """sim = scenario.load("scenarios/platforms/gpt_1024.yaml", ["mode=packet", "partition=none"]).sim"""
THIN_FLOWS = """
rng = np.random.default_rng(1)
src = rng.integers(0, t.n_hosts, {flows})
dst = (src + rng.integers(1, t.n_hosts, src.size)) % t.n_hosts
sim.add_flows(traffic.FlowTable(src, dst, np.full(src.size, 1000), np.arange(src.size) * 2_000_000))"""
WORKLOADS = {
    "k16": ("""t = topology.fat_tree(16, "100Gbps", "1us")
sim = Simulation(t, seed=1, partition="none")
sim.add_flows(traffic.permutation(t.n_hosts, 1_000_000, 0, np.random.default_rng(1)))""", None),
    "hpcc320": ("""t = topology.hpcc_320()
sim = Simulation(t, seed=1, cc="dcqcn", partition="none")
sim.add_flows(traffic.poisson_cdf(t.n_hosts, 100e9, 0.3, 2 * 10**9, traffic.WEBSEARCH, np.random.default_rng(1)))""",
                None),
    "gpt_1024_30ms": (GPT, 30 * 10**9),
    "gpt_1024": (GPT, None),
    "k32": (K32 + """
sim.add_flows(traffic.permutation(t.n_hosts, 1_000_000, 0, np.random.default_rng(1)))""", None),
    # thin windows (a one-packet flow every 2 us between random hosts): the cost of a window
    "k16_thin": ("""t = topology.fat_tree(16, "100Gbps", "1us")
sim = Simulation(t, seed=1, partition="none")""" + THIN_FLOWS.format(flows=20000), None),
    "k32_thin": (K32 + THIN_FLOWS.format(flows=5000), None),
}
# what is timed (level: threads); "gN": the leaves coarsened into N groups (partition._grouped)
TIMED = {"k16": ["none", "g4", "g8", "pods", "g64", "leaves"],
         "hpcc320": ["none", "pods", "g24", "leaves"],
         "gpt_1024_30ms": ["none", "pods", "g32", "leaves"],
         "k16_thin": ["g4", "g8", "g16", "pods", "g64", "g128", "leaves"],
         "k32_thin": ["g16", "pods", "g64", "g256", "leaves"]}
THIN = ("k16_thin", "k32_thin")
THIN_OF = {"k16": "k16_thin", "hpcc320": "k16_thin", "gpt_1024_30ms": "k16_thin", "gpt_1024": "k16_thin",
           "k32": "k32_thin", "k16_thin": "k16_thin", "k32_thin": "k32_thin"}
BARRIER_FIT = ("k16_thin",)   # b: from its 2-thread runs (k=32's are faster than 2x: the caches)
LIKE = {"gpt_1024": "gpt_1024_30ms", "k32": "k16"}    # s: a predicted workload's from a timed one
PREDICTED = {"k16": ["pods", "leaves"], "k32": ["pods", "leaves"], "gpt_1024": ["pods", "leaves"]}


READING = """What the table says, in short:

* The fat trees scale: k=16 at `leaves` (320 parts) about 15x on 16 threads and 30x on 64;
  k=32 (1,280 parts) about 15x and 46x.  Their windows are fat (436 and 503 windows, 40-70 k
  events each), so the barriers hardly count.  At `pods` (32 and 64 parts) the parts cap it:
  k=16 gains nothing from 16 to 64 threads.
* gpt_1024 at `leaves` (192 parts): about 11x on 16 threads, but 64 threads are slower
  than 16 in the model: its 37 k windows of about 1 ms of work each end at a barrier,
  and a barrier extrapolated linearly from 2 threads costs 108 us at 64.  With a flat
  barrier 64 threads would give about 15x; with one thread per part and no barrier at all
  the busiest part of each window still bounds it at about 15x.  b here (1.7 us per thread,
  3.4 us a window on 2 threads, from the thin k=16 runs) holds more than the barrier: the
  closing step reads every part's window state, which the other core wrote; that grows
  with the parts the other threads ran, not with n, so the 64-thread figure is the
  pessimistic end.  A tree barrier (log n) would still be what 64 threads need here.
* gpt_1024 at `pods` does not scale at all (8 parts, and the pipeline's stages are the pods:
  most windows have one busy pod, and those run on one thread without a barrier).  The
  measured 2 threads agree (45.7 s -> 43.4 s).
* The thin-window runs (a one-packet flow every 2 us) are slower on 2 threads than on 1
  (0.42-0.84x; k=32 in 16 groups 1.10x): windows of a few events do not pay for the
  barrier, which is why `threads: auto` goes back to one thread on such runs."""

BLIND_SPOTS = """## What the model does not see

* **Memory bandwidth.**  Every thread streams packets, events and ports; nothing in the
  model caps their sum.  k=32 is memory-bound on one thread already (README "Scale": 640 ns
  per crossing against 140-155 at k=8, a third of it in reads of egress ports and route
  groups).  Its 48x on 64 threads assumes the memory system keeps up: it will not.
* **Caches, both ways.**  On two cores the private caches double: k=16 and k=32 ran
  slightly faster than 2x (up to 2.5x for the thin k=32 runs), which the model does not
  extrapolate (s is kept at 0 or more).  A part stays on its home core, but the packets
  and flows it trades with parts on other cores move between the caches; s holds what 2
  threads show of that (the measured table's constants).  On n threads the model takes
  the share of hand-offs that cross cores to grow as 1 - 1/n; with homes cut by tier in id
  order, neighbouring parts share a core, so on a large machine it may be less.
* **NUMA.**  Measured on one socket.  Across two sockets a moving part pays remote
  memory (about 1.5-2x the latency), and the barrier's line crosses the interconnect.
* **SMT.**  Two hardware threads of a core share its caches and units: 64 threads on 32
  cores are not 64 threads' worth.
* **The barrier at 64 threads** is extrapolated from one figure, c_bar(2), taken on a
  2-core virtual machine (about 3.4 us, far above a bare cache-line round trip of 131-137
  ns: the closing step's misses are in it): all of it is put in the part that grows with
  n.  The flat-barrier column is the other end.
* **Equal events.**  An event costs the same in every part of a workload.  A part whose
  events are costlier (a NIC with DCQCN against a switch forwarding) makes a window's
  real makespan longer than the model's; s absorbs some of it at 2 threads.
* **The shared 2-core machine.**  Runs waited for quiet and were repeated (others' use in
  the last column of the measured table); medians vary by a few percent between sessions
  (the lead's idle-machine figures of benchmarks/test_parallel.py: gpt_1024 at `leaves`
  48.3 s on 1 thread, 26.7 s on 2; here 50.6 s and 27.4 s).
* **Profiled runs.**  k=32 and gpt_1024's 1-thread times are those of their profiled runs
  (a profiled run closes every window with a loop over the parts, which takes their
  hand-offs then: it costs a little more than a run that does not).
* **Homes and stealing.**  The model schedules each window's turns costliest first onto
  the thread free first.  The core gives each thread its home parts (cut by their cost
  over the last 256 windows, not this window's) and lets a thread that is done take what
  is left; a window whose costs differ from the recent ones is less balanced than the
  model's."""

DATA = """## Data

* `validation/parallel_model.json`: every timed run (workload, level, threads, wall and CPU
  seconds of the core, the other processes' use of the machine before and during it,
  events, windows, hand-offs, dependency messages; `profiled` for the runs that recorded
  the window profile).  Taken on the 2-core development machine of docs/parallel_core.md
  sections 15-19 (not section 20's), 2026-11-28 and 29 (the core of issue 33: one barrier
  per window, homes by tier, hand-off records neither part writes).
* The window profiles (`Core.window_profile()`: per window and busy part, its events and
  hand-offs taken) are not kept (out/parallel_model/, 7 MB): `profile` makes them again,
  and they are the same on any machine and any number of threads.
* `gN` levels: the `leaves` parts coarsened into N groups of consecutive parts
  (rocesim/network/partition.py `_grouped`, a debug aid), to time part counts between the
  levels."""


# --- running (in a child process, one workload) ----------------------------------------

def _cpu_busy() -> float:
    """Seconds of CPU the whole machine has been busy (not idle, not waiting on I/O)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def _wait_quiet(limit=0.3, give_up_s=600.0) -> float:
    """Wait until the other processes use less than `limit` of a core (over 1 s); their use."""
    t0 = time.monotonic()
    while True:
        b0 = _cpu_busy()
        time.sleep(1.0)
        other = _cpu_busy() - b0
        if other < limit or time.monotonic() - t0 > give_up_s:
            return other
        time.sleep(5.0)


def _parts_at(sim, level: str):
    """The Simulation's parts at `level` ("none", "pods", "leaves", "gN")."""
    if level.startswith("g"):
        return partition._grouped(sim.partition("leaves"), sim.ports, int(level[1:]))
    return sim.partition(level)


def _run_one(sim, level: str, threads: int, until, profile: Path | None, attempt=1) -> dict:
    """Build the core at `level`, run it to `until` on `threads`; its figures.  A run
    during which other processes took more than BUSY of a core is run again (3 tries)."""
    parts = _parts_at(sim, level)
    core = sim.build_core(parts)
    if profile is not None:
        core.window_profile(True)
    other = _wait_quiet()
    end = 10**18 if until is None else until
    b0, w0, c0 = _cpu_busy(), time.perf_counter(), time.process_time()
    while core.next_event_ps >= 0 and core.next_event_ps <= end and core.run(
            min(core.next_event_ps + 100_000_000, end), 2_000_000, threads=threads) != 0:
        pass
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    rec = dict(level=level, threads=threads, wall_s=wall, cpu_s=cpu, others_before=other,
               others_during=max(_cpu_busy() - b0 - cpu, 0.0) / wall, events=core.stats()["events"],
               parts=parts.n_parts, profiled=profile is not None, attempt=attempt)
    if rec["others_during"] > BUSY and attempt < 3:
        return _run_one(sim, level, threads, until, profile, attempt + 1)      # again, quieter
    if parts.n_parts > 1:
        rec.update(core.window_stats())
    if profile is not None and parts.n_parts > 1:
        in_cut = np.bincount(parts.part_of_node[sim.ports.node[parts.cut_port]], minlength=parts.n_parts)
        np.savez_compressed(profile, in_cut=in_cut, stats=json.dumps(rec), **core.window_profile(False))
    return rec


def child(workload: str, runs: list) -> None:
    """Run `runs` ([level, threads, profile path or None]) of `workload`, one JSON line each."""
    os.chdir(ROOT)
    code, until = WORKLOADS[workload]
    names = dict(np=np, scenario=scenario, topology=topology, traffic=traffic, Simulation=Simulation)
    exec(code, names)
    for level, threads, profile in runs:
        rec = _run_one(names["sim"], level, threads, until, None if profile is None else Path(profile))
        print(json.dumps(dict(workload=workload, **rec)), flush=True)


def _spawn(workload: str, runs: list) -> list:
    out = subprocess.run([sys.executable, __file__, "_child", workload, json.dumps(runs)], check=True,
                         capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


# --- the model ---------------------------------------------------------------------------

def makespan(costs, n: int) -> np.ndarray:
    """Per window (a row of `costs`, the parts' costs in the order they are claimed, zeros
    for padding), the time the last of `n` threads ends when each part in turn goes to the
    thread that is free first (list scheduling; costliest first, it is LPT)."""
    costs = np.atleast_2d(np.asarray(costs, float))
    if n == 1:
        return costs.sum(axis=1)
    if n >= costs.shape[1]:
        return costs.max(axis=1, initial=0.0)
    loads, rows = np.zeros((costs.shape[0], n)), np.arange(costs.shape[0])
    for j in range(costs.shape[1]):
        loads[rows, loads.argmin(axis=1)] += costs[:, j]
    return loads.max(axis=1)


def lpt_rank(window, cost):
    """Per profile row, its place in its window when parts are claimed costliest first."""
    return _places(window, np.lexsort((-np.asarray(cost), window)))


def core_rank(window, part, events, n_parts: int):
    """Per profile row, its place in its window in the core's claim order: every
    RESORT_EVERY windows the parts are stably re-sorted by their aged recent events, which
    are then halved (window.pyx, _by_cost)."""
    block = window // RESORT_EVERY
    n_blocks = int(block.max(initial=-1)) + 1
    ran = np.bincount(block * n_parts + part, weights=events, minlength=n_blocks * n_parts)
    ran = ran.astype(np.int64).reshape(n_blocks, n_parts)
    order, cost = np.arange(n_parts), np.zeros(n_parts, np.int64)
    rank = np.empty((n_blocks, n_parts), np.int64)
    for b in range(n_blocks):
        order = order[np.argsort(-cost[order], kind="stable")]
        rank[b, order] = np.arange(n_parts)
        cost = (cost >> 1) + ran[b]
    busy = events > 0          # only the parts with events are claimed, in that order
    key = np.where(busy, rank[block, part], n_parts)
    return _places(window, np.lexsort((key, window)))


def _places(window, by):
    """Each row's place among its window's rows in the order `by` (an argsort of the rows)."""
    w = window[by]
    first = np.searchsorted(w, w, side="left")
    place = np.empty_like(by)
    place[by] = np.arange(by.size) - first
    return place


def _log2(events):
    """log2 of a part's events in a window (0 for none)."""
    return np.log2(np.maximum(events, 1.0))


def _grid(window, place, value, lo: int, hi: int) -> np.ndarray:
    """The rows of windows lo..hi-1 as a [window, place] matrix of `value`."""
    sel = (window >= lo) & (window < hi)
    g = np.zeros((hi - lo, int(place[sel].max(initial=0)) + 1))
    g[window[sel] - lo, place[sel]] = value[sel]
    return g


class Profile:
    """A window profile (Core.window_profile) with the run's figures; its model times."""

    def __init__(self, window, part, events, handoffs, in_cut, stats: dict):
        self.window, self.part = np.asarray(window, np.int64), np.asarray(part, np.int64)
        self.events, self.handoffs = np.asarray(events, float), np.asarray(handoffs, float)
        self.in_cut, self.stats = np.asarray(in_cut, float), stats
        self.P, self.W = stats["parts"], stats["windows"]
        self._rank = {}
        # the turns: a part's events in a window, and the hand-offs it takes there (those of
        # the window before's end, where the profiled run took them)
        key = np.concatenate([self.window * self.P + self.part,
                              np.minimum(self.window + 1, self.W - 1) * self.P + self.part])
        turn, where = np.unique(key, return_inverse=True)
        n = turn.size
        self.t_window, self.t_part = turn // self.P, turn % self.P
        self.t_events = np.bincount(where[:self.window.size], weights=self.events, minlength=n)
        self.t_taken = np.bincount(where[self.window.size:], weights=self.handoffs, minlength=n)
        self.t_in_cut = np.where(self.t_taken > 0, self.in_cut[self.t_part], 0.0)
        busy = (self.t_events > 0) | (self.t_taken > 0)
        self.barriers = float(np.count_nonzero(np.bincount(self.t_window[busy], minlength=self.W) > 1))

    @classmethod
    def load(cls, path: Path) -> "Profile":
        z = np.load(path)
        return cls(z["window"], z["part"], z["events"], z["handoffs"], z["in_cut"], json.loads(str(z["stats"])))

    def features(self) -> dict:
        """What a 1-thread run's time is linear in (the columns of the fit)."""
        return dict(E=self.events.sum(), c_log=(self.events * _log2(self.events)).sum(),
                    c_x=self.handoffs.sum() + self.stats["dependency_messages"],
                    c_v=float(np.count_nonzero(self.t_events)), c_q=self.t_in_cut.sum(),
                    c_p=float(self.W * self.P), c_w=float(self.W))

    def time(self, k: dict, n: int, order="core", chunk=8192) -> dict:
        """The model's time on `n` threads with constants `k`: the parts' turns, the
        serial step, the barriers (s)."""
        ev = self.t_events
        if order not in self._rank:
            self._rank[order] = (core_rank(self.t_window, self.t_part, ev + self.t_taken, self.P) if order == "core"
                                 else lpt_rank(self.t_window, ev + self.t_taken))
        place = self._rank[order]
        shared = 1 + k.get("s", 0.0) * (1 - 1 / n)         # what crosses cores
        run = (np.where(ev > 0, ev * (k["c_ev"] + k["c_log"] * _log2(ev)) * shared + k["c_v"], 0.0)
               + k["c_x"] * self.t_taken + k["c_q"] * self.t_in_cut)
        turns = sum(makespan(_grid(self.t_window, place, run, lo, min(lo + chunk, self.W)), n).sum()
                    for lo in range(0, self.W, chunk))
        serial = self.W * (k["c_w"] + k["c_p"] * self.P) + k["c_x"] * self.stats["dependency_messages"]
        barrier = self.barriers * (k.get("a", 0.0) + k["b"] * n) if n > 1 else 0.0
        return dict(turns=turns, serial=serial, barrier=barrier)


def fit_linear(X, y, names) -> dict:
    """Least squares of y ~ X (relative errors: each row divided by its y); a constant that
    comes out negative is set to 0 and the others fitted again."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    keep = np.ones(X.shape[1], bool)
    while True:
        c = np.zeros(X.shape[1])
        c[keep] = np.linalg.lstsq(X[:, keep] / y[:, None], np.ones(y.size), rcond=None)[0]
        if (c >= 0).all():
            return dict(zip(names, c))
        keep &= c > 0


# --- measure, profile, report ------------------------------------------------------------

def measure(repeats: int, workloads) -> None:
    """The timed runs of TIMED (or of `workloads`), every level on 1 thread and in parts on
    2, interleaved (one child per workload and repeat), appended to MEASURED; for a
    workload of PREDICTED only, its levels on 2 threads."""
    done = json.loads(MEASURED.read_text()) if MEASURED.exists() else []
    if done:
        print(f"adding to the {len(done)} runs in {MEASURED.name} (delete it first to fit a changed core "
              "or another machine alone)", file=sys.stderr)
    for r in range(repeats):
        for wl in workloads or TIMED:
            if wl in TIMED:
                runs = [[lv, n, None] for lv in TIMED[wl] for n in ((1,) if lv == "none" else (1, 2))]
            else:                   # a predicted workload: a check of its 2-thread prediction
                runs = [[lv, 2, None] for lv in PREDICTED[wl]]
            done += [dict(rec, repeat=r) for rec in _spawn(wl, runs)]
            MEASURED.write_text(json.dumps(done, indent=1) + "\n")
            print(wl, r, file=sys.stderr)


def profile() -> None:
    """One profiled 1-thread run per workload and level in parts (and the predicted
    workloads' one-part runs, timed), into PROFILES and MEASURED; those done are kept."""
    PROFILES.mkdir(parents=True, exist_ok=True)
    done = json.loads(MEASURED.read_text()) if MEASURED.exists() else []
    wanted = {wl: [lv for lv in TIMED.get(wl, []) if lv != "none"] for wl in WORKLOADS}
    for wl, levels in PREDICTED.items():
        wanted[wl] = sorted(set(wanted[wl]) | set(levels)) + ([] if wl in TIMED else ["none"])
    for wl, levels in wanted.items():
        for lv in levels:           # one process each: a whole gpt_1024 iteration is 1.3 GB
            path = None if lv == "none" else str(PROFILES / f"{wl}_{lv}.npz")
            if (path and Path(path).exists()) or (not path and _timed(done, wl, lv, 1) is not None):
                continue
            done += _spawn(wl, [[lv, 1, path]])
            MEASURED.write_text(json.dumps(done, indent=1) + "\n")
            print(wl, lv, file=sys.stderr)


def _timed(measured, wl, level, threads, profiled=False) -> float | None:
    """The median wall time of the runs of (wl, level, threads), those during which other
    processes took more than BUSY of a core left out (unless all were); None if none ran."""
    runs = [m for m in measured if (m["workload"], m["level"], m["threads"], m["profiled"])
            == (wl, level, threads, profiled)]
    quiet = [m for m in runs if m.get("others_during", 0) <= BUSY] or runs
    return float(np.median([m["wall_s"] for m in quiet])) if runs else None


def fit(measured, profiles, held_out=None) -> dict:
    """The constants from the timed runs in parts (without level `held_out`): per thin
    workload, its c_ev and the WINDOW constants, from its 1-thread runs; c_ev per other
    workload and the EVENT constants from theirs, the WINDOW constants of their THIN_OF
    given (in turn until they settle: the thin runs' few events take the EVENT
    constants); b from the 2-thread runs of BARRIER_FIT, then s per other workload from its
    own."""
    cases = {wl: [lv for lv in levels if lv not in ("none", held_out)] for wl, levels in TIMED.items()}
    main = [wl for wl in TIMED if wl not in THIN]
    k, before = dict.fromkeys(EVENT, 0.0), None
    while before is None or any(abs(k[c] - before[c]) > 1e-6 * abs(k[c]) for c in before):
        before = dict(k)
        for thin in THIN:
            rows, y = [], []
            for lv in cases[thin]:
                f = profiles[thin, lv].features()
                rows.append([f["E"]] + [f[c] for c in WINDOW])
                y.append(_timed(measured, thin, lv, 1) - sum(k[c] * f[c] for c in EVENT))
            k.update(fit_linear(rows, y, [f"c_ev:{thin}"] + [f"{c}:{thin}" for c in WINDOW]))
        rows, y = [], []
        for wl in main:
            for lv in cases[wl]:
                f = profiles[wl, lv].features()
                rows.append([f["E"] * (w == wl) for w in main] + [f[c] for c in EVENT])
                y.append(_timed(measured, wl, lv, 1) - sum(k[f"{c}:{THIN_OF[wl]}"] * f[c] for c in WINDOW))
        k.update(fit_linear(rows, y, [f"c_ev:{w}" for w in main] + list(EVENT)))
    k["b"] = 0.0             # what 2 threads took beyond the model without barriers: barriers * 2b
    k["b"] = _slope([(_timed(measured, wl, lv, 2), _total(profiles[wl, lv], constants(k, wl), 2),
                      profiles[wl, lv].barriers * 2) for wl in BARRIER_FIT for lv in cases[wl]])
    for wl in main:              # then what each other workload's 2-thread runs took beyond that
        k[f"s:{wl}"] = fit_s([(profiles[wl, lv], constants(k, wl), _timed(measured, wl, lv, 2))
                              for lv in cases[wl]])
    return k


def fit_s(runs) -> float:
    """s from 2-thread runs [(profile, constants, wall time)]: the share of the events' cost
    to add for the model to meet them."""
    rows = []
    for prof, kk, t2 in runs:
        base = _total(prof, dict(kk, s=0.0), 2)
        rows.append((t2, base, _total(prof, dict(kk, s=1.0), 2) - base))
    return _slope(rows)


def _slope(rows) -> float:
    """x (at least 0) for which base + x * unit meets measured, over the rows (measured,
    base, unit), by least squares of the relative errors."""
    t, base, unit = np.array(rows, float).T
    return max(float(np.dot((t - base) / t, unit / t) / np.dot(unit / t, unit / t)), 0.0)


def constants(k, wl, prof=None, t1=None) -> dict:
    """The constants of workload `wl` from the fitted `k`: its c_ev, or (not timed) one
    from its 1-thread time `t1` in parts (profile `prof`), the others given."""
    out = dict(b=k["b"], s=k.get(f"s:{LIKE.get(wl, wl)}", 0.0), **{c: k[c] for c in EVENT},
               **{c: k[f"{c}:{THIN_OF[wl]}"] for c in WINDOW})
    if f"c_ev:{wl}" in k:
        return dict(out, c_ev=k[f"c_ev:{wl}"])
    f = prof.features()
    return dict(out, c_ev=(t1 - sum(out[c] * f[c] for c in (*EVENT, *WINDOW))) / f["E"])


def _total(prof: Profile, k: dict, n: int, order="core") -> float:
    return float(sum(prof.time(k, n, order).values()))


def _err(model: float, measured: float) -> str:
    return f"{100 * (model / measured - 1):+.1f} %"


def report() -> None:
    """Fit on every timed run, validate (each level fitted without its runs, then
    predicted), predict 16 and 64 threads; write REPORT."""
    measured = json.loads(MEASURED.read_text())
    profiles = {(wl, lv): Profile.load(PROFILES / f"{wl}_{lv}.npz") for wl in WORKLOADS
                for lv in set(TIMED.get(wl, [])) | set(PREDICTED.get(wl, [])) if lv != "none"}
    k = fit(measured, profiles)
    head, model = __doc__.split("## The model")
    out = ["# The parallel core beyond 2 cores: a model (issue 20, stage 6)", "",
           "This file is written by `python validation/parallel_model.py report`. " +
           " ".join(head.split("\n\n")[0].split()), "", "```", *[l.strip() for l in head.split("\n\n")[1].splitlines()],
           "```", "", " ".join(head.split("\n\n")[2].split()), "", "## The model" + model.rstrip(), "",
           _predictions(measured, profiles, k), "", READING, "", BLIND_SPOTS, "", _validation(measured, profiles), "",
           _constants(measured, profiles, k), "", _measured_table(measured, profiles, k), "", DATA]
    REPORT.write_text("\n".join(out) + "\n")
    print("\n".join(out))


def _measured_table(measured, profiles, k) -> str:
    lines = ["## Measured (core only, median of the runs) and the model fitted on all of them", "",
             "| workload | level | parts | windows | events | hand-offs | 1 thread (s) | model | "
             "2 threads (s) | model | speed-up | runs, others' use (cores) |", "|---" * 12 + "|"]
    for wl, levels in TIMED.items():
        for lv in levels:
            runs = [m for m in measured if (m["workload"], m["level"], m["profiled"]) == (wl, lv, False)]
            busy = max(m["others_during"] for m in runs)
            t1, t2 = _timed(measured, wl, lv, 1), _timed(measured, wl, lv, 2)
            if lv == "none":
                lines.append(f"| {wl} | none | 1 | | {runs[0]['events'] / 1e6:.1f} M | | {t1:.2f} | | | | | "
                             f"{len(runs)}, ≤ {busy:.2f} |")
                continue
            prof, kk = profiles[wl, lv], constants(k, wl)
            m1, m2 = _total(prof, kk, 1), _total(prof, kk, 2)
            lines.append(f"| {wl} | {lv} | {prof.P} | {prof.W} | {prof.events.sum() / 1e6:.1f} M | "
                         f"{prof.handoffs.sum() / 1e6:.2f} M | {t1:.2f} | {m1:.2f} ({_err(m1, t1)}) | {t2:.2f} | "
                         f"{m2:.2f} ({_err(m2, t2)}) | {t1 / t2:.2f} | {len(runs)}, ≤ {busy:.2f} |")
    return "\n".join(lines)


def _constants(measured, profiles, k) -> str:
    ns = lambda v: f"{v * 1e9:.1f} ns"
    lines = ["## Fitted constants (all timed runs)", "",
             "| constant | per | value |", "|---|---|---|"]
    for wl in TIMED:
        none = [m for m in measured if (m["workload"], m["level"]) == (wl, "none")]
        one = f" (in one part: {ns(_timed(measured, wl, 'none', 1) / none[0]['events'])})" if none else ""
        lines.append(f"| c_ev, {wl} | event in a part{one} | {ns(k[f'c_ev:{wl}'])} |")
    what = dict(c_log="event, per doubling of its part's events in the window",
                c_x="hand-off taken (a packet over a cut link) or dependency message",
                c_v="part that runs events in a window", c_q="incoming cut port looked at, by a part taking hand-offs",
                c_p="part, per window (the closing step's loops over the parts)", c_w="window (the closing step)",
                b="thread, per barrier (a window with two parts or more to run): c_bar(n) = b*n, from the "
                  "2-thread runs")
    lines += [f"| {c} | {what[c]} | {ns(k[c])} |" for c in EVENT]
    lines += [f"| {c}, {thin} | {what[c]} | {ns(k[f'{c}:{thin}'])} |" for c in WINDOW for thin in THIN]
    lines.append(f"| b | {what['b']} of {', '.join(BARRIER_FIT)} | {ns(k['b'])} |")
    lines += [f"| s, {wl} | share added to the events' cost on n threads: s * (1 - 1/n), from its 2-thread "
              f"runs | {k[f's:{wl}']:.2f} |" for wl in TIMED if f"s:{wl}" in k]
    return "\n".join(lines)


def _validation(measured, profiles) -> str:
    lines = ["## Validation: each level fitted without its runs, then predicted", "",
             "| level held out | workload | 1 thread: measured, model | 2 threads: measured, model |",
             "|---|---|---|---|"]
    errors = {False: [], True: []}           # by thin or not: [1-thread, 2-thread] errors
    leaves = []
    for held in sorted({lv for levels in TIMED.values() for lv in levels} - {"none"}):
        k = fit(measured, profiles, held_out=held)
        for wl, levels in TIMED.items():
            if held not in levels:
                continue
            kk, prof = constants(k, wl), profiles[wl, held]
            t1, t2 = _timed(measured, wl, held, 1), _timed(measured, wl, held, 2)
            m1, m2 = _total(prof, kk, 1), _total(prof, kk, 2)
            errors[wl in THIN].append([m1 / t1 - 1, m2 / t2 - 1])
            if held == "leaves" and wl not in THIN:
                leaves.append(f"{wl} {_err(m2, t2)}")
            lines.append(f"| {held} | {wl} | {t1:.2f}, {m1:.2f} ({_err(m1, t1)}) | "
                         f"{t2:.2f}, {m2:.2f} ({_err(m2, t2)}) |")
    text = []
    for thin, what in ((False, "k16, hpcc320 and the first 30 ms of gpt_1024"), (True, "the thin-window runs")):
        e = 100 * np.abs(np.array(errors[thin]))
        text.append(f"on {what}, mean {e[:, 0].mean():.1f} % (largest {e[:, 0].max():.0f} %) on 1 thread, "
                    f"{e[:, 1].mean():.1f} % (largest {e[:, 1].max():.0f} %) on 2")
    lines += ["", "Error of the held-out predictions: " + "; ".join(text) + ". `leaves` predicted on 2 threads "
              "from the other levels: " + ", ".join(leaves) + ".  Where a workload has 3 levels in parts, "
              "holding one out leaves 2 to fit its c_ev and s on, and `pods` (the coarsest) is then an "
              "extrapolation of the log term (the largest errors).  The thin k=32 runs are the worst fitted: "
              "their windows' cost is mostly cache misses, not linear in ports and parts."]
    return "\n".join(lines)


def _predictions(measured, profiles, k) -> str:
    threads = (1, 2, 16, 64)
    lines = ["## Predictions (model)", "",
             "| workload | level | parts | measured: 1 part, 1 thr., 2 thr. (s) | s | model: " +
             ", ".join(f"{n}" for n in threads) + " thr. (s) | speed-up at 16, 64 thr. over 1 thread | "
             "over 1 part | 64 thr.: LPT order, flat barrier, s = 0 | one thread per part, no barrier |",
             "|---" * 9 + "|"]
    checks = []
    for wl, levels in PREDICTED.items():
        none = _timed(measured, wl, "none", 1)
        runs, kk = [], {}
        for lv in levels:
            prof = profiles[wl, lv]
            kk[lv] = constants(k, wl, prof, _timed(measured, wl, lv, 1, profiled=wl not in TIMED))
            t2 = _timed(measured, wl, lv, 2)
            if t2 is not None and wl not in TIMED:
                runs.append((prof, kk[lv], t2))
                checks.append(f"{wl} at {lv}: measured {t2:.2f} s, the model with s of {LIKE[wl]} "
                              f"({kk[lv]['s']:.2f}) {_total(prof, kk[lv], 2):.2f} s, with s = 0 "
                              f"{_total(prof, dict(kk[lv], s=0.0), 2):.2f} s")
        if runs:                    # its own 2-thread runs give its s
            s = fit_s(runs)
            kk = {lv: dict(c, s=s) for lv, c in kk.items()}
        for lv in levels:
            prof, c = profiles[wl, lv], kk[lv]
            t1m, t2m = _timed(measured, wl, lv, 1, profiled=wl not in TIMED), _timed(measured, wl, lv, 2)
            t = [_total(prof, c, n) for n in threads]
            alt = [_total(prof, c, 64, "lpt"), _total(prof, dict(c, a=2 * c["b"], b=0.0), 64),
                   _total(prof, dict(c, s=0.0), 64)]
            bound = _total(prof, dict(c, b=0.0), prof.P, "lpt")
            lines.append(f"| {wl} | {lv} | {prof.P} | {none:.2f}, {t1m:.2f}, {t2m:.2f} | {c['s']:.2f} | " +
                         ", ".join(f"{x:.2f}" for x in t) + f" | {t[0] / t[2]:.1f}, {t[0] / t[3]:.1f} | "
                         f"{none / t[2]:.1f}, {none / t[3]:.1f} | " + ", ".join(f"{x:.2f}" for x in alt) +
                         f" | {bound:.2f} ({t[0] / bound:.0f}x) |")
    return "\n".join(lines + ["", "2 threads, predicted before their own 2-thread runs were used: " +
                               "; ".join(checks) + "."])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["measure", "profile", "report", "_child"])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_intermixed_args(argv)
    if a.what == "_child":
        child(a.args[0], json.loads(a.args[1]))
    elif a.what == "measure":
        measure(a.repeats, a.args)
    elif a.what == "profile":
        profile()
    else:
        report()


if __name__ == "__main__":
    main()
