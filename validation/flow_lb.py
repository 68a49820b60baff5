"""The flow level against the packet level under load balancing (issue 31 item 6).

    python validation/flow_lb.py -o validation/FLOW_LB.md     # about 2 CPU-minutes
    python validation/flow_lb.py --seeds 1                     # one seed, printed

Every case runs per seed at the packet level, in flow mode with the scheme's calibration
(validation/FLOW_CALIBRATION.md, asked by name) and in the bare fluid (`flow.share=bare`,
flow mode's default), one thread, in this interpreter, under each load-balancing scheme of
`SCHEMES`:

* `ecmp_collision`: scenarios/load_balancing/ecmp_collision.yaml (8 pairs of 64 MB across 8
  spines, each pair on its connection): ms until the last byte is ACKed.
* `allreduce 1:1`, `allreduce 2:1`: scenarios/load_balancing/allreduce_2tier_{1to1,2to1}.yaml
  (NCCL's ring all-reduce of 256 MiB on 8 servers x 8 GPUs, one queue pair per connection):
  bus bandwidth, 2 (n-1)/n x size / duration.
* `permutation k=8`: a k=8 fat tree (128 hosts, 100G, 1 us links), every host sends 8 MB to
  another (a random derangement per seed), each pair on its connection, DCQCN: ms until the
  last byte is ACKed, and the median FCT.

Under ECMP the two levels put each connection on the same uplinks (the same hash), so a
seed's error compares like with like.  `adaptive` (per packet, gap 0) and round-robin
`spray` run at the packet level into receivers that place packets on arrival
(`nic.delivery: unordered`, `SCHEMES`), whose mean the fluid's even split is: the table
gives their NACKs and retransmitted bytes (resent on the reorder threshold although they
had arrived) beside the time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from rocesim import Simulation, scenario, topology  # noqa: E402
from rocesim.traffic import patterns  # noqa: E402

LB = os.path.join(ROOT, "scenarios", "load_balancing")
# per-packet schemes run into receivers that place packets on arrival (nic.delivery:
# unordered), as a fabric that sprays needs; the flow level ignores the receiver
UNORDERED = ["nic.delivery=unordered"]
SCHEMES = {"ecmp": [],
           "adaptive (per packet), unordered": ["switch.load_balancing.scheme=adaptive", *UNORDERED],
           "spray (round robin), unordered": ["switch.load_balancing.scheme=spray",
                                              "switch.load_balancing.order=round_robin", *UNORDERED]}
# flow mode with the scheme's calibration (asked by name: flow mode's default is the bare fluid)
MODES = {"packet": [], "flow": ["mode=flow", "flow.share=auto", "flow.startup=auto"],
         "bare": ["mode=flow", "flow.share=bare", "flow.startup=bare"]}
PERMUTATION_SIZE = "8MB"


def _last_ack_ms(res) -> float:
    fl = res.flows
    return float(np.nanmax(fl["start_ns"] + fl["fct_ns"])) / 1e6


def _imbalance(res) -> dict:
    """summary.json's uplink_imbalance: the busiest fabric uplink's bytes over its tier's mean."""
    return {"busiest uplink / mean": res.summary["uplink_imbalance"]}


def _counters(res) -> tuple[int, int]:
    """(NACKs, retransmitted bytes) of a packet-level run (0 in flow mode)."""
    s = res.summary
    return (s["nacks"] or 0, s["retx_bytes"] or 0) if s["mode"] == "packet" else (0, 0)


def collision(settings: list[str], seed: int) -> tuple[dict, tuple]:
    scn = scenario.load(os.path.join(LB, "ecmp_collision.yaml"), [*settings, f"seed={seed}"])
    res = scn.sim.run(scn.stop, progress=False, threads=1)
    return {"last ACK, ms": _last_ack_ms(res), **_imbalance(res)}, _counters(res)


def allreduce(name: str):
    def run(settings: list[str], seed: int) -> tuple[dict, tuple]:
        scn = scenario.load(os.path.join(LB, name), [*settings, f"seed={seed}"])
        res = scn.sim.run(scn.stop, progress=False, threads=1)
        rec = scn.sim.collectives[0]
        n = rec.ranks.size
        bus = 2 * (n - 1) / n * rec.size * 8 / (res.collectives["duration_ns"][0] * 1e-9) / 1e9
        return {"bus bandwidth, Gbps": bus, **_imbalance(res)}, _counters(res)
    return run


