"""The shipped load-balancing scenarios (scenarios/load_balancing/) check cleanly: each
loads, builds its fabric and traffic, and `rocesim check` says so without running it."""
import pytest

from helpers import ROOT
from rocesim.cli import main

SCENARIOS = sorted((ROOT / "scenarios" / "load_balancing").glob("*.yaml"))


def test_the_folder_holds_the_issue_s_cases():
    names = {p.stem for p in SCENARIOS}
    assert {"ecmp_collision", "allreduce_2tier_1to1", "allreduce_2tier_2to1", "alltoall_2tier_1to1"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_each_scenario_checks(path, capsys):
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "flows, scheme dcqcn" in out.splitlines()[0]
