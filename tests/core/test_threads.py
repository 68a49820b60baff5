"""A run in parts on threads (issue 20, stage 4: window.pyx): the same run, to the bit,
whatever the number of threads, more threads than cores (4 on the 2-core development
machine) and more threads than parts included; and reruns alike.  No timing here: the
speed-ups are in benchmarks/test_parallel.py."""
import pytest

import pyschemes
from rocesim import Simulation, topology
from rocesim._core import debug, engine
from rocesim.network.partition import Partition
from test_parts import assert_same, readbacks
from test_windows import BUILDERS, LEVELS, core_of
from test_windows_monitors import python_fat_tree

THREADS = (2, 4, 16, 2)         # 16: more than the parts at "pods" (8); 2 again: a rerun


def run_in_slices(core, threads, adapt=False):
    """Mid-run (inside a window, packets on their way between parts), then to the end in
    slices of small event budgets (slices end inside windows); the readbacks at both."""
    assert core.run(150 * 10**6 + 123_457, threads=threads, adapt=adapt) == engine.STOP_TIME
    mid = readbacks(core)
    while core.run(10**12, 40_000, threads=threads, adapt=adapt) != engine.STOP_EMPTY:
        pass
    return mid, readbacks(core), core.window_stats()


@pytest.mark.skipif(engine.MAX_THREADS < 2, reason="built without OpenMP: one thread only")
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", BUILDERS)
def test_the_thread_count_changes_nothing(case, level):
    """PFC pauses and ECN marks across cut links, losses and selective repeat, and
    collectives whose dependencies cross parts: 1, 2 and 4 threads, twice, alike."""
    one = run_in_slices(core_of(case, level), 1)
    assert one[0]["in_use"] > 0 and one[2]["handoffs"] > 0
    for n in THREADS:
        other = run_in_slices(core_of(case, level), n)
        assert_same(one[0], other[0])
        assert_same(one[1], other[1])
        assert other[2] == one[2]


@pytest.mark.skipif(engine.MAX_THREADS < 2, reason="built without OpenMP: one thread only")
@pytest.mark.parametrize("tiers", ["zeros", "reversed"])
def test_where_the_threads_take_their_parts_changes_nothing(tiers, monkeypatch):
    """The threads share the parts out by tier (window.pyx `_homes`, Partition.tiers): one
    tier for all, or the tiers upside down, puts the parts on other threads, not other
    results."""
    one = run_in_slices(core_of("pfc_dcqcn", "leaves"), 1)
    made = Partition.tiers
    other = {"zeros": lambda self, levels: 0 * made(self, levels),
             "reversed": lambda self, levels: -made(self, levels)}[tiers]
    monkeypatch.setattr(Partition, "tiers", other)
    two = run_in_slices(core_of("pfc_dcqcn", "leaves"), 2)
    assert_same(one[0], two[0])
    assert_same(one[1], two[1])
    assert two[2] == one[2]


def test_a_core_refuses_part_tiers_that_are_not_one_per_part():
    """`part_tier` is checked before the parts are made."""
    sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), partition="leaves")
    sim.add_flow(1, 2, 10_000)
    world, params = sim.core_inputs()
    assert world["part_tier"].shape == (20,)
    world["part_tier"] = world["part_tier"][:-1]
    with pytest.raises(ValueError, match="core input 'part_tier' has 19 entries, expected 20"):
        engine.Core(world, params)


def test_threads_beyond_the_parts_or_the_build_are_capped_and_below_one_refused():
    """A star is one part: any thread count runs it as one; 0 threads is refused."""
    runs = []
    for n in (1, 64):
        sim = Simulation(topology.star(5, "100Gbps", "1us"))
        sim.add_flow(1, 2, 100_000)
        core = sim.build_core()
        assert core.run(10**12, threads=n) == engine.STOP_EMPTY
        runs.append(readbacks(core))
    assert_same(runs[0], runs[1])
    core = BUILDERS["pfc_dcqcn"]("pods").build_core()
    with pytest.raises(ValueError, match="threads must be a whole number >= 1"):
        core.run(10**6, threads=0)
    assert engine.MAX_THREADS >= 1


@pytest.mark.parametrize("threads", [1, 2])
def test_the_window_profile_accounts_for_every_event_and_hand_off(threads):
    """Core.window_profile (the scaling model's input): its events sum to the run's, its
    hand-offs to the window stats', each (window, part) once; the same on any threads."""
    core = core_of("pfc_dcqcn", "leaves")
    core.window_profile(True)
    while core.run(10**12, 30_000, threads=threads) != engine.STOP_EMPTY:
        pass
    prof, ws = core.window_profile(), core.window_stats()
    assert prof["events"].sum() == core.stats()["events"]
    assert prof["handoffs"].sum() == ws["handoffs"] > 0
    keys = prof["window"] * core.n_parts + prof["part"]
    assert len(set(keys.tolist())) == len(keys) and prof["window"].max() < ws["windows"]
    assert ((prof["events"] > 0) | (prof["handoffs"] > 0)).all()


@pytest.mark.skipif(engine.MAX_THREADS < 2, reason="built without OpenMP: one thread only")
def test_slices_on_different_thread_counts_make_the_same_run():
    """Slices ending inside windows, each on another number of threads (4, 2, 1, 3, ...):
    the run of one thread, whichever thread ran a part in the slice before."""
    one = run_in_slices(core_of("pfc_dcqcn", "leaves"), 1)
    core = core_of("pfc_dcqcn", "leaves")
    assert core.run(150 * 10**6 + 123_457, threads=4) == engine.STOP_TIME
    mid, k, t = readbacks(core), 0, 150 * 10**6 + 123_457
    while True:                 # odd slices of 3.7 us: most end inside a 1 us window
        t += 3_700_001
        if core.run(t, 5_000, threads=(2, 1, 3, 4)[k % 4]) == engine.STOP_EMPTY:
            break
        k += 1
    assert k > 4
    assert_same(one[0], mid)
    assert_same(one[1], readbacks(core))
    assert core.window_stats() == one[2]


