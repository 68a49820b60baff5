"""PFC deadlock detection: exactly the cases that deadlock, with the right cycle."""
import json

import numpy as np
import pytest

from helpers import loop_routes, switch_ring, two_switch_loop
from rocesim import ScenarioError, Simulation, topology
from rocesim.cli import _exit_status


def loop_run(rate, size=1_000_000, partition="auto", **deadlock):
    t, a, b = two_switch_loop()
    sim = Simulation(t, switch={"buffer": "1MB"}, nic={"ttl": 16}, routes=loop_routes(a, b),
                     deadlock={"threshold": "200us", **deadlock}, partition=partition)
    sim.add_flow(0, 1, size, rate=rate)
    return sim, sim.run()


@pytest.mark.parametrize("rate,deadlocks", [("10Gbps", False), ("16Gbps", True)])
def test_routing_loop_deadlocks_iff_injection_exceeds_n_b_over_ttl(rate, deadlocks):
    """Each packet crosses the 2-switch loop TTL - 1 = 15 times, 8 of them on the busier
    direction: that link saturates above 100G / 8 = 12.5 Gb/s = n B / TTL (Hu et al.,
    HotNets 2016).  Below, packets die by TTL and nothing stays paused."""
    sim, res = loop_run(rate)
    s = res.summary
    assert s["deadlock"] is deadlocks
    assert s["ttl_drops"] > 0 and s["flows_completed"] == 0       # the loop never delivers
    if not deadlocks:
        assert s["deadlock_cycles"] == [] and s["ttl_drops"] == 1000     # every packet died by TTL
        return
    (c,) = s["deadlock_cycles"]
    assert c["priority"] == 3 and c["flows"] == [0]
    assert c["switches"] == [2, 3] and c["links"] == ["2->3", "3->2"]
    assert all(sim.ports.node[p] == n for p, n in zip(c["ports"], c["switches"]))
    # paused continuously since it formed: the two loop ports are still paused at the end
    assert all(res.ports["paused_now"][c["ports"]] & (1 << 3))
    tl = res.pfc_timeline
    for p in c["ports"]:
        open_ = (tl["port"] == p) & np.isnan(tl["pause_end_ns"])
        assert open_.sum() == 1 and tl["pause_start_ns"][open_][0] <= c["formed_ns"]
    assert c["formed_ns"] in tl["pause_start_ns"][np.isnan(tl["pause_end_ns"])]


def test_triangle_of_two_hop_flows_deadlocks_with_the_cycle_in_flow_order():
    t = switch_ring(3)                                     # hosts 0..2, switches 3..5
    # a (late) timeout keeps events pending, so the threshold rule applies (not a frozen network)
    sim = Simulation(t, switch={"buffer": "1MB"}, nic={"rto": "10ms"},
                     deadlock={"interval": "50us", "threshold": "500us"})
    for h in range(3):                                     # h -> h+2, the same way round
        sim.add_flow(h, (h + 2) % 3, 5_000_000, path=[h, 3 + h, 3 + (h + 1) % 3, 3 + (h + 2) % 3, (h + 2) % 3])
    res = sim.run(stop="3ms")
    (c,) = res.summary["deadlock_cycles"]
    # each queue waits on the next one downstream: 3->4, 4->5, 5->3 (rotated to start anywhere)
    links = c["links"]
    k = links.index("3->4")
    assert links[k:] + links[:k] == ["3->4", "4->5", "5->3"]
    assert sorted(c["flows"]) == [0, 1, 2]
    assert c["detected_ns"] - c["formed_ns"] >= 500_000             # paused for the threshold
    assert c["detected_ns"] - c["formed_ns"] < 500_000 + 50_000 + 1  # found at the next check
    assert res.summary["flows_completed"] == 0


def ring_flows(sim, third=None):
    # two flows with a cyclic buffer dependency round the 4-ring: 0 -> 3 and 2 -> 1
    sim.add_flow(0, 3, 60_000_000, path=[0, 4, 5, 6, 7, 3])
    sim.add_flow(2, 1, 60_000_000, path=[2, 6, 7, 4, 5, 1])
    if third:
        sim.add_flow(1, 3, 60_000_000, path=[1, 5, 6, 7, 3])


