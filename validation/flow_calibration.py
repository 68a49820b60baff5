"""The flow mode's calibration per scheme: what the fluid misses, measured at the packet level.

    python validation/flow_calibration.py              # every built-in scheme: writes both files
    python validation/flow_calibration.py dcqcn hpcc   # those schemes only: prints, writes nothing

For every built-in scheme (`rocesim schemes`, each with its defaults, the default NIC and
switch), canonical cases run at the packet level (in one part, `partition: none`, whatever
the default partition) and in flow mode, every flow starting at 0:

* lone: one flow across one switch, 64KB to 16MB, at 100G and 400G;
* incast: n = 2, 4, 8, 16 senders to one host (2MB each at 100G, 8MB at 400G);
* shared: 4 long flows across a dumbbell's bottleneck (8MB each at 100G, 32MB at 400G);
* fanout: one host to 4 others (4MB each at 100G, 16MB at 400G), the flows sharing the
  sender's NIC (as an NCCL rank's channels do) and no switch queue;
* permutation: every host of a fat tree k=4 to another (a fixed derangement; 4MB at 100G,
  16MB at 400G), on the ECMP paths both modes draw alike.

A case's figure is its completion: the last flow's FCT (first byte sent to last ACK back).
The fluid has two calibration parameters (rocesim/_core/fluid.pyx): `share`, the fraction of
every link's capacity its flows may use, and `startup`, a delay before each flow joins.  With
every flow of a case starting together, the fluid's completion is exactly

    flow(share, startup) = startup + A / share + L

(the max-min rates all scale with the capacities, so every send-completion time does; the
latencies after it do not): two flow-mode runs, share 1 and share 1/2 (startup 0), give A and L.
The fit is weighted least squares on relative errors, closed form (`fit`): share and startup
minimise sum_i w_i ((flow_i(share, startup) - packet_i) / packet_i)^2 subject to 0 < share <= 1
and startup >= 0, each family of cases (lone, incast, shared, fanout, permutation) weighing the same
in all (w_i = 1 / the number of cases of its family).  A last flow-mode run with the fitted
numbers gives the calibrated column (it must equal the model's prediction, which the script
checks).  `share_alone` in the tables is the share that would make that case exact by
itself (startup 0): A / (packet - L), the bottleneck's utilisation at the packet level.

Writes rocesim/cc/flow_calibration.json (read by rocesim.cc.calibration: the flow mode's
defaults) and validation/FLOW_CALIBRATION.md, from the same run.  About 10 s of CPU.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from rocesim import Simulation, __version__, topology  # noqa: E402
from rocesim.cc import builtin_schemes  # noqa: E402
from rocesim.cc.calibration import CALIBRATION_FILE  # noqa: E402

COMMAND = "python validation/flow_calibration.py"
MARKDOWN = os.path.join(HERE, "FLOW_CALIBRATION.md")
DELAY = "1us"                        # every link's delay
HALF = 0.5                           # the second flow-mode run's share (gives A and L)
STARTUP_STEP_PS = 1000               # the fitted startup is stored in whole ns
SHARE_DIGITS = 4


@dataclass(frozen=True)
class Case:
    """One canonical case: a family (the fit weighs families alike), a name, the topology
    and its flows (src, dst, size), all starting at 0."""
    family: str
    name: str
    topology: object
    flows: tuple

    def run(self, scheme: str, mode: str, flow=None) -> tuple[float, float]:
        """(completion, mean FCT) in ns of this case under `scheme` in `mode`."""
        # In one part: the calibration is the scheme's, not the partition's (a cut changes
        # the packet runs' random streams and would move a share by ~0.5%, the fit's noise)
        sim = Simulation(self.topology(), cc=scheme, mode=mode, flow=flow, partition="none")
        for src, dst, size in self.flows:
            sim.add_flow(src, dst, size)
        fct = sim.run(progress=False).flows["fct_ns"]
        if np.isnan(fct).any():
            raise RuntimeError(f"{self.name} under {scheme} ({mode} mode): flows did not finish")
        return float(fct.max()), float(fct.mean())


def _derangement(n: int, seed: int = 1) -> np.ndarray:
    """A permutation of 0..n-1 with no fixed point, the first the seeded generator draws."""
    rng = np.random.default_rng(seed)
    while True:
        p = rng.permutation(n)
        if (p != np.arange(n)).all():
            return p


def cases() -> list[Case]:
    """The canonical cases (module docstring), lone flows first."""
    out = []
    for rate in ("100Gbps", "400Gbps"):
        for size in ("64KB", "256KB", "1MB", "4MB", "16MB"):
            out.append(Case("lone", f"lone {size} {rate}", lambda r=rate: topology.star(2, r, DELAY),
                            ((1, 0, size),)))
    for rate, scale in (("100Gbps", 1), ("400Gbps", 4)):
        for n in (2, 4, 8, 16):
            size = f"{2 * scale}MB"
            out.append(Case("incast", f"incast {n}x{size} {rate}", lambda r=rate, n=n: topology.star(n + 1, r, DELAY),
                            tuple((i, 0, size) for i in range(1, n + 1))))
    for rate, scale in (("100Gbps", 1), ("400Gbps", 4)):
        size = f"{8 * scale}MB"
        out.append(Case("shared", f"shared 4x{size} {rate}", lambda r=rate: topology.dumbbell(4, 4, r, DELAY),
                        tuple((i, 4 + i, size) for i in range(4))))
    for rate, scale in (("100Gbps", 1), ("400Gbps", 4)):
        size = f"{4 * scale}MB"
        out.append(Case("fanout", f"fanout 4x{size} {rate}", lambda r=rate: topology.star(5, r, DELAY),
                        tuple((0, i, size) for i in range(1, 5))))
    perm = _derangement(16)
    for rate, scale in (("100Gbps", 1), ("400Gbps", 4)):
        size = f"{4 * scale}MB"
        out.append(Case("permutation", f"permutation 16x{size} {rate}",
                        lambda r=rate: topology.fat_tree(4, r, DELAY),
                        tuple((i, int(perm[i]), size) for i in range(16))))
    return out


def fit(packet, a, lat, weight) -> tuple[float, float]:
    """(share, startup) minimising sum_i weight_i ((startup + a_i / share + lat_i - packet_i) /
    packet_i)^2 with 0 < share <= 1 and startup >= 0: linear least squares in (startup,
    x = 1 / share), closed form.  The objective is a convex quadratic and the constraints
    are x >= 1, startup >= 0, so its minimum is the unconstrained one when that is
    feasible, else the best of the one-dimensional minima on the two edges (each clamped
    to its edge) and the corner (x = 1, startup = 0)."""
    p, a, lat, w = (np.asarray(v, float) for v in (packet, a, lat, weight))
    u2 = w / p ** 2                              # squared weights of the residuals
    y = p - lat                                  # what startup + a x must match

    def cost(d, x):
        return float((u2 * (d + a * x - y) ** 2).sum())

    candidates = [(0.0, 1.0)]
    s11, s12, s22 = u2.sum(), (u2 * a).sum(), (u2 * a * a).sum()
    b1, b2 = (u2 * y).sum(), (u2 * a * y).sum()
    det = s11 * s22 - s12 * s12
    if det > 0:
        d, x = (s22 * b1 - s12 * b2) / det, (s11 * b2 - s12 * b1) / det
        if d >= 0 and x >= 1:
            candidates.append((d, x))
    candidates.append((max(0.0, (b1 - s12) / s11), 1.0))            # share 1: the best startup
    if s22 > 0:
        candidates.append((0.0, max(1.0, b2 / s22)))                # startup 0: the best share
    d, x = min(candidates, key=lambda c: cost(*c))
    return 1.0 / x, d


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _rel(flow: float, packet: float) -> float:
    return flow / packet - 1.0


def calibrate(scheme: str, all_cases: list[Case]) -> dict:
    """The scheme's calibration and every case's figures (the JSON entry)."""
    rows = []
    for case in all_cases:
        packet, packet_mean = case.run(scheme, "packet")
        flow1, flow1_mean = case.run(scheme, "flow", {"share": 1.0, "startup": "0ps"})
        flow_half, _ = case.run(scheme, "flow", {"share": HALF, "startup": "0ps"})
        a = (flow_half - flow1) / (1 / HALF - 1)
        rows.append(dict(case=case.name, family=case.family, flows=len(case.flows), packet_ns=packet,
                         packet_mean_fct_ns=packet_mean, flow_ns=flow1, flow_mean_fct_ns=flow1_mean,
                         a_ns=a, latency_ns=flow1 - a))
    weight = _weights(rows)
    share, startup_ps = _stored(*fit([r["packet_ns"] for r in rows], [r["a_ns"] for r in rows],
                                     [r["latency_ns"] for r in rows], weight))
    for case, r in zip(all_cases, rows):
        cal, cal_mean = case.run(scheme, "flow", {"share": share, "startup": f"{startup_ps}ps"})
        predicted = startup_ps / 1000 + r["a_ns"] / share + r["latency_ns"]
        if abs(cal - predicted) > 1e-6 * predicted + 1:
            raise RuntimeError(f"{scheme}, {case.name}: the calibrated run took {cal} ns, the model says "
                               f"{predicted} ns: flow mode no longer scales as this fit assumes")
        y = r["packet_ns"] - r["latency_ns"]
        r.update(calibrated_ns=cal, calibrated_mean_fct_ns=cal_mean,
                 error_before=_rel(r["flow_ns"], r["packet_ns"]), error_after=_rel(cal, r["packet_ns"]),
                 share_alone=r["a_ns"] / y if y > 0 else None)
    return _tidy(dict(share=share, startup_ps=startup_ps,
                      rms_error_before=_rms([r["error_before"] for r in rows], weight),
                      rms_error_after=_rms([r["error_after"] for r in rows], weight),
                      cases=rows))


def _tidy(v, key=""):
    """`v` with its times to the ps (ns with 3 decimals) and its ratios to 6 decimals."""
    if isinstance(v, dict):
        return {k: _tidy(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [_tidy(x) for x in v]
    if isinstance(v, float) and key not in ("share",):
        return round(v, 3 if key.endswith("_ns") else 6)
    return v


def _weights(rows) -> list[float]:
    """Each case's weight in the fit: 1 / the number of cases of its family."""
    families = [r["family"] for r in rows]
    return [1 / families.count(f) for f in families]


