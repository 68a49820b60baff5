"""Every shipped scenario, cut into parts (`partition: leaves`), writes byte-identical
outputs on 1, 2 and 4 threads (issue 20; 4 threads on the 2-core development machine
too), and on a thread count that changes every few windows during the run (issue 33:
`threads: auto` changes it as it measures; here debug.thread_schedule fixes the changes).
Each run is `rocesim run` in packet mode, cut short as validation/identity.py cuts it
(its STOPS), and compared file by file (figures aside; summary.json without the keys the
machine decides, `MACHINE_KEYS`) by that script's `fingerprint`."""
import importlib.util
import json
import os
from pathlib import Path

import pytest

import rocesim
from rocesim.results.run import MACHINE_KEYS

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("identity", ROOT / "validation" / "identity.py")
identity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(identity)
# the child runs the rocesim this process imported
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(rocesim.__file__).resolve().parents[1])] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
NAMES = [name for name, _ in identity.scenarios(ROOT) if name not in identity.SKIP]
# `rocesim run` whose core changes its thread count every 2 windows: 1, 2, 4, 3, ...
VARYING = ("-c", """
import sys
from rocesim import run_loop
from rocesim._core import debug
plain = run_loop.RunLoop.run
def run(loop):
    if loop.core.n_parts > 1:
        debug.thread_schedule(loop.core, (1, 2, 4, 3), every=2)
    return plain(loop)
run_loop.RunLoop.run = run
from rocesim.cli import main
sys.exit(main(sys.argv[1:]))
""")


def test_the_keys_left_out_are_the_results_own():
    """identity.py repeats MACHINE_KEYS (it may run another checkout): the same keys."""
    assert identity.MACHINE_KEYS == MACHINE_KEYS


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_scenario_in_parts_is_the_same_on_1_2_and_4_threads_and_on_changing_ones(name, tmp_path):
    path = ROOT / "scenarios" / f"{name}.yaml"
    stop = identity.STOPS.get(name, identity.DEFAULT_STOP)
    runs = {}
    for threads in (1, 2, 4, "varying"):
        out = tmp_path / f"threads{threads}"
        status = identity.run_one(path, stop, out, ENV, str(tmp_path),
                                  ["--set", "partition=leaves", "--threads", "1" if threads == "varying" else str(threads)],
                                  **(dict(launcher=VARYING) if threads == "varying" else {}))
        assert (out / "summary.json").is_file(), f"{name} on {threads} threads: exit {status}, no summary"
        runs[threads] = (status, identity.fingerprint(out))
    assert runs[2] == runs[1]
    assert runs[4] == runs[1]
    assert runs["varying"] == runs[1]
    summary = json.loads((tmp_path / "threads1" / "summary.json").read_text())
    assert summary["partition"] == "leaves"
    # (otherwise the threads had no packet to disagree on)
    assert summary["link_crossings"] > 0, f"{name}: no packet crossed a link by {stop} (identity.STOPS)"
    varied = json.loads((tmp_path / "threadsvarying" / "summary.json").read_text())
    assert summary["parts"] == 1 or varied["threads_mean"] > 1          # (the schedule ran)
