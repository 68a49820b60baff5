"""Load balancing measured (issue 31): ECMP collisions that last as long as their connection,
the same pairs under each scheme, an NCCL all-reduce's bus bandwidth by queue pairs per
connection and scheme, and an all-to-all's by scheme.

    python validation/load_balancing.py -o validation/LOAD_BALANCING.md   # about 4 CPU-minutes
    python validation/load_balancing.py -o validation/LOAD_BALANCING.md --htsim   # its section too: 1 more
    python validation/load_balancing.py --seeds 2                          # fewer seeds, printed

1. The collision (scenarios/load_balancing/ecmp_collision.yaml: leaf-spine, 2 leaves of 8
   hosts, 8 spines, 100G, DCQCN; host i of leaf 0 sends 64 MB to host i of leaf 1), per
   seed, three ways of sending the same bytes: one flow per pair on its connection (the
   scenario as shipped); 64 flows of 1 MB one after another per pair, all on the pair's
   connection (a QP's messages: one path); the same 64 flows each its own queue pair (a new
   hash per message: rocesim before issue 31).  Per seed: when the last byte is ACKed, and
   the busiest uplink of leaf 0 over the mean of its uplinks (bytes sent).
2. The collision's pairs (a permutation across a 1:1 fabric) under ECMP and each scheme of
   `PER_PACKET` (adaptive routing, random and round-robin spraying, into receivers that
   place packets on arrival): when the last byte is ACKed, against line rate.
3. QP scaling (scenarios/load_balancing/allreduce_2tier_{1to1,2to1}.yaml: NCCL's ring
   all-reduce of 256 MiB on 8 servers x 8 GPUs, two servers per leaf, at 1:1 and 2:1), per
   `CASES` row (settings over the scenario's) and seed: bus bandwidth as nccl-tests counts
   it, 2 (n-1)/n x size / duration.  Every ring hop between leaves leaves its leaf on the
   uplink its connection's hash picks: at 2:1 the uplinks carry exactly what the leaf's
   boundary NICs send, so any imbalance slows the ring; more queue pairs per connection
   spread each hop over more draws (Meta, SIGCOMM'24).  The schemes of `PER_PACKET` join
   with one queue pair.
4. The all-to-all (scenarios/load_balancing/alltoall_2tier_1to1.yaml, 64 MiB per rank on the
   same 64 GPUs, at 1:1 and 2:1): bus bandwidth by `ALLTOALL_CASES`.
5. Against csg-htsim: validation/htsim_lb.py's section (k=8 fat-tree permutations under
   ECMP and adaptive routing, beside htsim's own runs), which it also writes alone; kept
   from the output file as it is unless `--htsim`.

Every run is packet level, on one thread.  `CASES` is the table's rows: a load-balancing
scheme is one more row of settings (`switch.load_balancing...`).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)



import htsim_lb  # noqa: E402  (beside this file)
from rocesim import Simulation, scenario  # noqa: E402
from rocesim.scenario import yaml_file  # noqa: E402
from rocesim.scenario.topology_kinds import build_platform  # noqa: E402
from rocesim.units import parse_size  # noqa: E402

COLLISION = os.path.join(ROOT, "scenarios", "load_balancing", "ecmp_collision.yaml")
ALLREDUCE = {"1:1": os.path.join(ROOT, "scenarios", "load_balancing", "allreduce_2tier_1to1.yaml"),
             "2:1": os.path.join(ROOT, "scenarios", "load_balancing", "allreduce_2tier_2to1.yaml")}
PIECES = 64                       # the collision's second and third ways: 64 flows per pair
# (label, settings over the all-reduce scenario's): its connections and queue pairs
UNORDERED = ["nic.delivery=unordered"]     # receivers that place packets on arrival
# per-packet schemes, into unordered receivers (settings over a scenario's)
PER_PACKET = [("adaptive", "per packet (gap 0), unordered receivers",
               ["switch.load_balancing.scheme=adaptive", "switch.load_balancing.gap=0us", *UNORDERED]),
              ("spray", "random, unordered receivers", ["switch.load_balancing.scheme=spray", *UNORDERED]),
              ("spray", "round robin, unordered receivers",
               ["switch.load_balancing.scheme=spray", "switch.load_balancing.order=round_robin", *UNORDERED])]
CASES = [("ecmp", "per flow (before issue 31)", ["nccl.connections=per_flow"]),
         *[("ecmp", f"{q} QP{'s' if q > 1 else ''} per connection, split", [f"nccl.qps_per_connection={q}"])
           for q in (1, 2, 4, 8)],
         *[("ecmp", f"{q} QPs per connection, round robin",
            [f"nccl.qps_per_connection={q}", "nccl.qp_spread=round_robin"]) for q in (4, 8)],
         *[(scheme, f"1 QP per connection, {label}", settings) for scheme, label, settings in PER_PACKET]]
ALLTOALL = os.path.join(ROOT, "scenarios", "load_balancing", "alltoall_2tier_1to1.yaml")
ALLTOALL_FABRICS = {"1:1": [], "2:1": ["topology.spines=8"]}
# the all-to-all's rows: NCCL's connections (one QP each; the all-to-all does not split
# over more) or a new hash per flow, and the per-packet schemes
ALLTOALL_CASES = [("ecmp", "per flow (before issue 31)", ["nccl.connections=per_flow"]),
                  ("ecmp", "per connection", []), *PER_PACKET]


def collision_run(way: str, seed: int) -> tuple[float, float]:
    """(ms until the last byte is ACKed, busiest uplink of leaf 0 / mean) for one `way`:
    'one flow', 'one connection' or 'a queue pair each'."""
    raw = yaml_file.read(COLLISION)
    top = raw["topology"]
    sim = Simulation(build_platform(top, ROOT), cc=raw["cc"]["scheme"], switch=raw.get("switch"),
                     nic=raw.get("nic"), seed=seed)
    for k, f in enumerate(raw["traffic"][0]["flows"]):
        size = parse_size(f["size"], "size")
        if way == "one flow":
            sim.add_flow(f["src"], f["dst"], size, connection=f["connection"])
            continue
        prev = ()
        for _ in range(PIECES):
            prev = (sim.add_flow(f["src"], f["dst"], size // PIECES, after=prev,
                                 connection=f["connection"] if way == "one connection" else None),)
    res = sim.run(progress=False, threads=1)
    fl = res.flows
    end_ms = float((fl["start_ns"] + fl["fct_ns"]).max()) / 1e6
    p = res.ports
    H = sim.topology.n_hosts
    up = p["tx_bytes"][(p["node"] == H) & (p["peer_node"] >= H + top["leaves"])]
    return end_ms, float(up.max() / up.mean())


def collective_run(path: str, settings: list[str], seed: int) -> float:
    """Bus bandwidth (Gbps, nccl-tests': collectives.csv's `busbw_gbps`) of the scenario's
    collective with `settings`, at `seed`."""
    scn = scenario.load(path, [*settings, f"seed={seed}"])
    res = scn.sim.run(scn.stop, progress=False, threads=1)
    return float(res.collectives["busbw_gbps"][0])


def last_ack_run(path: str, settings: list[str], seed: int) -> tuple[float, float]:
    """(ms until the last byte is ACKed, the same at line rate: the largest ideal FCT) of
    the flows of scenario `path` with `settings`, at `seed`."""
    scn = scenario.load(path, [*settings, f"seed={seed}"])
    fl = scn.sim.run(scn.stop, progress=False, threads=1).flows
    return float((fl["start_ns"] + fl["fct_ns"]).max()) / 1e6, float(fl["ideal_fct_ns"].max()) / 1e6


def _spread(values) -> str:
    return f"{statistics.median(values):.1f} [{min(values):.1f}, {max(values):.1f}]"


WAYS = {"one flow": "1 x 64 MB per pair, on its connection",
        "one connection": f"{PIECES} x 1 MB one after another, on the pair's connection",
        "a queue pair each": f"{PIECES} x 1 MB one after another, each its own queue pair (before issue 31)"}


def collision_section(seeds: int) -> list[str]:
    got = {w: [collision_run(w, s) for s in range(1, seeds + 1)] for w in WAYS}
    ms = {w: [m for m, _ in runs] for w, runs in got.items()}
    lines = ["| way | " + " | ".join(f"seed {s}" for s in range(1, seeds + 1))
             + " | median [min, max] (ms) | busiest uplink / mean, median |",
             "|---|" + "---|" * seeds + "---|---|"]
    for w, name in WAYS.items():
        lines.append(f"| {name} | " + " | ".join(f"{m:.2f}" for m in ms[w]) + f" | {_spread(ms[w])} | "
                     f"{statistics.median(i for _, i in got[w]):.2f} |")
    one, own = ms["one flow"], ms["a queue pair each"]
    return lines + ["", (
        f"A pair's connection keeps its uplink, so the time moves with the seed's draw: {min(one):.1f} to "
        f"{max(one):.1f} ms for one flow per pair, the busiest uplink carrying {statistics.median(i for _, i in got['one flow']):.1f} "
        f"times the mean (balls into bins: 8 connections over 8 uplinks); the 64 messages of a pair on its "
        f"connection follow the same draws. A new hash per message averages the collisions away: "
        f"{min(own):.1f} to {max(own):.1f} ms whatever the seed. Messages one after another on one connection "
        "take longer than one flow of the same bytes: each waits for the previous one's last byte, and each is a "
        "flow of its own in the NIC that starts at line rate with fresh DCQCN state (the core keeps congestion "
        "state per flow), so a collided pair loses more per message.")]


def bandwidth_rows(fabrics: dict, cases: list, seeds: int, bound: float) -> tuple[list[str], dict]:
    """Table rows `| fabric | scheme | label | bus bandwidth median [min, max] | median / bound |`
    over {fabric: (scenario path, settings)} x `cases` (scheme, label, settings) at seeds
    1..`seeds`, and the medians {(fabric, label): Gbps}."""
    rows, median = [], {}
    for fabric, (path, over) in fabrics.items():
        for scheme, label, settings in cases:
            bw = [collective_run(path, [*over, *settings], s) for s in range(1, seeds + 1)]
            median[fabric, label] = statistics.median(bw)
            rows.append(f"| {fabric} | {scheme} | {label} | {_spread(bw)} | {median[fabric, label] / bound:.0%} |")
            print(rows[-1], file=sys.stderr)
    return rows, median


def scaling_section(seeds: int) -> list[str]:
    rows, median = bandwidth_rows({f: (path, []) for f, path in ALLREDUCE.items()}, CASES, seeds, 800)
    lines = ["| fabric | load balancing | queue pairs | bus bandwidth, Gbps: median [min, max] | median / 800 Gbps |",
             "|---|---|---|---|---|", *rows]
    ar, spray = (f"1 QP per connection, {label}" for _, label, _ in PER_PACKET[:2])
    return lines + ["", (
        "Under per-connection ECMP the bus bandwidth rises with the queue pairs per connection, most at 2:1, "
        "where the uplinks carry exactly what the leaf's boundary NICs send and any imbalance slows the "
        "whole ring (Meta's qualitative result, SIGCOMM'24). Split slices finish when their slowest part "
        "does, so round robin (whole slices on the queue pairs in turn) gets more of the same draws. A new "
        "hash per slice (per flow) looks better than any of them: it is the averaging a real fabric does not "
        "do. Per-packet schemes into receivers that place packets on arrival leave no collision: with one "
        f"queue pair adaptive routing reaches {median['2:1', ar] / 800:.0%} of the bound at 2:1 and "
        f"{median['1:1', ar] / 800:.0%} at 1:1, random spraying {median['2:1', spray] / 800:.0%} and "
        f"{median['1:1', spray] / 800:.0%}; what holds random spraying back at 2:1 is what the reorder threshold "
        "resends although it had arrived (its random queues reorder deeper than 3 packets), which four queue "
        "pairs avoid (docs/gallery/load_balancing.png). Rows of "
        "other load-balancing schemes join this table (the script's `CASES`).")]


def alltoall_section(seeds: int) -> list[str]:
    rows, median = bandwidth_rows({f: (ALLTOALL, over) for f, over in ALLTOALL_FABRICS.items()},
                                  ALLTOALL_CASES, seeds, 112.5)
    return ["| fabric | load balancing | connections | bus bandwidth, Gbps: median [min, max] | median / 112.5 Gbps |",
            "|---|---|---|---|---|", *rows, "", alltoall_note(median)]


def alltoall_note(median: dict) -> str:
    """What the all-to-all table shows, from its medians {(fabric, label): Gbps}."""
    ecmp, ar, rand, rr = "per connection", *(label for _, label, _ in PER_PACKET)
    bound = 800 * 64 / (16 * 48) * 63 / 64       # a leaf's 800 Gb/s of uplinks, 16 ranks, 48 of 64 peers away
    return (
        "nccl-tests counts an all-to-all's bus bandwidth as size x (n-1)/n over its time; with PXN the 8 of "
        "every 64 bytes a GPU sends inside its server cross NVLink, the other 56 its 100G NIC, so NICs at line "
        "rate give 100 x 63/56 = 112.5 Gbps. Every NIC talks to many peers at once, each pair on its "
        "connection, so per-connection ECMP throws many of them onto each uplink and averages part of the "
        f"collision away: at 1:1 it reaches {median['1:1', ecmp] / 112.5:.0%} of that, per-packet adaptive "
        f"routing {median['1:1', ar] / 112.5:.0%}, spraying {median['1:1', rand] / 112.5:.0%} (random) and "
        f"{median['1:1', rr] / 112.5:.0%} (round robin). At 2:1 a leaf's 800 Gb/s of uplinks carry what its 16 "
        f"ranks send to the 48 ranks of other leaves: at most {bound:.1f} Gbps, of which per-connection ECMP "
        f"reaches {median['2:1', ecmp] / bound:.0%}, adaptive routing per packet {median['2:1', ar] / bound:.0%} "
        f"(the uplinks, full, bound every scheme), spraying {median['2:1', rand] / bound:.0%} and "
        f"{median['2:1', rr] / bound:.0%}.")


def permutation_section(seeds: int) -> list[str]:
    cases = [("ecmp", "per connection (the scenario)", []), *PER_PACKET]
    lines = ["| load balancing | | last ACK, ms: median [min, max] | line rate / median |", "|---|---|---|---|"]
    for scheme, label, settings in cases:
        got = [last_ack_run(COLLISION, settings, s) for s in range(1, seeds + 1)]
        ms = [m for m, _ in got]
        lines.append(f"| {scheme} | {label} | {_spread(ms)} | {got[0][1] / statistics.median(ms):.0%} |")
        print(lines[-1], file=sys.stderr)
    return lines + ["", (
        "Line rate: the largest ideal FCT (flows.csv's `ideal_fct_ns`). Per-packet schemes move each packet, "
        "so no pair keeps a collided uplink; what keeps them from line rate is how their queues build: "
        "random spraying throws each packet at a port at random, so at full load some uplinks' queues grow "
        "while others idle (the issue asks at least 95% of line rate of adaptive routing and round-robin "
        "spraying).")]


def kept_section(path: str, title: str) -> list[str]:
    """The section of markdown file `path` from heading `title` to the next `## ` heading
    (nothing if the file or the section is missing)."""
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        text = f.read()
    start = text.find(title)
    if start < 0:
        return []
    end = text.find("\n## ", start + len(title))
    return text[start:None if end < 0 else end].rstrip("\n").split("\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="write the markdown here (default: print it)")
    ap.add_argument("--seeds", type=int, default=8, help="seeds of the collision (the collectives: half as many)")
    ap.add_argument("--htsim", action="store_true",
                    help="run validation/htsim_lb.py's section again (else keep the one in --output)")
    args = ap.parse_args(argv)
    seeds, half = args.seeds, max(args.seeds // 2, 1)
    htsim = htsim_lb.section() if args.htsim or not args.output else kept_section(args.output, htsim_lb.TITLE)
    text = "\n".join([
        "# Load balancing, measured",
        "",
        "Generated by `python validation/load_balancing.py -o validation/LOAD_BALANCING.md` "
        "(its docstring says what runs); packet level, one thread per run.",
        "",
        "## ECMP collisions that last (issue 31)",
        "",
        "scenarios/load_balancing/ecmp_collision.yaml: 8 pairs across a leaf-spine of 8 spines, 64 MB each "
        "(line rate: 5.4 ms). When the last byte is ACKed, per seed:",
        "",
        *collision_section(seeds),
        "",
        "## The same pairs by scheme: a permutation across a 1:1 fabric (issue 31)",
        "",
        "scenarios/load_balancing/ecmp_collision.yaml under each load-balancing scheme (settings over the "
        f"scenario's: the script's `PER_PACKET`), seeds 1..{seeds}:",
        "",
        *permutation_section(seeds),
        "",
        "## Bus bandwidth by queue pairs per connection (issue 31)",
        "",
        "scenarios/load_balancing/allreduce_2tier_{1to1,2to1}.yaml: NCCL's ring all-reduce of 256 MiB on 8 "
        f"servers x 8 GPUs (100G NICs: at most 800 Gbps), over seeds 1..{half}:",
        "",
        *scaling_section(half),
        "",
        "## All-to-all by load balancing (issue 31)",
        "",
        "scenarios/load_balancing/alltoall_2tier_1to1.yaml: NCCL's all-to-all of 64 MiB per rank on 8 servers "
        f"x 8 GPUs, at 1:1 as shipped and at 2:1 (`topology.spines=8`), over seeds 1..{half}:",
        "",
        *alltoall_section(half),
        "",
        *htsim,
        "",
    ])
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