def _sections(settings: list[str]) -> tuple[dict, dict]:
    """`--set`-style settings (those of SCHEMES and MODES) as Simulation's switch and keyword arguments."""
    switch, kw = {"load_balancing": {}}, {}
    for s in settings:
        key, value = s.split("=", 1)
        if key.startswith("switch.load_balancing."):
            switch["load_balancing"][key.rsplit(".", 1)[1]] = value
        elif key == "mode":
            kw["mode"] = value
        elif key.startswith("flow."):
            kw.setdefault("flow", {})[key.split(".", 1)[1]] = value
        elif key == "nic.delivery":
            kw["nic"] = {"delivery": value}
        else:
            raise ValueError(key)
    return switch, kw


def permutation(settings: list[str], seed: int) -> tuple[dict, tuple]:
    switch, kw = _sections(settings)
    sim = Simulation(topology.fat_tree(8, "100Gbps", "1us"), cc="dcqcn", seed=seed, switch=switch, **kw)
    sim.add_flows(patterns.permutation(128, PERMUTATION_SIZE, 0, np.random.default_rng(seed), connection=0))
    res = sim.run(progress=False, threads=1)
    return {"last ACK, ms": _last_ack_ms(res),
            "median FCT, ms": float(np.nanmedian(res.flows["fct_ns"])) / 1e6, **_imbalance(res)}, _counters(res)


CASES = {"ecmp_collision": collision, "allreduce 1:1": allreduce("allreduce_2tier_1to1.yaml"),
         "allreduce 2:1": allreduce("allreduce_2tier_2to1.yaml"), "permutation k=8": permutation}


def _spread(values, fmt="{:.2f}") -> str:
    if any(np.isnan(v) for v in values):
        return f"{sum(np.isnan(v) for v in values)} of {len(values)} did not finish"
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}, {fmt.format(max(values))}]"


def _error(flow, packet, nacks) -> str:
    """flow - packet per seed, unless go-back-N NACKed reordered packets at the packet level (in
    any seed: `nacks` the most of them)."""
    if nacks > 0:
        return "not comparable: go-back-N under reordering"
    errs = [100 * (f - p) / p for f, p in zip(flow, packet)]
    return _spread(errs, "{:+.2f}%")


def table(seeds: int) -> list[str]:
    lines = ["| case | load balancing | figure | packet: median [min, max] | packet NACKs, retransmitted MB "
             "(median) | flow: median [min, max] | flow - packet, per seed: median [min, max] | bare fluid "
             "- packet |", "|---|---|---|---|---|---|---|---|"]
    for case, run in CASES.items():
        for scheme, settings in SCHEMES.items():
            got = {m: [run([*settings, *extra], s) for s in range(1, seeds + 1)] for m, extra in MODES.items()}
            nacks = [c[0] for _, c in got["packet"]]
            retx = statistics.median(c[1] for _, c in got["packet"]) / 1e6
            for figure in got["packet"][0][0]:
                values = {m: [fig[figure] for fig, _ in runs] for m, runs in got.items()}
                lines.append(f"| {case} | {scheme} | {figure} | {_spread(values['packet'])} | "
                             f"{statistics.median(nacks):.0f}, {retx:.1f} | {_spread(values['flow'])} | "
                             f"{_error(values['flow'], values['packet'], max(nacks))} | "
                             f"{_error(values['bare'], values['packet'], max(nacks))} |")
                print(lines[-1], file=sys.stderr)
    return lines


def report(seeds: int) -> str:
    """The markdown: how it was made, and the table."""
    return "\n".join([
        "# The flow level against the packet level under load balancing",
        "",
        "Generated by `python validation/flow_lb.py -o validation/FLOW_LB.md` (its docstring says what runs), "
        f"seeds 1..{seeds}, one thread per run. Flow mode: each scheme's calibration (`flow.share=auto`, "
        "`flow.startup=auto`); bare fluid: `flow.share=bare` (flow mode's default). Per-packet schemes run "
        "into receivers that place packets on arrival (`nic.delivery=unordered`).",
        "",
        *table(seeds),
        "",
        "The error is per seed, flow against packet at the same seed: under ECMP both levels put every "
        "connection on the same uplinks (busiest uplink / mean agrees), so it measures the fluid's rates "
        "alone. Per-packet schemes run into receivers that place packets on arrival, so nothing is NACKed "
        "and every row compares with the fluid's even split; the packet level still resends what its "
        "reorder threshold (`nic.reorder_threshold`, 3 packets) declared lost although it had arrived (the "
        "retransmitted MB), and its per-packet choices build queues an even split does not. A row NACKed "
        "on any seed (receivers in order) would not be compared: the packet level's figure there is "
        "go-back-N's collapse ('did not finish': the run stalled). validation/FLOW.md's 'Under load "
        "balancing' reads the table.",
        "",
    ])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", type=Path, help="write the markdown here (default: print it)")
    ap.add_argument("--seeds", type=int, default=4)
    args = ap.parse_args(argv)
    text = report(args.seeds)
    if args.output is None:
        print(text)
    else:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
