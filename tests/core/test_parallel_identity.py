"""Every shipped scenario, cut into parts (`partition: leaves`), writes byte-identical
outputs on 1, 2 and 4 threads (issue 20; 4 threads on the 2-core development machine
too).  Each run is `rocesim run` in packet mode, cut short as validation/identity.py cuts
it (its STOPS), and compared file by file (figures aside; summary.json without its timing
keys) by that script's `fingerprint`."""
import importlib.util
import json
import os
from pathlib import Path

import pytest

import rocesim

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("identity", ROOT / "validation" / "identity.py")
identity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(identity)
# the child runs the rocesim this process imported
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(rocesim.__file__).resolve().parents[1])] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
NAMES = [name for name, _ in identity.scenarios(ROOT) if name not in identity.SKIP]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_scenario_in_parts_is_the_same_on_1_2_and_4_threads(name, tmp_path):
    path = ROOT / "scenarios" / f"{name}.yaml"
    stop = identity.STOPS.get(name, identity.DEFAULT_STOP)
    runs = {}
    for threads in (1, 2, 4):
        out = tmp_path / f"threads{threads}"
        status = identity.run_one(path, stop, out, ENV, str(tmp_path),
                                  ["--set", "partition=leaves", "--threads", str(threads)])
        assert (out / "summary.json").is_file(), f"{name} on {threads} threads: exit {status}, no summary"
        runs[threads] = (status, identity.fingerprint(out))
    assert runs[2] == runs[1]
    assert runs[4] == runs[1]
    summary = json.loads((tmp_path / "threads1" / "summary.json").read_text())
    assert summary["partition"] == "leaves"
