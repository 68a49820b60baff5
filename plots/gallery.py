"""The README's gallery: four small sweeps of shipped scenarios, drawn into docs/gallery/.

    python plots/gallery.py                 # runs what is missing in out/gallery/, then draws
    python plots/gallery.py --out /tmp/g --docs /tmp/g/figs -j 1

* sweeps/gallery_fct.yaml (42 runs): the quickstart fabric at loads 0.2 / 0.4 / 0.6 under
  every scheme, two seeds.  Figures: p99 and p50 slowdown against load, a heatmap of p99
  over scheme x load, and slowdown by flow size of every scheme at load 0.6 (seed 1).
* sweeps/gallery_training.yaml at seeds 1, 2 and 3 (24 runs): one DLRM iteration on a
  16-host 2:1 leaf-spine under every scheme.  Figures: iteration time by scheme (the seeds' mean and
  min-max), and iteration time with where it goes and collective durations.
* sweeps/gallery_load_balancing.yaml under DCQCN and HPCC (144 runs, about 6 CPU-minutes):
  NCCL's ring all-reduce across a 2:1 leaf-spine by load balancing (ECMP with a new hash
  per flow, ECMP per connection, flowlet switching, adaptive routing per flowlet, adaptive
  routing and random spraying per packet into unordered receivers) x queue pairs per
  connection (1, 2, 4), four seeds.  Figures: bus bandwidth against queue pairs, a panel per
  congestion control, a line per way with each seed and their min-max; and the bytes on each
  leaf uplink (ports.csv) of one seed's ECMP draw against adaptive routing.
* sweeps/gallery_transports.yaml (36 runs, about 1 CPU-minute): the four scenarios of
  scenarios/ultra_ethernet/ (an incast, a permutation, NCCL's ring all-reduce, an MoE
  all-to-all on one 2-tier fabric) as RoCE (DCQCN + ECMP), RoCE with adaptive routing per
  packet and as the Ultra Ethernet transport, three seeds.  Figure: completion time and p99
  FCT slowdown by scenario and transport, the seeds' mean and min-max.
* docs/gallery/tables.md: the tables (`rocesim table`) behind the figures.

The sweeps resume (`rocesim sweep`): a rerun draws again from what is done; runs made from
other settings are refused until `--rerun-stale`.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import yaml

from rocesim import sweep
from rocesim.results import read_csv
from rocesim.sweep.index import read_done
from rocesim.sweep.provenance import resolve

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# the training sweep's seeds here (ECMP draws): its figures show the seeds' spread and say
# which differences are within it; the sweep file alone runs seed 1 (and
# validation/flow_vs_packet.py takes its runs as they are there)
TRAINING_SEEDS = [1, 2, 3]

# the load-balancing sweep's congestion control here (a rate-based scheme on ECN, a window on
# INT): its figure shows which differences the scheme makes; the sweep file alone runs DCQCN
LB_SCHEMES = ["dcqcn", "hpcc"]

# the load-balancing sweep's ways (its `zip` rows), by the swept values that tell them apart
LB_WAYS = {"ECMP, a new hash per flow": {"switch.load_balancing.scheme": "ecmp", "nccl.connections": "per_flow"},
           "ECMP per connection": {"switch.load_balancing.scheme": "ecmp", "nccl.connections": "persistent"},
           "flowlet (LetFlow, 10 us)": {"switch.load_balancing.scheme": "flowlet"},
           "adaptive (per flowlet, 10 us)": {"switch.load_balancing.scheme": "adaptive",
                                             "switch.load_balancing.gap": "10us"},
           "adaptive (per packet), unordered receivers": {"switch.load_balancing.scheme": "adaptive",
                                                          "switch.load_balancing.gap": "0us"},
           "spray (per packet, random), unordered receivers": {"switch.load_balancing.scheme": "spray"}}
# the runs the uplink-load figure sets side by side: one seed's ECMP draw against adaptive
# routing, at one queue pair per connection under DCQCN
UPLINK_AT = {"cc.scheme": "dcqcn", "nccl.qps_per_connection": "1", "seed": "1"}
UPLINK_RUNS = {label: {**LB_WAYS[label], **UPLINK_AT}
               for label in ("ECMP per connection", "adaptive (per packet), unordered receivers")}


def _matches(params: dict, way: dict) -> bool:
    """Whether a run's parameters (index.csv's strings, or a spec.Run's values) are `way`'s."""
    return all(str(params.get(k)) == v for k, v in way.items())


def bus_bandwidths(root) -> tuple[list, list, dict]:
    """(congestion-control schemes, queue pairs, {(scheme, way of LB_WAYS, queue pairs): bus
    bandwidths of its seeds, Gb/s}) of the load-balancing sweep folder `root`: each run's
    first collective, collectives.csv's `busbw_gbps`."""
    rows, _ = read_done(root)
    x = "nccl.qps_per_connection"
    schemes = list(dict.fromkeys(r["cc.scheme"] for r in rows))
    qps = sorted({r[x] for r in rows}, key=int)
    got = {(cc, label, q): [] for cc in schemes for label in LB_WAYS for q in qps}
    for r in rows:
        label = next(label for label, way in LB_WAYS.items() if _matches(r, way))
        busbw = read_csv(os.path.join(root, r["run"], "collectives.csv"))["busbw_gbps"][0]
        got[r["cc.scheme"], label, r[x]].append(float(busbw))
    return schemes, qps, got