def _stored(share: float, startup_ns: float) -> tuple[float, int]:
    """(share, startup_ps) as stored: share to SHARE_DIGITS decimals, startup in whole ns."""
    return round(share, SHARE_DIGITS), int(round(startup_ns * 1000 / STARTUP_STEP_PS)) * STARTUP_STEP_PS


def _rms(errors, weight) -> float:
    """The root mean square of relative errors, weighted as in the fit."""
    w = np.asarray(weight)
    return float(np.sqrt((w * np.asarray(errors) ** 2).sum() / w.sum()))


FIT_TEXT = ("weighted least squares on relative errors of each case's completion (closed form, "
            "validation/flow_calibration.py:fit): flow(share, startup) = startup + A / share + L, A and L "
            "from two flow-mode runs (share 1 and 1/2, startup 0); 0 < share <= 1, startup >= 0; each family "
            "of cases weighs the same in all")


def _pct(v) -> str:
    return "" if v is None else f"{100 * v:+.1f}%"


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f}"


def markdown(table: dict) -> str:
    out = ["# The flow mode's calibration per scheme", "",
           f"Generated by `{table['command']}` (rocesim {table['rocesim']}, commit {table['commit']}); "
           "the numbers are in `rocesim/cc/flow_calibration.json`, which the flow mode reads "
           "where `flow.share` and `flow.startup` are 'auto' (the default is the bare fluid, 1 and 0; "
           "`rocesim keys flow`).", "",
           "Each case runs at the packet level (in one part, `partition: none`) and in flow mode with "
           "every built-in scheme at its defaults (default NIC and switch, 1 us links), every flow starting at 0. A case's figure is "
           "its completion, the last flow's FCT, in us. *flow* is the bare fluid (share 1, startup 0), "
           "*calibrated* the fluid with the scheme's share and startup; the errors are relative to the "
           "packet level. *share alone* is the share that would make the case exact by itself "
           "(startup 0): the bottleneck's utilisation at the packet level. The mean FCT columns show "
           "what one share cannot: the fluid finishes a case's flows together, the packet level "
           "often does not (unfair shares). Nor can it follow a scheme whose utilisation of a "
           "bottleneck changes with the number of flows or the link rate (the *share alone* column): "
           "the fit takes their compromise, and the errors after it say how far each case is from it.", "",
           f"Fit: {table['fit']}.", "",
           "## Summary", "",
           "RMS errors are weighted as in the fit (each family of cases weighs the same). The flow "
           "mode applies the share only on links where data flows arriving over two links or more "
           "meet and their demand exceeds the link (rocesim/_core/fluid.pyx): where queues build and "
           "schemes act at the packet level. The lone and fanout cases keep the full rate, their "
           "errors are the startup's alone.", "",
           "| scheme | share | startup | RMS error before | RMS error after | worst case after |",
           "|---|---|---|---|---|---|"]
    for name, s in table["schemes"].items():
        worst = max(s["cases"], key=lambda r: abs(r["error_after"]))
        out.append(f"| {name} | {s['share']:.4f} | {s['startup_ps'] / 1e6:g} us | "
                   f"{100 * s['rms_error_before']:.1f}% | {100 * s['rms_error_after']:.1f}% | "
                   f"{worst['case']} ({_pct(worst['error_after'])}) |")
    for name, s in table["schemes"].items():
        out += ["", f"## {name}: share {s['share']:.4f}, startup {s['startup_ps'] / 1e6:g} us", "",
                "| case | packet | flow | error | calibrated | error | share alone | mean FCT packet | "
                "mean FCT calibrated | error |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in s["cases"]:
            alone = "" if r["share_alone"] is None else f"{r['share_alone']:.3f}"
            out.append(f"| {r['case']} | {_us(r['packet_ns'])} | {_us(r['flow_ns'])} | {_pct(r['error_before'])} | "
                       f"{_us(r['calibrated_ns'])} | {_pct(r['error_after'])} | {alone} | "
                       f"{_us(r['packet_mean_fct_ns'])} | {_us(r['calibrated_mean_fct_ns'])} | "
                       f"{_pct(_rel(r['calibrated_mean_fct_ns'], r['packet_mean_fct_ns']))} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("schemes", nargs="*", metavar="SCHEME",
                   help="only these schemes: print their tables and write nothing (default: every "
                        "built-in scheme, written to the package's calibration file and FLOW_CALIBRATION.md)")
    args = p.parse_args(argv)
    names = [n for n, s in builtin_schemes().items() if s.py_class is None]
    unknown = sorted(set(args.schemes) - set(names))
    if unknown:
        p.error(f"unknown scheme {', '.join(unknown)}; built-in schemes: {', '.join(names)}")
    chosen = args.schemes or names
    all_cases = cases()
    table = dict(about="The flow mode's calibration per built-in scheme (rocesim.cc.calibration reads it).",
                 command=COMMAND, rocesim=__version__, commit=_git_commit(), fit=FIT_TEXT,
                 model="flow time = startup + A / share + L for a case whose flows all start together",
                 schemes={})
    t0 = time.process_time()
    for name in chosen:
        table["schemes"][name] = calibrate(name, all_cases)
        s = table["schemes"][name]
        print(f"{name}: share {s['share']:.4f}, startup {s['startup_ps'] / 1e6:g} us, RMS error "
              f"{100 * s['rms_error_before']:.1f}% -> {100 * s['rms_error_after']:.1f}% "
              f"({time.process_time() - t0:.0f} s CPU so far)", file=sys.stderr)
    text = markdown(table)
    if args.schemes:
        print(text)
        return 0
    with open(CALIBRATION_FILE, "w", encoding="utf-8") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    with open(MARKDOWN, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(CALIBRATION_FILE, ROOT)} and {os.path.relpath(MARKDOWN, ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
