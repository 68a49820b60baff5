"""The slowdown figure's size bins follow the flow count, and an incast's flows are marked.

162 flows in 20 bins are 8 a bin: each bin's p95 and p99 are its largest values and
zig-zag from bin to bin; the bins keep about 50 flows or more each, and the incast's few
large flows (the traffic entry of kind incast: their `tag`) are drawn one by one."""
import numpy as np

from helpers import write_scenario
from rocesim import cli
from rocesim.results import plot
from rocesim.results.metrics import MIN_FLOWS_PER_BIN, size_bins, slowdown_by_size


def _flows(n, incast=0):
    rng = np.random.default_rng(3)
    size = np.r_[rng.integers(1000, 10**7, n), np.full(incast, 500_000)].astype(float)
    return {"size_bytes": size, "slowdown": np.r_[1 + rng.random(n) * 20, np.full(incast, 30.0)],
            "is_compute": np.zeros(n + incast, bool), "tag": np.r_[np.zeros(n), np.ones(incast)]}


def test_bins_keep_fifty_flows_or_more():
    assert [size_bins(n) for n in (0, 49, 162, 999, 10**6)] == [1, 1, 3, 19, 20]
    bins = slowdown_by_size(*(_flows(162)[k] for k in ("size_bytes", "slowdown")))
    assert bins["count"].tolist() == [54, 54, 54] and bins["count"].min() >= MIN_FLOWS_PER_BIN
    assert slowdown_by_size(np.arange(10), np.ones(10), n_bins=5)["count"].tolist() == [2] * 5   # asked: as asked


def test_the_quickstart_sized_figure_draws_three_bins_and_the_incast(tmp_path, kept_figures):
    plot.plot_slowdown([("run", _flows(154, incast=8))], tmp_path / "s.png", marks={1: "incast"})
    ax = kept_figures[-1].axes[0]
    binned = [line for line in ax.lines if line.get_label().startswith("run p")]
    assert len(binned) == 3 and all(len(line.get_xdata()) == 3 for line in binned)
    incast, = [line for line in ax.lines if "incast" in line.get_label()]
    assert incast.get_label() == "run: incast (traffic[1], 8 flows)" and len(incast.get_xdata()) == 8
    assert "162 flows in 3 equal-count bins of 54" in ax.get_title()


def test_rocesim_run_and_plot_mark_the_incast(tmp_path, kept_figures, capsys):
    scn = write_scenario(tmp_path, """
topology: {kind: star, hosts: 6, link: {rate: 100Gbps, delay: 1us}}
traffic:
  - {kind: permutation, size: 20KB}
  - {kind: incast, senders: [1, 2, 3], receiver: 0, size: 50KB, start: 5us}
""")
    assert cli.main(["run", scn, "-o", str(tmp_path / "r"), "-q"]) == 0
    labels = [line.get_label() for line in kept_figures[-1].axes[0].lines]
    assert any(label.endswith(": incast (traffic[1], 3 flows)") for label in labels), labels
    # a sweep's run folder records its scenario: `rocesim plot` marks the incast from it
    (tmp_path / "r" / "provenance.json").write_text('{"scenario": {"traffic": [{"kind": "permutation"}, '
                                                    '{"kind": "incast"}]}}')
    assert plot.folder_marks(str(tmp_path / "r")) == {1: "incast"}
    assert cli.main(["plot", str(tmp_path / "r"), "-o", str(tmp_path / "p.png")]) == 0
    labels = [line.get_label() for line in kept_figures[-1].axes[0].lines]
    assert any(label.endswith(": incast (traffic[1], 3 flows)") for label in labels), labels
