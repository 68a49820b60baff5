"""The README's gallery: two small sweeps of shipped scenarios, drawn into docs/gallery/.

    python plots/gallery.py                 # runs what is missing in out/gallery/, then draws
    python plots/gallery.py --out /tmp/g --docs /tmp/g/figs -j 1

* sweeps/gallery_fct.yaml (42 runs): the quickstart fabric at loads 0.2 / 0.4 / 0.6 under
  every scheme, two seeds.  Figures: p99 and p50 slowdown against load, a heatmap of p99
  over scheme x load, and slowdown by flow size of every scheme at load 0.6 (seed 1).
* sweeps/gallery_training.yaml at seeds 1, 2 and 3 (24 runs): one DLRM iteration on a
  16-host 2:1 leaf-spine under every scheme.  Figures: iteration time by scheme (the seeds' mean and
  min-max), and iteration time with where it goes and collective durations.
* docs/gallery/tables.md: the tables (`rocesim table`) behind the figures.

The sweeps resume (`rocesim sweep`): a rerun draws again from what is done; runs made from
other settings are refused until `--rerun-stale`.
"""
from __future__ import annotations

import argparse
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# the training sweep's seeds here (ECMP draws): its figures show the seeds' spread and say
# which differences are within it; the sweep file alone runs seed 1 (and
# validation/flow_vs_packet.py takes its runs as they are there)
TRAINING_SEEDS = [1, 2, 3]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "out", "gallery"), help="sweep output folder")
    p.add_argument("--docs", default=os.path.join(ROOT, "docs", "gallery"), help="where the figures go")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--rerun-stale", action="store_true",
                   help="run again the finished runs made from other settings (a sweep refuses them otherwise)")
    args = p.parse_args(argv)
    from rocesim import sweep
    from rocesim.cc import builtin_schemes        # gallery_fct.yaml runs each of them
    from rocesim.sweep.table import markdown
    os.makedirs(args.docs, exist_ok=True)
    fct, training = os.path.join(args.out, "fct"), os.path.join(args.out, "training")
    training_file = os.path.join(ROOT, "sweeps", "gallery_training.yaml")
    with open(training_file) as f:
        training_raw = yaml.safe_load(f)
    sweeps = {"gallery_fct": sweep.load(os.path.join(ROOT, "sweeps", "gallery_fct.yaml")),
              "gallery_training": sweep.expand({**training_raw, "seeds": TRAINING_SEEDS},
                                               os.path.dirname(training_file), training_file)}
    for name, out in (("gallery_fct", fct), ("gallery_training", training)):
        try:
            rep = sweep.run_runs(sweeps[name], out, processes=args.jobs, rerun_stale=args.rerun_stale)
        except sweep.StaleRuns as e:
            print(f"{e}\n(python plots/gallery.py --rerun-stale runs them again)", file=sys.stderr)
            return 2
        if rep.interrupted or rep.failed:
            print(f"{name}: {rep.failed} failed, interrupted={bool(rep.interrupted)}; not drawing", file=sys.stderr)
            return 1
    from rocesim.results.plot import configuration_label, folder_marks, plot_slowdown, plot_training
    from rocesim.results import read_csv
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
    tables = ["# Gallery tables", "",
              "Regenerated by `python plots/gallery.py` from `out/gallery/*/index.csv` (means over seeds).", "",
              "## FCT slowdown p99, quickstart fabric (sweeps/gallery_fct.yaml)", "",
              markdown(fct, ["slowdown_p99"], ["cc.scheme"], "traffic[0].load"),
              "## FCT slowdown p50", "",
              markdown(fct, ["slowdown_p50"], ["cc.scheme"], "traffic[0].load"),
              "## DLRM iteration on 16 hosts (sweeps/gallery_training.yaml, seeds 1, 2 and 3)", "",
              markdown(training, ["iteration_mean_ns", "pfc_pauses", "slowdown_p99"])]
    path = os.path.join(docs, "tables.md")
    with open(path, "w") as f:
        f.write("\n".join(tables))
    written.append(path)
    print("\n".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