def bus_bandwidth_table(root) -> str:
    """bus_bandwidths(root) as markdown: a row per scheme and way, a column per queue-pair
    count, the seeds' mean (min-max)."""
    schemes, qps, got = bus_bandwidths(root)
    lines = ["| congestion control | load balancing | " + " | ".join(f"bus bandwidth (Gb/s), {q} QP{'s' * (q != '1')} "
                                                                    "per connection" for q in qps) + " |",
             "|---|---|" + "---|" * len(qps)]
    for cc in schemes:
        for label in LB_WAYS:
            cells = [got[cc, label, q] for q in qps]
            lines.append(f"| {cc} | {label} | " + " | ".join(f"{np.mean(v):.0f} ({min(v):.0f}-{max(v):.0f})"
                                                             for v in cells) + " |")
    return "\n".join(lines + ["", "Cells: mean over seeds (min-max).", ""])


def plot_load_balancing(root, out_path, title) -> str:
    """Bus bandwidth against queue pairs per connection in sweep folder `root`, a panel per
    congestion-control scheme, a line per way of LB_WAYS through its seeds' mean, with
    min-max error bars and every seed a dot (each run's first collective, collectives.csv's
    `busbw_gbps`)."""
    from rocesim.results.axes import plt
    from rocesim.sweep.plot import LINESTYLES, MARKERS, mark_truncated
    schemes, qps, got = bus_bandwidths(root)
    fig, axes = plt.subplots(1, len(schemes), figsize=(3.6 * len(schemes) + 3.2, 4.6), sharey=True, squeeze=False)
    for ax, cc in zip(axes[0], schemes):
        for k, label in enumerate(LB_WAYS):
            runs = [got[cc, label, q] for q in qps]
            at = np.arange(len(qps)) + (k - (len(LB_WAYS) - 1) / 2) * 0.07      # side by side at each x
            mean = np.array([np.mean(v) for v in runs])
            lo_hi = np.array([[m - min(v), max(v) - m] for m, v in zip(mean, runs)]).T
            color = f"C{k}"
            ax.errorbar(at, mean, yerr=lo_hi, fmt=LINESTYLES[k % 4], marker=MARKERS[k], ms=4, color=color,
                        capsize=2, lw=1.2, label=label)
            for a, v in zip(at, runs):
                ax.plot([a] * len(v), v, ".", color=color, ms=3, alpha=0.5)
        ax.set_xticks(range(len(qps)), qps)
        ax.set_xlabel("queue pairs per connection")
        ax.set_title(cc.upper(), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        mark_truncated(ax)
    axes[0][0].set_ylabel("bus bandwidth (Gb/s)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)
    return out_path


# the transport sweep's transports (its `zip` rows), by the swept values that tell them apart
TRANSPORT_WAYS = {"RoCE: DCQCN + ECMP": {"transport": "roce", "switch.load_balancing.scheme": "ecmp"},
                  "RoCE: DCQCN + adaptive routing per packet,\nunordered receivers":
                      {"transport": "roce", "switch.load_balancing.scheme": "adaptive"},
                  "UET: NSCC + receiver credits + REPS\nspraying, trimming, lossy": {"transport": "uet"}}
# a scenario's completion time: its collective's duration, else the time its last flow ends
# (the run stops then: its simulated time)
COMPLETION = {"allreduce": "collective_duration_p50_ns", "alltoall_moe": "collective_duration_p50_ns"}


def plot_transports(root, out_path, title) -> str:
    """Completion time and p99 FCT slowdown by scenario in sweep folder `root`, a bar per
    transport of TRANSPORT_WAYS: the seeds' mean, with their min-max."""
    from rocesim.results.axes import plain_axis, plt
    from rocesim.sweep.index import read_done
    from rocesim.sweep.plot import series_with_range
    rows, _ = read_done(root)
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    width = 0.8 / len(TRANSPORT_WAYS)
    for ax, ylabel, metric_of in ((axes[0], "completion time (ms, log scale)", lambda sc: COMPLETION.get(sc, "sim_time_ns")),
                                  (axes[1], "FCT slowdown p99", lambda sc: "slowdown_p99")):
        for k, (label, way) in enumerate(TRANSPORT_WAYS.items()):
            mean, lo, hi = [], [], []
            for sc in scenarios:
                sel = [r for r in rows if r["scenario"] == sc and all(r[key] == v for key, v in way.items())]
                _, lines, spread = series_with_range(sel, metric_of(sc), "scenario")
                mean.append(lines[None][0])
                lo.append(spread[None][0][0])
                hi.append(spread[None][1][0])
            at = [i + (k - (len(TRANSPORT_WAYS) - 1) / 2) * width for i in range(len(scenarios))]
            ax.bar(at, mean, width, color=f"C{k}", label=label,
                   yerr=[[m - a for m, a in zip(mean, lo)], [b - m for m, b in zip(mean, hi)]], capsize=3)
        ax.set_xticks(range(len(scenarios)), scenarios)
        ax.set_ylabel(ylabel)
    axes[0].set_yscale("log")
    plain_axis(axes[0].yaxis, log=True)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=len(TRANSPORT_WAYS), fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out_path, dpi=120)
    plt.close(fig)
    return out_path


def plot_uplink_load(root, runs, out_path, title) -> str:
    """Bytes sent on each fabric uplink (ports.csv's `tx_bytes`), a panel per tier, switch by
    switch, for each {label: spec.Run} of `runs`, done in sweep folder `root`, side by side; a
    port's tier is the scenario's (Simulation.network.port_tier: 1 a ToR's uplinks, 2 an
    aggregation's ...), and the legend gives each tier's busiest uplink over its mean."""
    from rocesim.results.axes import plt
    ports = {label: read_csv(os.path.join(root, run.name, "ports.csv")) for label, run in runs.items()}
    tier = resolve(next(iter(runs.values())))[0].sim.network.port_tier
    node = next(iter(ports.values()))["node"].astype(int)
    tiers = [int(t) for t in np.unique(tier[tier > 0])]
    fig, axes = plt.subplots(len(tiers), 1, figsize=(10, 3.4 * len(tiers) + 0.8), squeeze=False)
    for ax, t in zip(axes[:, 0], tiers):
        up = np.flatnonzero(tier == t)
        up = up[np.argsort(node[up], kind="stable")]
        width = 0.8 / len(ports)
        for k, (label, p) in enumerate(ports.items()):
            mb = p["tx_bytes"][up] / 1e6
            ax.bar(np.arange(up.size) + (k - (len(ports) - 1) / 2) * width, mb, width, color=f"C{k}",
                   label=f"{label}: busiest {mb.max() / mb.mean():.2f} x mean")
        switches, first = np.unique(node[up], return_index=True)
        for f in first[1:]:
            ax.axvline(f - 0.5, color="0.6", lw=0.8)
        ends = np.append(first[1:], up.size)
        ax.set_xticks((first + ends - 1) / 2, [f"switch {n}" for n in switches], fontsize=8)
        ax.set_xlim(-0.6, up.size - 0.4)
        ax.set_xlabel(f"tier {t} uplinks, switch by switch")
        ax.set_ylabel("bytes sent (MB)")
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncol=len(ports), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)
    return out_path


