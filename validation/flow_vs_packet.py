"""rocesim's flow level against its packet level, on every shipped training and platform
scenario and the gallery's sweeps, under every built-in scheme.

Each run is one case (a scenario file, or a run of a sweep file, with `--set` style
overrides) under one scheme in one mode (`mode: packet` or `mode: flow`), built and run in
an interpreter of its own (`--one`), so that its CPU seconds and peak memory are its own.
Per case and scheme the table gives the iteration time (mean over the finished
iterations), the collectives' durations (p50 and p99, as summary.json has them, and the
mean, lowest and highest ratio flow / packet of each collective matched by its id, a
stronger check than percentiles), the background flows' FCT slowdown (p50, p99), the CPU
seconds of each mode (building the graph and running it) and the speed-up, and whether
the row is within the 5% target (iteration time and collective durations; background
slowdown is set against the same yardstick where it is the only figure).

    python validation/flow_vs_packet.py --bare -o validation/FLOW.md   # every case (2 hours of CPU)
    python validation/flow_vs_packet.py --quick            # small cases, three schemes (2 CPU-minutes)
    python validation/flow_vs_packet.py --only gallery_training -s dcqcn

Every run's figures are kept as they come in `out/flow_vs_packet/runs.json` (one entry per
case, scheme and mode, with the commit it was made at and, what changes packet-level
outputs, the level `partition: auto` meant; `--results` names another file); a later call
reuses the entries it finds and runs only the missing ones and the packet runs made at
another `auto` partition, unless told `--rerun packet|flow|all`.  `--table-only` runs
nothing and says, per mode, what the runs it shows were made at.  `--bare` also runs the bare fluid (`flow.share` 1,
`flow.startup` 0) beside the scheme's calibrated one.  `-o FILE.md` rewrites the part of
the file between the markers GENERATED_BEGIN and GENERATED_END (the whole file if it has
none), so that the notes written around the tables stay, and writes FILE.json beside it:
per row the runs' figures (without the per-collective tables), the comparison and the
collective groups.  CI does not run it (the large platforms take CPU-minutes at the packet level).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from rocesim import config, scenario  # noqa: E402
from rocesim.sweep import spec as sweep_spec  # noqa: E402

TARGET = 0.05                   # |flow / packet - 1| at most this: the target
RESULTS = os.path.join(ROOT, "out", "flow_vs_packet", "runs.json")   # every run's figures (git-ignored)
MARK_BEGIN, MARK_END = "<!-- GENERATED_BEGIN -->", "<!-- GENERATED_END -->"
MODES = ("packet", "flow")
# the bare fluid, beside the calibrated one (--bare): every link's full capacity, no start-up cost
# (flow mode's default since this table found it nearer the packet level on training traffic)
BARE, BARE_SETS = "bare", ("flow.share=1", "flow.startup=0us")
# the calibrated fluid, the table's "flow" column: each scheme's calibration, asked for by name
CALIBRATED_SETS = ("flow.share=auto", "flow.startup=auto")

# every built-in scheme (`rocesim schemes`), and DCQCN with a one-BDP window as the gallery's
# and Khan et al.'s sweeps run it: label -> `--set` overrides
SCHEMES = {
    "none": {"cc.scheme": "none"},
    "dcqcn": {"cc.scheme": "dcqcn"},
    "dcqcn_win": {"cc.scheme": "dcqcn", "cc.params.window": "bdp"},
    "hpcc": {"cc.scheme": "hpcc"},
    "timely": {"cc.scheme": "timely"},
    "dctcp": {"cc.scheme": "dctcp"},
    "swift": {"cc.scheme": "swift"},
    "nscc": {"cc.scheme": "nscc"},
}
QUICK_SCHEMES = ("none", "dcqcn", "hpcc")


@dataclass
class Case:
    """A scenario file (relative to the repository) with overrides, run under `schemes`
    (labels of SCHEMES); `skip` says why the others are not run; `kind` is platform,
    training or background; `quick` puts it in --quick; `fixed`: the runs of a sweep,
    scheme label -> their overrides (the scheme is the sweep's, not SCHEMES')."""

    path: str
    kind: str
    schemes: tuple = tuple(SCHEMES)
    skip: str = ""
    overrides: tuple = ()
    quick: bool = False
    fixed: dict = field(default_factory=dict)

    def runs(self, schemes):
        """[(scheme label, overrides)] of this case's runs among `schemes` (None: all)."""
        if self.fixed:
            return [(s, o) for s, o in self.fixed.items() if schemes is None or s in schemes]
        return [(s, self.overrides + tuple(f"{k}={v}" for k, v in SCHEMES[s].items()))
                for s in self.schemes if schemes is None or s in schemes]


