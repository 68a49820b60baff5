"""The core never crashes the interpreter, whatever the Python API does: the cases found in review.

Each case runs in a child interpreter, so that a regression shows as a failed test
(with the child's exit status) instead of killing the test session.
"""
import subprocess
import sys
import textwrap

import rocesim
from helpers import TESTS, same_rocesim_env
from rocesim._core import engine


def run_child(code):
    """Run `code` in a fresh interpreter, with the tests folder on the path, that imports the
    rocesim these tests import, not whichever it would find by itself (an editable install
    of another clone, an unbuilt source folder); its stdout."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=TESTS, timeout=120, env=same_rocesim_env())
    assert proc.returncode == 0, f"child exited {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout


def test_children_import_the_rocesim_under_test():
    out = run_child("import rocesim, rocesim._core.engine as e; print(rocesim.__file__); print(e.__file__)")
    assert out.splitlines() == [rocesim.__file__, engine.__file__]


def test_python_scheme_handles_stay_valid_after_the_run():
    """A handle kept past run() reads its flow's final state; set_timer on it is harmless."""
    out = run_child("""
        import gc
        import pyschemes
        from rocesim import Simulation, topology
        sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:KeepsHandles")
        sim.add_flow(1, 2, 50_000)
        res = sim.run(progress=False)
        del sim, res
        gc.collect()
        h = pyschemes.KeepsHandles.kept[0]
        for _ in range(3):
            h.set_timer(1_000_000, 1)
        gc.collect()
        print(h.size, h.src, h.dst, h.snd_una, h.line_rate_bps)
    """)
    assert out.split() == ["50000", "1", "2", "50000", "100000000000"]


def test_a_core_without_a_scheme_runs_at_line_rate():
    """Every callback starts as a no-op: running the core before install_scheme is safe."""
    out = run_child("""
        from rocesim import Simulation, topology
        from rocesim._core.engine import Core
        sim = Simulation(topology.star(3, "100Gbps", "1us"))
        sim.add_flow(1, 2, 100_000)
        world, params = sim.core_inputs()
        core = Core(world, params)
        core.run(10**12)
        print(core.stats()["flows_done"], core.flow_arrays()["finish_ps"][0] > 0)
    """)
    assert out.split() == ["1", "True"]


def test_the_core_takes_read_only_flow_columns():
    """The core copies its inputs: read-only arrays (a memory map, a frozen column) are
    accepted and give the same run as writable ones."""
    out = run_child("""
        import numpy as np
        from rocesim import Simulation, topology
        from rocesim._core.engine import Core
        sim = Simulation(topology.star(3, "100Gbps", "1us"))
        sim.add_flow(1, 2, 100_000)
        finish = []
        for frozen in (False, True):
            world, params = sim.core_inputs()
            for k, v in world.items():
                if k.startswith("flow_") and isinstance(v, np.ndarray):
                    v.setflags(write=not frozen)
            core = Core(world, params)
            core.run(10**12)
            finish.append(int(core.flow_arrays()["finish_ps"][0]))
        print(finish[0] == finish[1] > 0)
    """)
    assert out.split() == ["True"]


def test_pathology_inputs_are_checked_before_they_reach_c():
    """Faults, routes, the detector and the watchdog reject bad input with ValueError."""
    out = run_child("""
        from rocesim import Simulation, topology
        from rocesim._core.engine import Core
        sim = Simulation(topology.star(3, "100Gbps", "1us"))
        sim.add_flow(1, 2, 10_000)
        world, params = sim.core_inputs()
        core = Core(world, params)
        bad = [
            lambda: core.set_faults([0], [9], [0], [0]),            # unknown kind
            lambda: core.set_faults([0], [0], [7], [0]),            # nic_stop of a host that is not
            lambda: core.set_faults([0], [2], [99], [0]),           # link_down of no port
            lambda: core.set_faults([0], [4], [0], [0]),            # a rate of 0
            lambda: core.set_faults([-5], [2], [0], [0]),           # in the past
            lambda: core.set_routes([0] * 3, [1] * 3, [99]),        # a port that does not exist
            lambda: core.set_routes([0], [1], [0]),                 # wrong table size
            lambda: core.enable_deadlock_detection(0, 0),
            lambda: core.enable_watchdog(10, 0, 0, 5),
        ]
        n = 0
        for f in bad:
            try:
                f()
            except ValueError:
                n += 1
        core.enable_deadlock_detection(10**6, 10**7)
        try:
            core.enable_deadlock_detection(10**6, 10**7)
        except ValueError:
            n += 1
        core.set_faults([1000, 2000], [2, 3], [0, 0], [0, 0])
        core.run(10**9)
        print(n, core.stats()["link_drops"] >= 0)
    """)
    assert out.split() == ["10", "True"]
