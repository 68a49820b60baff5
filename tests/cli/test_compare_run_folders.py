"""`rocesim table` and `rocesim plot` compare separate `rocesim run` folders as they compare a
sweep's runs: the same metrics, named and formatted alike, a column (or a bar) per folder."""
import json

from helpers import TINY, cli_error, write_scenario
from rocesim.cli import main
from rocesim.sweep.index import metric


def _runs(tmp_path, *sets):
    scn = write_scenario(tmp_path, TINY)
    folders = []
    for name, extra in sets:
        out = tmp_path / name
        assert main(["run", scn, "-o", str(out), "-q", *extra]) == 0
        folders.append(out)
    return folders


def test_table_of_run_folders_has_a_column_per_folder(tmp_path, capsys):
    a, b = _runs(tmp_path, ("none", []), ("dcqcn", ["--set", "cc.scheme=dcqcn"]))
    capsys.readouterr()
    assert main(["table", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| metric | none | dcqcn |"
    assert lines[2] == "| status | ok | ok |"
    p99 = [json.loads((d / "summary.json").read_text())["slowdown_p99"] for d in (a, b)]
    m = metric("slowdown_p99")
    assert f"| {m.label} | {m.fmt.format(p99[0])} | {m.fmt.format(p99[1])} |" in lines     # the sweep table's metrics
    assert [line.split(" | ")[0] for line in lines[3:]] == ["| FCT slowdown p50, all network flows",
                                                            "| FCT slowdown p95, all network flows",
                                                            "| FCT slowdown p99, all network flows"]
    assert main(["table", str(a), str(b), "--metric", "pfc_pauses", "-o", str(tmp_path / "t.md")]) == 0
    assert (tmp_path / "t.md").read_text().splitlines()[3].startswith("| PFC pauses | ")
    assert "--rows and --cols need a sweep folder" in cli_error(capsys, "table", str(a), "--cols", "seed")
    assert "holds no summary.json" in cli_error(capsys, "table", str(a), str(tmp_path))


def test_plot_of_run_folders_draws_a_bar_per_folder_and_groups_a_sweeps_seeds(tmp_path, capsys, kept_figures):
    from rocesim.results import axes
    folders = _runs(tmp_path, *((f"cc.scheme={s},seed={k}", ["--set", f"cc.scheme={s}", "--set", f"seed={k}"])
                                for s in ("none", "dctcp") for k in (1, 2)))
    capsys.readouterr()
    assert main(["plot", *map(str, folders), "--metric", "slowdown_p99"]) == 0
    assert capsys.readouterr().out.strip() == str(folders[0] / "slowdown_p99.png")
    ax = kept_figures[-1].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cc.scheme=none", "cc.scheme=dctcp"]
    assert "2 seeds each" in ax.get_title()
    assert ax.get_ylabel() == metric("slowdown_p99").label
    values = [json.loads((d / "summary.json").read_text())["slowdown_p99"] for d in folders]
    assert [round(p.get_height(), 6) for p in ax.patches] == [round((values[0] + values[1]) / 2, 6),
                                                              round((values[2] + values[3]) / 2, 6)]
    note = " ".join(t.get_text() for t in ax.texts)
    assert axes.WITHIN_ALL in note or axes.BEYOND_ALL in note
    # `rocesim run --force` may replace that run's results, the figure included
    assert main(["run", write_scenario(tmp_path, TINY), "-o", str(folders[0]), "-q", "--force"]) == 0