LONG = "packet level {} CPU-minutes per scheme: dcqcn only (--all-schemes runs every scheme)"
SCENARIOS = {
    "astra_dgx16": Case("scenarios/platforms/astra_dgx16.yaml", "platform", quick=True),
    "rail16x8_allreduce": Case("scenarios/platforms/rail16x8_allreduce.yaml", "platform", quick=True),
    "rail16x8_moe_alltoall": Case("scenarios/platforms/rail16x8_moe_alltoall.yaml", "platform", quick=True),
    "rail16x8_moe_alltoall_pxn": Case("scenarios/platforms/rail16x8_moe_alltoall.yaml", "platform",
                                      overrides=("traffic[0].pxn=true",)),
    "simai_gpt13b": Case("scenarios/platforms/simai_gpt13b.yaml", "platform"),
    "two_jobs": Case("scenarios/platforms/two_jobs.yaml", "platform"),
    "gpt_1024": Case("scenarios/platforms/gpt_1024.yaml", "platform", ("dcqcn",), LONG.format("0.9")),
    "llama3_70b_1024": Case("scenarios/platforms/llama3_70b_1024.yaml", "platform", ("dcqcn",), LONG.format("17")),
    "training_background": Case("scenarios/training_background.yaml", "training", quick=True),
    "quickstart": Case("scenarios/quickstart.yaml", "background", quick=True),
}
# the gallery's sweeps and Khan et al.'s: each run as the sweep has it (training16 and the
# khan2022 scenarios are run by these, under the sweeps' schemes)
SWEEPS = {"gallery_training": ("sweeps/gallery_training.yaml", "training", True),
          "khan2022": ("sweeps/khan2022.yaml", "training", False),
          "gallery_fct": ("sweeps/gallery_fct.yaml", "background", False)}
SCHEME_KEYS = ("cc.scheme", "cc.params.window")


def scheme_label(params: dict) -> str:
    """The SCHEMES label of a sweep run's scheme parameters."""
    mine = {k: params[k] for k in SCHEME_KEYS if params.get(k) is not None}
    for label, sets in SCHEMES.items():
        if sets == mine:
            return label
    raise ValueError(f"a sweep run's scheme {mine} is none of SCHEMES")


def sweep_cases(name: str, path: str, kind: str, quick: bool) -> dict:
    """The cases of a sweep file: its runs grouped by what they vary besides the scheme."""
    cases = {}
    for run in sweep_spec.load(os.path.join(ROOT, path)).runs:
        rest = {k: v for k, v in run.params.items() if k not in SCHEME_KEYS}
        scen = rest.pop(sweep_spec.SCENARIO_KEY, None)
        label = "/".join([name] + ([scen] if scen else []) + ([sweep_spec.run_name(rest)] if rest else []))
        case = cases.setdefault(label, Case(os.path.relpath(run.base, ROOT), kind, quick=quick, fixed={}))
        case.fixed[scheme_label(run.params)] = run.overrides
    for case in cases.values():
        case.schemes = tuple(case.fixed)
    return cases


def all_cases() -> dict:
    """Every case, by name: the platforms first, then training, then background traffic."""
    cases = dict(SCENARIOS)
    for name, (path, kind, quick) in SWEEPS.items():
        cases.update(sweep_cases(name, path, kind, quick))
    order = {"platform": 0, "training": 1, "background": 2}
    return dict(sorted(cases.items(), key=lambda kv: order[kv[1].kind]))


# --- one run, in its own interpreter ------------------------------------------------------

def _floats(a) -> list:
    """An array as a JSON list, NaN as None."""
    return [None if not np.isfinite(x) else float(x) for x in np.asarray(a, np.float64)]