def test_cyclic_buffer_dependency_without_deadlock_is_not_reported():
    """The two flows pause each other on and off (a CBD), but links 5->6 and 7->4 each carry
    one flow and never fill: the cycle never closes, nothing is reported."""
    sim = Simulation(switch_ring(4), switch={"buffer": "1MB"},
                     deadlock={"interval": "20us", "threshold": "100us"})
    ring_flows(sim)
    res = sim.run(stop="4ms")
    assert res.summary["pfc_pauses"] > 100                          # pauses come and go
    assert res.summary["deadlock"] is False and res.summary["deadlock_cycles"] == []
    assert res.flows["delivered_bytes"].min() > 15_000_000            # both keep moving


def test_a_third_flow_closes_the_ring_into_a_deadlock():
    sim = Simulation(switch_ring(4), switch={"buffer": "1MB"}, deadlock={"threshold": "100us"})
    ring_flows(sim, third=True)
    res = sim.run(stop="4ms")
    (c,) = res.summary["deadlock_cycles"]
    k = c["links"].index("4->5")
    assert c["links"][k:] + c["links"][:k] == ["4->5", "5->6", "6->7", "7->4"]
    assert set(c["flows"]) <= {0, 1, 2} and {0, 1} <= set(c["flows"])


def test_stop_at_the_first_deadlock():
    sim, res = loop_run("40Gbps", stop=True)
    s = res.summary
    assert s["deadlock"] and s["stopped_at_deadlock"]
    (c,) = s["deadlock_cycles"]
    assert s["sim_time_ns"] <= c["detected_ns"] + 1e-9


def test_a_frozen_network_reports_its_cycle_whatever_the_threshold():
    """No timeout under PFC: once the loop is stuck no event is left, and a cycle present
    then is a deadlock for good, reported though it is younger than the threshold."""
    sim, res = loop_run("40Gbps", threshold="1s")
    assert res.summary["deadlock"] and res.summary["stalled"]


@pytest.mark.parametrize("partition", ["none", "leaves"])
def test_the_detector_costs_no_event_when_off_and_validates_its_keys(partition):
    t, a, b = two_switch_loop()
    plain = Simulation(t, routes=loop_routes(a, b), nic={"ttl": 16}, partition=partition)
    plain.add_flow(0, 1, 100_000, rate="5Gbps")
    off = plain.run()
    assert off.summary["deadlock_detection"] is False and off.summary["deadlock"] is False
    sim, on = loop_run("5Gbps", size=100_000, partition=partition)
    assert on.summary["deadlock_detection"] is True
    assert on.summary["parts"] == (1 if partition == "none" else 2)
    # in one part its checks are events; in parts they run between windows, not as events
    extra = on.summary["events"] - off.summary["events"]
    assert extra > 0 if partition == "none" else extra == 0
    # it only looks: the run is the same event for event
    assert on.summary["link_crossings"] == off.summary["link_crossings"]
    assert on.summary["ttl_drops"] == off.summary["ttl_drops"]
    assert (on.pfc_timeline["pause_start_ns"] == off.pfc_timeline["pause_start_ns"]).all()
    for bad, key in (({"interval": "0us"}, "deadlock.interval"), ({"every": "1us"}, "deadlock.every"),
                     ({"stop": "yes"}, "deadlock.stop"), ("on", "deadlock")):
        with pytest.raises(ScenarioError) as e:
            Simulation(t, deadlock=bad)
        assert e.value.key == key