@pytest.mark.skipif(engine.MAX_THREADS < 2, reason="built without OpenMP: one thread only")
def test_a_python_scheme_runs_on_one_thread_whatever_is_asked():
    """Core.run takes 1 thread for a scheme written in Python: its callbacks (here logging
    into one dict the scheme shares) come in the parts' order, the same as on 1 thread."""
    runs = []
    for threads in (1, 4):
        pyschemes.HalveOnEcho.log = {}
        core = python_fat_tree("leaves").build_core()
        assert core.run(10**12, threads=threads) == engine.STOP_EMPTY
        runs.append((readbacks(core), list(pyschemes.HalveOnEcho.log.items())))
    assert_same(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1] and len(runs[0][1]) > 0


@pytest.mark.skipif(engine.MAX_THREADS < 2, reason="built without OpenMP: one thread only")
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", BUILDERS)
def test_a_thread_count_that_changes_between_windows_changes_nothing(case, level):
    """The thread count changing every few windows (1, 2, 4, 3, as `threads: auto` may
    change it; debug.thread_schedule), in slices that end inside windows: the run of one
    thread, and the threads it used are the schedule's."""
    one = run_in_slices(core_of(case, level), 1)
    core = core_of(case, level)
    debug.thread_schedule(core, (1, 2, 4, 3), every=3)
    varying = run_in_slices(core, 1)
    assert_same(one[0], varying[0])
    assert_same(one[1], varying[1])
    assert varying[2] == one[2]
    used = core.thread_stats()
    assert 1 < used["threads_mean"] < min(4, core.n_parts) and used["threads_final"] in (1, 2, 3, 4)
    # the windows' wall time and events by the count they ran on (benchmarks/threads_interleaved.py):
    # every count of the schedule (capped at the parts), and every event counted once
    rates = debug.thread_rates(core)
    assert set(rates) == {min(k, core.n_parts) for k in (1, 2, 4, 3)}
    assert all(wall > 0 and events > 0 for wall, events, _ in rates.values())
    assert sum(events for _, events, _ in rates.values()) == core.stats()["events"]
    # (a window a slice ended inside counts once in each call that ran some of it: run_in_slices
    # makes one call, then one per 40,000 events or more, and a last one)
    calls = 3 + core.stats()["events"] // 40_000
    assert core.window_stats()["windows"] <= sum(windows for _, _, windows in rates.values()) \
        <= core.window_stats()["windows"] + calls


@pytest.mark.skipif(engine.MAX_THREADS < 2, reason="built without OpenMP: one thread only")
def test_adapting_threads_change_nothing_and_say_what_ran():
    """`adapt` (threads: auto) on up to 4 threads: the run of one thread, whatever the
    measurements chose; a fixed count runs that count throughout (but for windows with one
    part to run); one part runs on 1."""
    one = run_in_slices(core_of("pfc_dcqcn", "leaves"), 1)
    core = core_of("pfc_dcqcn", "leaves")
    auto = run_in_slices(core, 4, adapt=True)
    assert_same(one[1], auto[1])
    used = core.thread_stats()
    assert 1 <= used["threads_mean"] <= 4 and 1 <= used["threads_final"] <= 4
    core = core_of("pfc_dcqcn", "leaves")
    run_in_slices(core, 2)
    used = core.thread_stats()      # (a window with one part to run runs on one of them)
    assert used["threads_final"] == 2 and 1.5 < used["threads_mean"] <= 2.0
    sim = Simulation(topology.star(5, "100Gbps", "1us"))
    sim.add_flow(1, 2, 100_000)
    core = sim.build_core()
    core.run(10**12, threads=4, adapt=True)
    assert core.thread_stats() == dict(threads_mean=1.0, threads_final=1)


@pytest.mark.skipif(engine.MAX_THREADS < 2, reason="built without OpenMP: one thread only")
def test_adapting_threads_stay_on_one_when_the_machine_has_no_core_to_spare():
    """`adapt` on a machine whose CPUs are never idle (debug.busy_machine): never a try of
    a second thread, whatever share of a core the first gets; the same run as one thread."""
    one = run_in_slices(core_of("pfc_dcqcn", "leaves"), 1)
    core = core_of("pfc_dcqcn", "leaves")
    debug.busy_machine(core)
    auto = run_in_slices(core, 4, adapt=True)
    assert_same(one[1], auto[1])
    assert core.thread_stats() == dict(threads_mean=1.0, threads_final=1)
    sim = Simulation(topology.star(5, "100Gbps", "1us"))
    with pytest.raises(ValueError, match="busy_machine"):
        debug.busy_machine(sim.build_core())


def test_a_thread_schedule_needs_a_run_in_parts_and_counts_of_one_or_more():
    with pytest.raises(ValueError, match="thread_schedule"):
        debug.thread_schedule(core_of("pfc_dcqcn", "leaves"), (2, 0))
    sim = Simulation(topology.star(5, "100Gbps", "1us"))
    sim.add_flow(1, 2, 100_000)
    with pytest.raises(ValueError, match="thread_schedule"):
        debug.thread_schedule(sim.build_core(), (2,))
