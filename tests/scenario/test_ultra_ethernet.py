"""The Ultra Ethernet scenarios (scenarios/ultra_ethernet/, issue 32): each checks cleanly under
each transport the gallery's sweep (sweeps/gallery_transports.yaml) runs it with."""
import pytest

from helpers import ROOT
from rocesim import sweep
from rocesim.cli import main

RUNS = [r for r in sweep.load(str(ROOT / "sweeps" / "gallery_transports.yaml")).runs if r.params["seed"] == 1]


def test_the_sweep_runs_every_ultra_ethernet_scenario_under_three_transports():
    files = sorted(str(p) for p in (ROOT / "scenarios" / "ultra_ethernet").glob("*.yaml"))
    assert len(files) == 4
    assert sorted({r.base for r in RUNS}) == files
    assert len(RUNS) == 3 * len(files)
    assert {r.params["transport"] for r in RUNS} == {"roce", "uet"}


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.name)
def test_each_scenario_checks_under_each_transport(run, capsys):
    assert main(["check", run.base, *(a for o in run.overrides for a in ("--set", o))]) == 0
    assert "ok:" in capsys.readouterr().out
