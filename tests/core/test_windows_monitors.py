"""The deadlock detector, the PFC watchdog and a scheme written in Python in a run in parts
(issue 20, stage 3: monitors.pyx, cc_python.pyx).

A check looks at every part's ports between two windows, and a window ends just after the
next check, so each check runs at its time, after every event up to it: a run in parts
finds the same cycles at the same checks, and its watchdog acts at the same polls, as in
one part (only the order of events at one picosecond may differ, and none does here).
Whatever the order the parts run in, the results are the same."""
import numpy as np
import pytest

import pyschemes
from helpers import switch_ring
from rocesim import Simulation, topology, traffic
from rocesim._core import debug, engine
from test_faults import storm_sim
from test_parts import assert_same, readbacks
from test_windows import ORDERS

US = 10**6
ALL_ORDERS = [("forward", 0)] + ORDERS


def triangle(part, **kw):
    """switch_ring(3) (three parts at `leaves`: each switch with its host) and three
    two-hop flows the same way round: a PFC deadlock whose queues are in three parts."""
    sim = Simulation(switch_ring(3), switch={"buffer": "1MB"}, partition=part, **kw)
    for h in range(3):
        sim.add_flow(h, (h + 2) % 3, 5_000_000, path=[h, 3 + h, 3 + (h + 1) % 3, 3 + (h + 2) % 3, (h + 2) % 3])
    return sim


def cores(build, part, orders=ALL_ORDERS):
    out = []
    for order in orders:
        core = build(part).build_core()
        debug.part_order(core, *order)
        out.append(core)
    return out


def run_alike(cs, until, status):
    """Run every core to `until`: the same status, readbacks and deadlock records."""
    for c in cs:
        assert c.run(until) == status
    first = readbacks(cs[0])
    for c in cs[1:]:
        assert_same(first, readbacks(c))
        assert c.deadlock_records() == cs[0].deadlock_records()
    return first


DETECT = dict(interval="50us", threshold="500us")


def test_parts_detector_finds_the_cycle_at_the_check_one_part_finds_it():
    """With timers ticking (a late timeout), the queues paused for the threshold: the same
    cycle, formed and found at the same times as in one part, at a check (a multiple of
    the interval), between the threshold and the threshold plus one interval after it
    formed, whatever the order the parts run in."""
    build = lambda part: triangle(part, nic={"rto": "10ms"}, deadlock=DETECT)   # noqa: E731
    parts = cores(build, "leaves")
    assert parts[0].n_parts == 3
    run_alike(parts, 3_000 * US, engine.STOP_TIME)
    (rec,) = parts[0].deadlock_records()
    one = build("none").build_core()
    one.run(3_000 * US)
    assert one.deadlock_records() == [rec]
    sim = build("leaves")
    assert len(set(sim.partition("leaves").part_of_node[sim.ports.node[rec["ports"]]])) == 3
    assert sorted(rec["flows"]) == [0, 1, 2]
    assert rec["detected_ps"] % (50 * US) == 0
    assert 500 * US <= rec["detected_ps"] - rec["formed_ps"] < 550 * US


def test_parts_detector_stops_the_run_at_its_check():
    build = lambda part: triangle(part, nic={"rto": "10ms"}, deadlock=dict(DETECT, stop=True))   # noqa: E731
    parts = cores(build, "leaves")
    end = run_alike(parts, 3_000 * US, engine.STOP_DEADLOCK)
    (rec,) = parts[0].deadlock_records()
    assert end["now"] == rec["detected_ps"]          # nothing ran after the check
    one = build("none").build_core()
    assert one.run(3_000 * US) == engine.STOP_DEADLOCK and one.deadlock_records() == [rec]


def test_parts_frozen_network_is_analysed_over_every_parts_queues():
    """No timeout, detection off: the triangle freezes, no event is left in any part; the
    stall's analysis walks the three parts' queues and finds the cycle one part finds,
    with the flows whose packets wait in it (in three parts' pools)."""
    found = {}
    for part in ("none", "leaves"):
        cs = cores(triangle, part, ALL_ORDERS if part else [("forward", 0)])
        run_alike(cs, 10**12, engine.STOP_EMPTY)
        for c in cs:
            assert c.stats()["flows_done"] == 0 and c.next_event_ps == -1
            assert c.deadlocks_at_stall(0) == 1
        found[part] = cs[0].deadlock_records()
        for c in cs[1:]:
            assert c.deadlock_records() == found[part]
    (rec,) = found["leaves"]
    assert found["none"] == [rec] and sorted(rec["flows"]) == [0, 1, 2]
    res = triangle("leaves").run()
    assert res.summary["stalled"] and res.summary["deadlock"] is True
    assert res.summary["deadlock_cycles"][0]["formed_ns"] * 1000 == rec["formed_ps"]