def test_exit_status_and_files(tmp_path, capsys):
    sim, res = loop_run("40Gbps")
    res.write(tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["deadlock"] is True and summary["deadlock_cycles"][0]["links"] == ["2->3", "3->2"]
    text = (tmp_path / "deadlocks.csv").read_text().splitlines()
    assert text[0] == "cycle,formed_ns,detected_ns,priority,length,switches,ports,links,flows"
    assert len(text) == 2 and ",2->3 3->2," in text[1]
    assert _exit_status(summary) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rocesim: deadlock: 1 cycle") and "2->3 3->2" in err[0]
    stalled = dict(summary, deadlock=False, deadlock_cycles=[])
    assert _exit_status(stalled) == 4
    assert capsys.readouterr().err.startswith("rocesim: stalled:")
    assert _exit_status(dict(stalled, stalled=False)) == 0


def test_a_stall_reports_its_cycle_with_detection_off(tmp_path, capsys):
    """No timeout under PFC: once the loop is stuck no event is left, and the run stops.  The
    cycle that holds it is found then, detection off, as the detector finds it at the same
    freeze; summary, deadlocks.csv and the messages say so (and nothing else)."""
    t, a, b = two_switch_loop()
    sim = Simulation(t, switch={"buffer": "1MB"}, nic={"ttl": 16}, routes=loop_routes(a, b))
    sim.add_flow(0, 1, 1_000_000, rate="40Gbps")
    res = sim.run()
    s = res.summary
    assert s["stalled"] and s["deadlock_detection"] is False and s["deadlock"] is True
    (c,) = s["deadlock_cycles"]
    _, on = loop_run("40Gbps", threshold="1s")                 # the detector, at the same freeze
    (ref,) = on.summary["deadlock_cycles"]
    for key in ("formed_ns", "priority", "ports", "links", "flows"):
        assert c[key] == ref[key]
    assert c["formed_ns"] <= c["detected_ns"] <= ref["detected_ns"]   # found at once, not at a check
    res.write(tmp_path)
    rows = (tmp_path / "deadlocks.csv").read_text().splitlines()
    assert len(rows) == 2 and ",2->3 3->2," in rows[1]
    for summary, text in ((s, res.describe()), (on.summary, on.describe())):
        assert "deadlock at priority 3" in text and "held by the deadlock above" in text
        assert "a PFC deadlock?" not in text
        assert _exit_status(summary) == 3
        err = capsys.readouterr().err
        assert err.startswith("rocesim: deadlock: 1 cycle") and "detection" not in err


def test_a_stall_with_timers_ticking_reports_its_cycle_with_detection_off():
    """The triangle with a (late) timeout: timers keep firing, so events remain; the run ends
    after a simulated second without progress, and the queues paused for the detector's
    threshold (1 ms by default) give the cycle."""
    t = switch_ring(3)
    sim = Simulation(t, switch={"buffer": "1MB"}, nic={"rto": "10ms"})
    for h in range(3):
        sim.add_flow(h, (h + 2) % 3, 5_000_000, path=[h, 3 + h, 3 + (h + 1) % 3, 3 + (h + 2) % 3, (h + 2) % 3])
    s = sim.run().summary
    assert s["stalled"] and s["deadlock_detection"] is False
    (c,) = s["deadlock_cycles"]
    k = c["links"].index("3->4")
    assert c["links"][k:] + c["links"][:k] == ["3->4", "4->5", "5->3"]
    assert c["detected_ns"] - c["formed_ns"] >= 10**9 - 10**7       # stuck a simulated second


def test_a_stall_without_a_cycle_says_there_is_none(capsys):
    """Windows of fewer packets than ack_every and no coalescing timer (the HPCC fork's
    receiver): the senders wait for ACKs that never come, no queue is paused.  Looked at, no
    cycle holds the run, and no message suggests turning detection on."""
    sim = Simulation(topology.star(6, "40Gbps", "1us"), cc="hpcc",
                     nic={"payload": "4000B", "ack_every": 4, "ack_timeout": "0us"})
    for h in range(1, 6):
        sim.add_flow(h, 0, 500_000)
    res = sim.run()
    s = res.summary
    assert s["stalled"] and s["deadlock"] is False and s["deadlock_cycles"] == []
    assert "no PFC deadlock cycle" in res.describe() and "a PFC deadlock?" not in res.describe()
    assert _exit_status(s) == 4
    err = capsys.readouterr().err
    assert err.startswith("rocesim: stalled:") and "no PFC deadlock cycle" in err and "turn on" not in err