def run_one(path: str, overrides, mode: str) -> dict:
    """Build and run one scenario in `mode`: its figures, per collective and iteration, and
    the CPU seconds of building and running it."""
    cpu0 = time.process_time()
    scn = scenario.load(os.path.join(ROOT, path), list(overrides) + [f"mode={mode}"])
    res = scn.sim.run(scn.stop, progress=False, threads=1)     # CPU seconds of the work, on one thread
    cpu = time.process_time() - cpu0
    s = res.summary
    out = dict(mode=mode, cpu_s=round(cpu, 3), run_cpu_s=s["cpu_s"],
               rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
               scheme=s["scheme"], flows_total=s["flows_total"], flows_completed=s["flows_completed"],
               stalled=bool(s.get("stalled")), deadlock=bool(s.get("deadlock")), sim_time_ns=s["sim_time_ns"],
               background_flows=s["background_flows"],
               background_slowdown_p50=s["background_slowdown_p50"],
               background_slowdown_p99=s["background_slowdown_p99"],
               flow_share=s.get("flow_share"), flow_startup_ns=s.get("flow_startup_ns"))
    if res.collectives is not None:
        c = res.collectives
        out["collectives"] = dict(id=[int(x) for x in c["collective_id"]], op=[str(x) for x in c["op"]],
                                  algorithm=[str(x) for x in c["algorithm"]],
                                  size_bytes=[int(x) for x in c["size_bytes"]],
                                  ranks=[int(x) for x in c["ranks"]], duration_ns=_floats(c["duration_ns"]))
    if res.iterations is not None:
        out["iterations_ns"] = _floats(res.iterations["duration_ns"])
    return out