@pytest.mark.parametrize("action,forever", [("drop", True), ("forward", True), ("drop", False)])
def test_parts_watchdog_contains_the_storm_as_in_one_part(action, forever):
    """pfc_storm's fabric (4 parts at `leaves`): the watchdog finds the leaf's port to the
    stuck NIC at the same poll, drops (or forwards) the same packets, restores it when
    the NIC resumes; the flows end the run with the same bytes as in one part, whatever
    the order the parts run in."""
    build = lambda part: storm_sim(action, forever, part)      # noqa: E731
    parts = cores(build, "leaves")
    assert parts[0].n_parts == 4
    end = run_alike(parts, 1_500 * US, engine.STOP_TIME)
    one = build("none").build_core()
    one.run(1_500 * US)
    ref = readbacks(one)
    np.testing.assert_array_equal(end["flows"]["delivered_bytes"], ref["flows"]["delivered_bytes"])
    for col in ("watchdog_detections", "watchdog_restorations", "watchdog_drops", "buffer_drops", "tx_packets"):
        np.testing.assert_array_equal(end["ports"][col], ref["ports"][col])
    sw = build("none")
    tor = np.flatnonzero((sw.ports.node == 8) & (sw.ports.peer_node == 0))[0]
    assert end["ports"]["watchdog_detections"][tor] == 1
    assert end["ports"]["watchdog_restorations"][tor] == (0 if forever else 1)
    if action == "drop":
        assert end["ports"]["watchdog_drops"][tor] > 0
    else:
        assert end["stats"]["nic_drops"] > 0
    assert end["flows"]["delivered_bytes"][2:].min() > 3_000_000          # the innocent flows ran on


def python_fat_tree(part, scheme="pyschemes:HalveOnEcho"):
    """fat_tree(4) with PFC and ECN marks (the parts' RNG streams) under a scheme written
    in Python: a permutation and an incast across the pods."""
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, seed=3, cc=scheme, partition=part,
                     switch={"buffer": "300KB", "pfc": {"enabled": True},
                             "ecn": {"kmin": "20KB", "kmax": "80KB", "pmax": 0.2}})
    sim.add_flows(traffic.permutation(t.n_hosts, 200_000, 0, np.random.default_rng(3)))
    sim.add_flows(traffic.incast(list(range(1, 9)), 0, 150_000, 20 * US))
    return sim


def test_parts_python_scheme_runs_alike_whatever_the_order():
    """Each flow's callbacks run in its sender's part, in its own time order: the same
    decisions (rate cuts on ECN echoes and CNPs, timers) and the same readbacks, mid-run
    and at the end, whatever the order the parts run in."""
    logs = []
    cs = []
    for order in ALL_ORDERS:
        pyschemes.HalveOnEcho.log = {}
        core = python_fat_tree("leaves").build_core()
        debug.part_order(core, *order)
        assert core.run(60 * US + 123) == engine.STOP_TIME
        cs.append((core, pyschemes.HalveOnEcho.log))
    mid = readbacks(cs[0][0])
    assert mid["in_use"] > 0
    for core, log in cs:
        assert_same(mid, readbacks(core))
        pyschemes.HalveOnEcho.log = log
        assert core.run(10**12) == engine.STOP_EMPTY
        logs.append(log)
    end = readbacks(cs[0][0])
    for core, _ in cs[1:]:
        assert_same(end, readbacks(core))
    for log in logs[1:]:
        assert log == logs[0]
    kinds = {k for entries in logs[0].values() for k, *_ in entries}
    assert {"start", "cut", "timer"} <= kinds
    sim = python_fat_tree("none")
    sizes = sim.flow_column("size")
    np.testing.assert_array_equal(end["flows"]["delivered_bytes"], sizes)
    assert end["stats"]["time_errors"] == 0 and end["stats"]["packets_in_use"] == 0


def test_parts_python_scheme_exception_stops_the_run_alike_whatever_the_order():
    """A callback raises (each flow's third ACK): its part stops, the others finish the
    window; the error surfaces from run() and the results so far do not depend on the
    order the parts run in."""
    cs = cores(lambda part: python_fat_tree(part, "pyschemes:Broken"), "leaves")
    for c in cs:
        with pytest.raises(ZeroDivisionError, match="on purpose"):
            c.run(10**12)
    first = readbacks(cs[0])
    assert 0 < first["stats"]["acks"] and first["stats"]["flows_done"] == 0
    for c in cs[1:]:
        assert_same(first, readbacks(c))
