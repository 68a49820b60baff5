"""The PFC pathology recipes of scenarios/pathologies/, swept and drawn.

    python plots/pathologies.py                  # every figure, into docs/pathologies/
    python plots/pathologies.py storm spreading  # some of them
    python plots/pathologies.py --out /tmp/fig loop

Figures (each a handful of runs of at most a few simulated milliseconds):

* loop.png: the routing loop deadlocks iff the injection rate exceeds n B / TTL.
* ring.png: the ring with a rate-limited third flow: deadlock above a threshold.
* victim.png: the victim flow's throughput over time, PFC alone and with each scheme.
* spreading.png: paused links over time as the incast degree grows.
* storm.png: a NIC stops draining; paused links and the innocent flows' throughput,
  without and with the PFC watchdog.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCEN = os.path.join(ROOT, "scenarios", "pathologies")


def run(name, *overrides):
    from rocesim import scenario as sc
    scn = sc.load(os.path.join(SCEN, f"{name}.yaml"), overrides)
    return scn.sim.run(scn.stop, progress=False, sample_interval=scn.output["sample_interval"])


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _deadlock_vs_rate(out, name, setting, rates, extra, label, fig_name, xlabel, title, no_label, mark=None):
    """Run recipe `name` at each rate of `setting` and draw when each deadlock formed."""
    formed = []
    for r in rates:
        res = run(name, f"{setting}={r}Gbps", *extra)
        c = res.summary["deadlock_cycles"]
        formed.append(c[0]["formed_ns"] / 1e3 if c else np.nan)
        print(f"{label} {r} Gbps: deadlock {bool(c)}", file=sys.stderr)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    dead = ~np.isnan(formed)
    ax.plot(np.array(rates)[dead], np.array(formed)[dead], "o", color="C3", label="deadlock (time it formed)")
    ax.plot(np.array(rates)[~dead], np.zeros((~dead).sum()), "x", color="C0", label=no_label)
    if mark is not None:
        ax.axvline(mark[0], color="k", ls="--", label=mark[1])
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("deadlock formed at (us)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, fig_name), dpi=100)
    plt.close(fig)


def loop(out):
    _deadlock_vs_rate(out, "routing_loop", "traffic[0].flows[0].rate", [6, 8, 10, 11, 12, 14, 16, 20, 30, 50], (),
                      "loop", "loop.png", "injection rate into the loop (Gb/s)",
                      "routing loop between two switches, TTL 16", "no deadlock",
                      mark=(12.5, "n B / TTL = 2 x 100G / 16"))


def ring(out):
    _deadlock_vs_rate(out, "ring_third_flow", "traffic[0].flows[2].rate", [2, 4, 6, 7, 8, 9, 10, 20, 50, 100],
                      ("stop=10ms",), "ring third flow", "ring.png", "third flow's rate limit (Gb/s)",
                      "ring of four switches: two CBD flows + a rate-limited third", "no deadlock in 10 ms")


def victim(out):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    from rocesim.cc import builtin_schemes
    for k, cc in enumerate(builtin_schemes()):
        res = run("victim_flow", f"cc.scheme={cc}")
        r = res.samples["rates"]
        sel = r["flow_id"] == 3
        ax.plot(r["time_ns"][sel] / 1e3, r["throughput_bps"][sel] / 1e9, color=f"C{k}",
                label=f"{'PFC alone' if cc == 'none' else cc}")
    ax.axhline(200 / 3, color="k", ls=":", label="its max-min fair share (67 Gb/s)")
    ax.set_xlabel("time (us)")
    ax.set_ylabel("victim flow throughput (Gb/s)")
    ax.set_title("head-of-line blocking: a flow that never crosses the hot port")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "victim.png"), dpi=100)
    plt.close(fig)


SPREAD_SENDERS = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]


def spreading(out):
    from rocesim.results.metrics import paused_links
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    times = np.arange(0, 500_001, 2_000)
    for k, n in enumerate([1, 2, 4, 8, 12]):
        senders = "[" + ", ".join(map(str, SPREAD_SENDERS[:n])) + "]"
        res = run("congestion_spreading", f"traffic[0].senders={senders}")
        ax.plot(times / 1e3, paused_links(res.pfc_timeline, times), color=f"C{k}", label=f"{n}-to-1")
    ax.set_xlabel("time (us)")
    ax.set_ylabel("paused links")
    ax.set_title("congestion spreading in a k=4 fat tree (96 directed links)")
    ax.legend(fontsize=8, title="incast")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "spreading.png"), dpi=100)
    plt.close(fig)


def storm(out):
    from rocesim.results.metrics import paused_links
    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    times = np.arange(0, 2_000_001, 5_000)
    for k, (label, over) in enumerate([("no watchdog", ()),
                                       ("watchdog, drop", ("switch.pfc.watchdog.enabled=true",)),
                                       ("watchdog, forward", ("switch.pfc.watchdog.enabled=true",
                                                              "switch.pfc.watchdog.action=forward"))]):
        res = run("pfc_storm", *over)
        ax1.plot(times / 1e3, paused_links(res.pfc_timeline, times), color=f"C{k}", label=label)
        r = res.samples["rates"]
        t = np.unique(r["time_ns"])
        innocent = np.array([r["throughput_bps"][(r["time_ns"] == x) & (r["flow_id"] >= 2)].sum() for x in t])
        if res.summary["stalled"]:               # frozen for good: nothing moves after the end
            t = np.append(t, [res.summary["sim_time_ns"], times[-1]])
            innocent = np.append(innocent, [0, 0])
        ax2.plot(t / 1e3, innocent / 1e9, color=f"C{k}", label=label, lw=2.5 if k == 0 else 1.2)
    for ax in (ax1, ax2):
        ax.axvline(100, color="k", ls=":")
        ax.set_xlabel("time (us); host 0's NIC stops at 100 us")
    ax1.set_ylabel("paused links")
    ax2.set_ylabel("innocent flows' throughput (Gb/s)")
    ax1.legend(fontsize=8)
    fig.suptitle("PFC storm: a NIC stops draining")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "storm.png"), dpi=100)
    plt.close(fig)


FIGURES = {"loop": loop, "ring": ring, "victim": victim, "spreading": spreading, "storm": storm}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("figures", nargs="*", help=f"some of {', '.join(FIGURES)} (default: all)")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "pathologies"))
    args = p.parse_args(argv)
    bad = [f for f in args.figures if f not in FIGURES]
    if bad:
        p.error(f"unknown figure {bad[0]!r}; choose from {', '.join(FIGURES)}")
    os.makedirs(args.out, exist_ok=True)
    for name in args.figures or FIGURES:
        FIGURES[name](args.out)
        print(os.path.join(args.out, f"{name}.png"))


if __name__ == "__main__":
    main()