def transport_tables(root) -> list[str]:
    """The tables.md section of the transport sweep in folder `root`: by scenario, each metric
    of its figure (and the PFC pauses) by transport."""
    from rocesim.sweep.table import markdown
    ways = ["transport", "cc.scheme", "switch.load_balancing.scheme", "nic.delivery"]
    return ["## RoCE and the Ultra Ethernet transport on a 2-tier fabric (sweeps/gallery_transports.yaml, "
            "seeds 1 to 3)", "",
            *[markdown(root, [metric], ways, "scenario")
              for metric in ("collective_duration_p50_ns", "sim_time_ns", "slowdown_p99", "pfc_pauses")]]


def shipped_sweep(name: str, change) -> sweep.Sweep:
    """The runs of sweeps/<name>.yaml with its mapping changed by `change` (the gallery's seeds
    or schemes beside what the file alone runs)."""
    path = os.path.join(ROOT, "sweeps", f"{name}.yaml")
    with open(path) as f:
        raw = yaml.safe_load(f)
    return sweep.expand(change(raw), os.path.dirname(path), path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "out", "gallery"), help="sweep output folder")
    p.add_argument("--docs", default=os.path.join(ROOT, "docs", "gallery"), help="where the figures go")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--rerun-stale", action="store_true",
                   help="run again the finished runs made from other settings (a sweep refuses them otherwise)")
    args = p.parse_args(argv)
    from rocesim.cc import builtin_schemes        # gallery_fct.yaml runs each of them
    from rocesim.sweep.table import markdown
    os.makedirs(args.docs, exist_ok=True)
    fct, training = os.path.join(args.out, "fct"), os.path.join(args.out, "training")
    balancing = os.path.join(args.out, "load_balancing")
    transports = os.path.join(args.out, "transports")
    sweeps = {"gallery_fct": sweep.load(os.path.join(ROOT, "sweeps", "gallery_fct.yaml")),
              "gallery_training": shipped_sweep("gallery_training", lambda raw: {**raw, "seeds": TRAINING_SEEDS}),
              "gallery_load_balancing": shipped_sweep("gallery_load_balancing", lambda raw: {
                  **raw, "grid": {"cc.scheme": LB_SCHEMES, **raw["grid"]}}),
              "gallery_transports": sweep.load(os.path.join(ROOT, "sweeps", "gallery_transports.yaml"))}
    for name, out in (("gallery_fct", fct), ("gallery_training", training), ("gallery_load_balancing", balancing),
                      ("gallery_transports", transports)):
        try:
            rep = sweep.run_runs(sweeps[name], out, processes=args.jobs, rerun_stale=args.rerun_stale)
        except sweep.StaleRuns as e:
            print(f"{e}\n(python plots/gallery.py --rerun-stale runs them again)", file=sys.stderr)
            return 2
        if rep.interrupted or rep.failed:
            print(f"{name}: {rep.failed} failed, interrupted={bool(rep.interrupted)}; not drawing", file=sys.stderr)
            return 1
    from rocesim.results.plot import configuration_label, folder_marks, plot_slowdown, plot_training
    from rocesim.sweep.plot import plot_heatmap, plot_sweep
    docs = args.docs
    written = [
        plot_sweep(fct, os.path.join(docs, "p99_vs_load.png"), metric="slowdown_p99", x="traffic[0].load"),
        plot_sweep(fct, os.path.join(docs, "p50_vs_load.png"), metric="slowdown_p50", x="traffic[0].load"),
        plot_heatmap(fct, "traffic[0].load", "cc.scheme", os.path.join(docs, "p99_heatmap.png"), metric="slowdown_p99"),
    ]
    at60 = [os.path.join(fct, f"cc.scheme={s},traffic[0].load=0.6,seed=1") for s in builtin_schemes()]
    written.append(plot_slowdown([(s, read_csv(os.path.join(d, "flows.csv"))) for s, d in zip(builtin_schemes(), at60)],
                                 os.path.join(docs, "slowdown_by_size_load60.png"), marks=[folder_marks(d) for d in at60],
                                 title="quickstart fabric at load 0.6 (seed 1): FCT slowdown by flow size "
                                       "(equal-count bins; X: the incast's flows)"))
    written.append(plot_sweep(training, os.path.join(docs, "iteration_time.png"), metric="iteration_mean_ns"))
    runs = sweeps["gallery_training"].runs
    written.append(plot_training([(configuration_label(r.name).replace("cc.scheme=", "").replace(",cc.params.window=", "+"),
                                   read_csv(os.path.join(training, r.name, "iterations.csv")),
                                   read_csv(os.path.join(training, r.name, "collectives.csv"))) for r in runs],
                                 os.path.join(docs, "training.png"), title="DLRM, 16 hosts, 2:1 leaf-spine, 100G"))
    written.append(plot_load_balancing(balancing, os.path.join(docs, "load_balancing.png"),
                                       "NCCL ring all-reduce, 256 MiB on 64 GPUs, 100G NICs, 2:1 leaf-spine "
                                       "(lines: mean of 4 seeds; bars: min-max; dots: each seed)"))
    uplink_runs = {label: next(r for r in sweeps["gallery_load_balancing"].runs if _matches(r.params, way))
                   for label, way in UPLINK_RUNS.items()}
    written.append(plot_uplink_load(balancing, uplink_runs, os.path.join(docs, "uplink_load.png"),
                                    "NCCL ring all-reduce of load_balancing.png, DCQCN, 1 queue pair per "
                                    "connection, seed 1: bytes per leaf uplink"))
    written.append(plot_transports(transports, os.path.join(docs, "transports.png"),
                                   "RoCE and the Ultra Ethernet transport on one 2-tier fabric: 32 hosts or GPUs, 100G, "
                                   "1:1 leaf-spine\n(bars: mean of 3 seeds; whiskers: min-max)"))
    tables = ["# Gallery tables", "",
              "Regenerated by `python plots/gallery.py` from `out/gallery/*/index.csv` (means over seeds).", "",
              "## FCT slowdown p99, quickstart fabric (sweeps/gallery_fct.yaml)", "",
              markdown(fct, ["slowdown_p99"], ["cc.scheme"], "traffic[0].load"),
              "## FCT slowdown p50", "",
              markdown(fct, ["slowdown_p50"], ["cc.scheme"], "traffic[0].load"),
              "## DLRM iteration on 16 hosts (sweeps/gallery_training.yaml, seeds 1, 2 and 3)", "",
              markdown(training, ["iteration_mean_ns", "pfc_pauses", "slowdown_p99"]),
              "## NCCL all-reduce across a 2:1 leaf-spine by congestion control, load balancing and queue "
              "pairs (sweeps/gallery_load_balancing.yaml, seeds 1 to 4)", "",
              bus_bandwidth_table(balancing),
              *[markdown(balancing, [metric], ["cc.scheme", "switch.load_balancing.scheme",
                                                 "switch.load_balancing.gap", "nccl.connections"],
                         "nccl.qps_per_connection") for metric in ("collective_duration_p50_ns", "uplink_imbalance")],
              *transport_tables(transports)]
    path = os.path.join(docs, "tables.md")
    with open(path, "w") as f:
        f.write("\n".join(tables))
    written.append(path)
    print("\n".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