def run_apart(path: str, overrides, mode: str) -> dict:
    """`run_one` in a fresh interpreter; a failure is returned as {'error': ...}."""
    arg = json.dumps(dict(path=path, overrides=list(overrides), mode=mode))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", arg], capture_output=True, text=True)
    if p.returncode != 0:
        return dict(mode=mode, error=(p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


# --- comparing the two levels -------------------------------------------------------------

def _finite(values) -> np.ndarray:
    v = np.asarray([np.nan if x is None else x for x in (values or [])], np.float64)
    return v[np.isfinite(v)]


def _ratio(flow, packet):
    return flow / packet if flow is not None and packet not in (None, 0) else None


def matched(packet: dict, flow: dict):
    """Per collective finished at both levels (matched by id, same op and size): (index into
    packet's table, flow / packet duration); None when the tables are not the same
    collectives."""
    pc, fc = packet.get("collectives"), flow.get("collectives")
    if not pc or not fc:
        return None
    if (pc["id"], pc["op"], pc["size_bytes"]) != (fc["id"], fc["op"], fc["size_bytes"]):
        return None
    p = np.asarray([np.nan if x is None else x for x in pc["duration_ns"]], np.float64)
    f = np.asarray([np.nan if x is None else x for x in fc["duration_ns"]], np.float64)
    ok = np.isfinite(p) & np.isfinite(f) & (p > 0)
    idx = np.flatnonzero(ok)
    return idx, f[idx] / p[idx]


def compare(packet: dict, flow: dict) -> dict:
    """The figures of one (case, scheme) at both levels and their ratios flow / packet:
    `iteration` (mean), `coll_p50`, `coll_p99`, `coll_ratio` (mean of the matched
    collectives' ratios, with `coll_ratio_min`/`_max`), `bg_p50`, `bg_p99` (background
    slowdown), `cpu` (packet / flow: the speed-up); `outside`: the target figures off by
    more than TARGET (iteration and collectives; background slowdown where the case has
    neither), `problems`: a run that failed, stalled or left work unfinished."""
    out = {"problems": [], "outside": []}
    for mode, r in (("packet", packet), ("flow", flow)):
        if "error" in r:
            out["problems"].append(f"{mode} run failed: {r['error']}")
        elif r.get("deadlock") or r.get("stalled") or r.get("flows_completed") != r.get("flows_total"):
            what = "deadlock" if r.get("deadlock") else "stalled" if r.get("stalled") else "unfinished"
            out["problems"].append(f"{mode}: {what} ({r.get('flows_completed')} of {r.get('flows_total')} flows)")
    if any("error" in r for r in (packet, flow)):
        return out
    figures = {}
    it_p, it_f = _finite(packet.get("iterations_ns")), _finite(flow.get("iterations_ns"))
    if it_p.size and it_f.size:
        figures["iteration"] = (it_p.mean(), it_f.mean())
    d_p = _finite((packet.get("collectives") or {}).get("duration_ns"))
    d_f = _finite((flow.get("collectives") or {}).get("duration_ns"))
    if d_p.size and d_f.size:
        for q in (50, 99):
            figures[f"coll_p{q}"] = (float(np.percentile(d_p, q)), float(np.percentile(d_f, q)))
    m = matched(packet, flow)
    if m is not None and m[1].size:
        out.update(coll_ratio=float(m[1].mean()), coll_ratio_min=float(m[1].min()),
                   coll_ratio_max=float(m[1].max()), coll_matched=int(m[1].size))
    elif d_p.size:
        out["problems"].append("collectives differ between the levels (ids, ops or sizes)")
    for q in (50, 99):
        a, b = packet.get(f"background_slowdown_p{q}"), flow.get(f"background_slowdown_p{q}")
        if a is not None and b is not None:
            figures[f"bg_p{q}"] = (a, b)
    for k, (a, b) in figures.items():
        out[k] = (a, b, _ratio(b, a))
    out["cpu"] = (packet["cpu_s"], flow["cpu_s"], _ratio(packet["cpu_s"], flow["cpu_s"]))
    checked = [k for k in ("iteration", "coll_p50", "coll_p99") if k in out]
    if "coll_ratio" in out:
        checked.append("coll_ratio")
    if not checked:
        checked = [k for k in ("bg_p50", "bg_p99") if k in out]
    for k in checked:
        r = out[k] if k == "coll_ratio" else out[k][2]
        if r is None or abs(r - 1) > TARGET + 1e-12:
            out["outside"].append(k)
    out["checked"] = checked
    return out


# --- the Markdown table -------------------------------------------------------------------

LABELS = {"iteration": "iteration", "coll_p50": "coll p50", "coll_p99": "coll p99",
          "coll_ratio": "per-coll mean", "bg_p50": "bg p50", "bg_p99": "bg p99"}


def _pct(r) -> str:
    return "-" if r is None else f"{(r - 1) * 100:+.1f}%"


def _ms(ns) -> str:
    ms = ns / 1e6
    return f"{ms:,.0f}" if ms >= 1000 else f"{ms:.4g}"


def _pair(c, key, fmt) -> str:
    """'packet / flow (+x%)' of a figure, '-' when absent."""
    if key not in c:
        return "-"
    a, b, r = c[key]
    return f"{fmt(a)} / {fmt(b)} ({_pct(r)})"


# why a row is outside the target: the sections of FLOW.md's "Why cases are off", measured there
CAUSES = {1: "calibrated share", 2: "the scheme at the packet level", 3: "contention beside an all-to-all",
          4: "chunk lockstep", 5: "queues", 6: "rank skew in durations"}
# the cause of a case's rows that neither the bare fluid (1) nor the scheme (2) explains, by
# the start of the case's name
CASE_CAUSES = {"astra_dgx16": 4, "gallery_training": 3, "khan2022/": 3, "two_jobs": 6, "llama3_70b_1024": 6,
               "gpt_1024": 6, "quickstart": 5, "gallery_fct/": 5}


def headline(run: dict) -> float | None:
    """A run's main figure: its mean iteration, else its median collective, else its
    background p99 slowdown."""
    it, d = _finite(run.get("iterations_ns")), _finite((run.get("collectives") or {}).get("duration_ns"))
    return it.mean() if it.size else float(np.median(d)) if d.size else run.get("background_slowdown_p99")


def cause(name: str, scheme: str, c: dict, packet_none: dict | None, packet: dict) -> int | None:
    """The FLOW.md section that explains a row outside the target: 1 if the bare fluid is
    within or less than half as far off, 2 if the scheme's packet-level figure is off PFC
    alone's by more than TARGET, else the case's own (CASE_CAUSES)."""
    if not c["outside"] or c["problems"]:
        return None
    b = c.get("bare")
    if b is not None and not b["problems"] and (not b["outside"] or farthest(b) < farthest(c) / 2):
        return 1
    if scheme != "none" and packet_none is not None:
        a, b = headline(packet_none), headline(packet)
        if a and b and abs(b / a - 1) > TARGET:
            return 2
    return next((v for k, v in CASE_CAUSES.items() if name.startswith(k)), None)


def _deviation(c, k) -> float:
    return abs((c[k] if k == "coll_ratio" else c[k][2]) - 1)


def farthest(c) -> float:
    """The largest |flow / packet - 1| of a comparison's checked figures."""
    return max((_deviation(c, k) for k in c["checked"]), default=0.0)


def worst(c) -> str:
    """The checked figure of a comparison farthest from the packet level, and the verdict."""
    if c["problems"] or not c["checked"]:
        return "check"
    k = max(c["checked"], key=lambda k: _deviation(c, k))
    return f"{LABELS[k]} {_pct(c[k] if k == 'coll_ratio' else c[k][2])}: {'outside' if c['outside'] else 'within'}"


def row(case: str, scheme: str, c: dict) -> str:
    """One table row of a comparison `c` (from `compare`; its `bare` entry, if any, the
    comparison of the bare fluid)."""
    coll = (f"{_pct(c['coll_ratio'])} [{_pct(c['coll_ratio_min'])}, {_pct(c['coll_ratio_max'])}]"
            if "coll_ratio" in c else "-")
    cpu = (f"{c['cpu'][0]:.1f} / {c['cpu'][1]:.1f} ({c['cpu'][2]:.1f}x)" if "cpu" in c and c["cpu"][2] else "-")
    if c["problems"]:
        verdict = "**check**: " + "; ".join(c["problems"])
    elif c["outside"]:
        why = f" ({c['cause']}: {CAUSES[c['cause']]})" if c.get("cause") else ""
        verdict = f"**outside**{why}: " + ", ".join(f"{LABELS[k]} {_pct(c[k] if k == 'coll_ratio' else c[k][2])}"
                                              for k in c["outside"])
    else:
        verdict = "within"
    return (f"| {case} | {scheme} | {_pair(c, 'iteration', _ms)} | {_pair(c, 'coll_p50', _ms)} | "
            f"{_pair(c, 'coll_p99', _ms)} | {coll} | {_pair(c, 'bg_p50', lambda x: f'{x:.3g}')} | "
            f"{_pair(c, 'bg_p99', lambda x: f'{x:.3g}')} | {cpu} | {verdict} | "
            f"{worst(c['bare']) if 'bare' in c else '-'} |")


HEAD = ("| case | scheme | iteration ms, packet / flow | collective p50 ms | collective p99 ms | "
        "per collective: mean [min, max] | background slowdown p50 | background p99 | CPU s packet / flow "
        "(speed-up) | 5% target | bare fluid (share 1, startup 0): farthest figure |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|")


def table(cases: dict, results: dict, schemes=None, all_schemes=False) -> tuple[str, list]:
    """The Markdown table of `cases` from `results` (key 'case|scheme|mode' -> run_one's
    dict), and the comparisons [(case, scheme, compare dict)]; a case's schemes not run
    get one row saying why, runs missing from `results` are left out."""
    lines, done = [HEAD], []
    for name, case in cases.items():
        for scheme, _ in runs_of(case, schemes, all_schemes):
            p, f = results.get(key(name, scheme, "packet")), results.get(key(name, scheme, "flow"))
            if p is None or f is None:
                continue
            c = compare(p, f)
            if key(name, scheme, BARE) in results:
                c["bare"] = compare(p, results[key(name, scheme, BARE)])
            c["cause"] = cause(name, scheme, c, results.get(key(name, "none", "packet")), p)
            done.append((name, scheme, c))
            lines.append(row(name, scheme, c))
        skipped = [s for s in SCHEMES if s not in case.schemes and (schemes is None or s in schemes)]
        if case.skip and skipped and not all_schemes:
            cells = [name, ", ".join(skipped), f"skipped: {case.skip}"] + [""] * 6 + ["-", "-"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), done


def _within(c) -> bool:
    return not c["outside"] and not c["problems"]


def training_lines(done, kinds) -> str:
    """The calibrated and the bare fluid within the target on training traffic (the platform
    and training rows; the training rows alone): what flow mode's default follows."""
    out = []
    for label, wanted in (("training traffic (platform and training rows)", ("platform", "training")),
                          ("the training rows", ("training",))):
        rows = [c for name, _, c in done if kinds.get(name) in wanted and "bare" in c]
        if rows:
            out.append(f"on {label} {sum(map(_within, rows))} calibrated and "
                       f"{sum(_within(c['bare']) for c in rows)} bare of {len(rows)}")
    return "; ".join(out)


def summary_lines(done, kinds=None) -> str:
    """How many (case, scheme) rows are within the target, by kind of figure; with `kinds`
    ({case: kind}), the calibrated and the bare fluid on training traffic apart."""
    n = len(done)
    within = sum(1 for _, _, c in done if _within(c))
    lines = [f"{within} of {n} rows within {TARGET:.0%} on every figure checked."]
    bare = [c["bare"] for _, _, c in done if "bare" in c]
    if bare:
        ok = sum(1 for c in bare if _within(c))
        lines[0] += f" The bare fluid (share 1, startup 0): {ok} of {len(bare)}."
        training = training_lines(done, kinds) if kinds else ""
        if training:
            lines[0] += f" Within {TARGET:.0%}: {training}."
    off = sorted(((max(_deviation(c, k) for k in c["outside"]), name, s, c)
                  for name, s, c in done if c["outside"]), key=lambda t: -t[0])
    if off:
        more = f"; and {len(off) - 15} more" if len(off) > 15 else ""
        lines.append("Outside, worst first: " + "; ".join(
            f"{name}/{s} ({', '.join(LABELS[k] for k in c['outside'])}: up to {w:.0%})"
            for w, name, s, c in off[:15]) + more + ".")
    return "\n".join(lines)


def size_label(b: int) -> str:
    for unit, k in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b} B"


def by_collective(packet: dict, flow: dict) -> list:
    """The matched collectives' ratios flow / packet grouped by (op, algorithm, ranks,
    size): [(op, algorithm, ranks, size, count, packet mean ns, mean ratio, min, max)],
    largest share of packet-level time first."""
    m = matched(packet, flow)
    if m is None or not m[1].size:
        return []
    idx, ratio = m
    pc = packet["collectives"]
    dur = np.asarray([pc["duration_ns"][i] for i in idx], np.float64)
    groups = {}
    for j, i in enumerate(idx):
        groups.setdefault((pc["op"][i], pc["algorithm"][i], pc["ranks"][i], pc["size_bytes"][i]), []).append(j)
    out = [(*g, len(js), float(dur[js].mean()), float(ratio[js].mean()), float(ratio[js].min()),
            float(ratio[js].max())) for g, js in groups.items()]
    return sorted(out, key=lambda t: -t[4] * t[5])


def details(done, results, limit=8) -> str:
    """For each case with a row outside the target and collectives, its first such row
    (SCHEMES' order: PFC alone first): the collectives' ratios by operation, algorithm and
    size (the groups holding most packet-level time first), calibrated and bare fluid."""
    parts, seen = [], set()
    for name, scheme, c in done:
        if not c["outside"] or "coll_ratio" not in c or name in seen:
            continue
        seen.add(name)
        packet = results[key(name, scheme, "packet")]
        groups = by_collective(packet, results[key(name, scheme, "flow")])
        bare = {g[:4]: g for g in by_collective(packet, results.get(key(name, scheme, BARE), {}))}
        lines = [f"**{name} / {scheme}**", "", "| op | algorithm | ranks | size | count | packet mean ms | "
                 "flow / packet: mean [min, max] | bare fluid / packet |", "|---|---|---|---|---|---|---|---|"]
        for op, alg, ranks, size, n, mean_ns, r, lo, hi in groups[:limit]:
            b = bare.get((op, alg, ranks, size))
            lines.append(f"| {op} | {alg} | {ranks} | {size_label(size)} | {n} | {_ms(mean_ns)} | "
                         f"{_pct(r)} [{_pct(lo)}, {_pct(hi)}] | "
                         + (f"{_pct(b[6])} [{_pct(b[7])}, {_pct(b[8])}] |" if b else "- |"))
        if len(groups) > limit:
            lines.append(f"| ({len(groups) - limit} more groups) | | | | | | | |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


# --- running ----------------------------------------------------------------------------

def key(case: str, scheme: str, mode: str) -> str:
    return f"{case}|{scheme}|{mode}"


def made_at(run: dict, mode: str) -> str:
    """What a stored run was made at: its commit and, for the packet level, what `partition:
    auto` meant then (runs that record nothing were made when it was one part)."""
    part = f" (partition: auto = {run.get('auto_partition', 'none')})" if mode == "packet" else ""
    return run.get("commit", "?") + part


def current(run: dict, mode: str) -> bool:
    """Whether a stored run is what this rocesim would make: a packet-level run made when
    `partition: auto` meant another level is not (its outputs differ; flow mode is one part)."""
    return mode != "packet" or run.get("auto_partition", "none") == config.AUTO_PARTITION


def runs_of(case: Case, schemes, all_schemes: bool):
    """The (scheme, overrides) a case runs: all of SCHEMES with --all-schemes, else its own."""
    if all_schemes and not case.fixed:
        case = Case(case.path, case.kind, tuple(SCHEMES), overrides=case.overrides)
    return case.runs(schemes)


def git_commit() -> str:
    """HEAD's commit, with '+dirty' if the tracked files differ from it."""
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short=10", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no", "rocesim") else "")


def machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return f"{model or platform.processor()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def load_results(path: str) -> dict:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)["runs"]
    return {}


def save_results(path: str, runs: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"about": "validation/flow_vs_packet.py: one entry per 'case|scheme|mode'", "runs": runs},
                  f, separators=(",", ":"))
    os.replace(tmp, path)


def run_all(cases, schemes, all_schemes, rerun, jobs, path, bare=False) -> dict:
    """Run what `results` lacks (or `rerun` asks for), at most `jobs` at a time, saving as
    each run ends; the longest cases first."""
    results = load_results(path)
    todo = [(name, case, s, o, mode) for name, case in cases.items() for s, o in runs_of(case, schemes, all_schemes)
            for mode in MODES + ((BARE,) if bare else ())
            if key(name, s, mode) not in results or not current(results[key(name, s, mode)], mode)
            or {mode, "all", "flow" if mode == BARE else mode} & rerun]
    # the longest first (as long as they took before; a long case's runs if never run), so that
    # two processes end together
    todo.sort(key=lambda t: -results.get(key(t[0], t[2], t[4]), {}).get(
        "cpu_s", 1e9 if SCENARIOS.get(t[0], Case("", "")).skip else 0))
    commit = git_commit()
    lock = threading.Lock()

    def one(t):
        name, case, s, o, mode = t
        sets = {BARE: BARE_SETS, "flow": CALIBRATED_SETS}.get(mode, ())
        r = run_apart(case.path, tuple(o) + sets, "flow" if mode == BARE else mode)
        r.update(commit=commit, auto_partition=config.AUTO_PARTITION, overrides=list(o), path=case.path)
        with lock:
            results[key(name, s, mode)] = r
            save_results(path, results)
        print(f"{name} / {s} / {mode}: " + (r["error"] if "error" in r else f"{r['cpu_s']:.1f} CPU s"),
              file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, 2))) as pool:
        list(pool.map(one, todo))
    return results


