"""The command line as a new user meets it: no stale files in an output folder, progress in
a log file, --version, `rocesim keys` covering every section, no matplotlib when not plotting."""
import os
import re
import subprocess
import sys

import pytest

from rocesim import cli, run_progress
from rocesim import scenario as sc
from helpers import same_rocesim_env


TINY = """
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
traffic: [{kind: incast, senders: [1, 2, 3], receiver: 0, size: 100KB}]
output: {plot: false}
"""


def _scenario(tmp_path, text=TINY):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def test_run_refuses_a_non_empty_folder_and_force_starts_from_an_empty_one(tmp_path, capsys):
    scn, out = _scenario(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / "training.png").write_bytes(b"stale")                   # left by an earlier run
    assert cli.main(["run", scn, "-o", str(out), "-q"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert os.listdir(out) == ["training.png"]
    assert cli.main(["run", scn, "-o", str(out), "-q", "--force"]) == 0
    assert "training.png" not in os.listdir(out) and "summary.json" in os.listdir(out)
    (out / "notes.txt").write_text("mine")                          # never deleted, even with --force
    assert cli.main(["run", scn, "-o", str(out), "-q", "--force"]) == 2
    assert "did not write" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"


def test_single_run_progress_is_plain_lines_off_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(run_progress, "OFF_TTY_INTERVAL_S", 0.0)     # a line per slice
    scn = sc.build(sc.parse_yaml(TINY.replace("100KB", "2MB"), "t") | {"stop": "300us"})
    scn.sim.run(scn.stop, progress=True, slice="50us")
    err = capsys.readouterr().err                                   # pytest's stderr is no terminal
    assert "\r" not in err
    lines = err.strip().splitlines()
    assert len(lines) >= 4
    assert all(re.fullmatch(r"\[rocesim\] sim \S+ of 300us \(\d+%\)  flows \d+/3  \S+ events at \S+/s  "
                            r"elapsed \d+s", line) for line in lines), lines
    assert lines[-1].startswith("[rocesim] sim 300us of 300us (100%)")


def test_short_numbers():
    assert [run_progress.short_number(x) for x in (950, 12_345, 3_400_000, 2.5e9)] == ["950", "12.3K", "3.4M", "2.5G"]
    assert [run_progress.short_time(ps) for ps in (12_000, 450_000_000, 1_234_567_890, 10**12)] == \
        ["12ns", "450us", "1.23ms", "1s"]


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    import rocesim
    assert capsys.readouterr().out.strip() == f"rocesim {rocesim.__version__}"


def test_a_run_without_plots_does_not_import_matplotlib(tmp_path):
    code = ("import sys; from rocesim import cli; "
            f"rc = cli.main(['run', {_scenario(tmp_path)!r}, '-o', {str(tmp_path / 'out')!r}, '-q']); "
            "assert rc == 0; print(sorted(m for m in sys.modules if m.startswith('matplotlib')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=same_rocesim_env(),
                         cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"