def write_markdown(path: str, body: str) -> None:
    """Write `body` between the markers of `path` (keeping what is around them), or as the
    whole file when it has no markers."""
    text = f"{MARK_BEGIN}\n{body}\n{MARK_END}"
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if MARK_BEGIN in old and MARK_END in old:
            text = old[:old.index(MARK_BEGIN)] + text + old[old.index(MARK_END) + len(MARK_END):]
    with open(path, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def _scalars(run: dict) -> dict:
    """A run's figures without its per-collective table (kept in the results file only)."""
    return {k: v for k, v in run.items() if k != "collectives"}


def report(cases, results, done, argv, cpu, summary, text) -> tuple[str, dict]:
    """The Markdown between the markers, and the record kept beside it (FLOW.json): per row
    its runs' figures, the comparisons and the collective groups."""
    used = {m: sorted({made_at(results[key(n, s, m)], m) for n, s, _ in done if key(n, s, m) in results})
            for m in MODES + (BARE,)}
    commits = "; ".join(f"{m} runs at {', '.join(c)}" for m, c in used.items() if c)
    command = " ".join(["python validation/flow_vs_packet.py"] + argv)
    cal = {s: (results[key(n, s, "flow")].get("flow_share"), results[key(n, s, "flow")].get("flow_startup_ns"))
           for n, s, _ in done}
    cal = ", ".join(f"{s} {a:.4g} / {b:.3g} ns" for s, (a, b) in cal.items() if a is not None)
    where = f"{machine()}, {time.strftime('%Y-%m-%d')}"
    body = (f"Generated by `{command}` on {where} ({commits}); {cpu / 60:.1f} CPU-minutes of runs (every run in "
            "the table: packet, flow, and the bare fluid where run; a call reruns only what its results file "
            "lacks). The flow column ran with each scheme's calibration (`flow.share` / `flow.startup` "
            f"'auto', validation/FLOW_CALIBRATION.md): {cal or 'none recorded'}; the bare fluid (flow mode's "
            "default) with share 1 and startup 0.\n\n"
            "Each cell: packet / flow (flow / packet - 1). Collective p50/p99: percentiles of the "
            "collectives' durations; per collective: the ratio of each collective's duration, matched by "
            "id, mean [min, max]; background slowdown: FCT slowdown of the flows that belong to no "
            "collective; CPU: seconds of building and running each, in its own interpreter. "
            f"5% target: iteration mean, collective p50/p99 and the per-collective mean within "
            f"{TARGET:.0%} (background slowdown p50/p99 where a case has no training traffic). "
            "The figures of every row are in FLOW.json.\n\n"
            + summary + "\n\n" + text + "\n\n### Collectives of the cases outside the target\n\n"
            "By operation, algorithm, ranks and size, for each case's first row outside the target; the "
            "groups holding most packet-level time first.\n\n" + (details(done, results) or "(none)"))
    rows = []
    for n, s, c in done:
        runs = {m: _scalars(results[key(n, s, m)]) for m in MODES + (BARE,) if key(n, s, m) in results}
        groups = by_collective(results[key(n, s, "packet")], results[key(n, s, "flow")])
        rows.append(dict(case=n, scheme=s, kind=cases[n].kind, path=cases[n].path, runs=runs, compare=c,
                         groups=[dict(zip(("op", "algorithm", "ranks", "size_bytes", "count", "packet_mean_ns",
                                           "ratio_mean", "ratio_min", "ratio_max"), g)) for g in groups]))
    return body, dict(command=command, machine=where, commits=used, target=TARGET, rows=rows)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="only cases whose name contains this (repeatable)")
    ap.add_argument("-s", "--scheme", action="append", choices=list(SCHEMES), help="only these schemes (repeatable)")
    ap.add_argument("--quick", action="store_true", help=f"the small cases under {', '.join(QUICK_SCHEMES)} only")
    ap.add_argument("--all-schemes", action="store_true", help="run the long platforms under every scheme too")
    ap.add_argument("--rerun", action="append", default=[], choices=["packet", "flow", "all"],
                    help="run again what the results file holds for this mode")
    ap.add_argument("--bare", action="store_true",
                    help="also run the bare fluid (flow.share 1, flow.startup 0) beside the calibrated one")
    ap.add_argument("--results", default=RESULTS, help="the results file (JSON), read and updated")
    ap.add_argument("--table-only", action="store_true", help="run nothing: the table of what the results hold")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="runs at a time (at most 2)")
    ap.add_argument("-o", "--output", help="write the table (Markdown) here")
    ap.add_argument("--one", help=argparse.SUPPRESS)          # a child run: one run's figures as JSON
    args = ap.parse_args(argv)
    if args.one:
        spec = json.loads(args.one)
        print(json.dumps(run_one(spec["path"], spec["overrides"], spec["mode"])))
        return
    cases = all_cases()
    if args.quick:
        cases = {n: c for n, c in cases.items() if c.quick}
    if args.only:
        cases = {n: c for n, c in cases.items() if any(o in n for o in args.only)}
        if not cases:
            ap.error(f"no case matches {args.only}; cases: {', '.join(all_cases())}")
    schemes = args.scheme or (list(QUICK_SCHEMES) if args.quick else None)
    if args.table_only:
        results = load_results(args.results)
    else:
        results = run_all(cases, schemes, args.all_schemes, set(args.rerun), args.jobs, args.results, args.bare)
    text, done = table(cases, results, schemes, args.all_schemes)
    cpu = sum(results[key(n, s, m)].get("cpu_s", 0) for n, s, _ in done for m in MODES + (BARE,)
              if key(n, s, m) in results)
    summary = summary_lines(done, {n: c.kind for n, c in cases.items()})
    print(text + "\n\n" + summary)
    if args.output:
        body, record = report(cases, results, done, argv, cpu, summary, text)
        write_markdown(args.output, body)
        with open(os.path.splitext(args.output)[0] + ".json", "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
