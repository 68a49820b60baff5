"""Scheduled faults (rocesim/_core/faults.pyx: NIC stop, link down/up, link rate), the PFC watchdog."""
import numpy as np
import pytest

from helpers import ser_ps, wire_bytes
from rocesim import ScenarioError, Simulation, topology
from rocesim.results import read_csv

US = 10**6


def leaf_spine():
    # hosts 0..3; leaves 4 (hosts 0, 1) and 5 (hosts 2, 3); spines 6, 7
    return topology.leaf_spine(2, 2, 2, "100Gbps", "1us", "100Gbps", "1us")


def test_link_rate_drop_matches_the_slower_closed_form():
    """The receiver's link runs at 25G from t=0: the flow takes its bytes at 25G (the
    first hop, still 100G, is paused by PFC to match)."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    f = sim.add_flow(1, 2, 1_000_000)
    sim.add_fault("link_rate", "0us", link=[3, 2], rate="25Gbps")
    res = sim.run()
    last_byte = res.flows["rx_fct_ns"][f] * 1000
    at_25g = ser_ps(wire_bytes(1_000_000), 25 * 10**9)
    assert last_byte == pytest.approx(at_25g, rel=0.01)
    assert res.summary["drops"] == 0 and res.summary["faults"][0]["kind"] == "link_rate"


@pytest.mark.parametrize("reroute", ["0us", "never"])
def test_link_down_loses_packets_and_rerouting_avoids_it(reroute, tmp_path):
    sim = Simulation(leaf_spine(), nic={"rto": "100us"})
    flows = [sim.add_flow(0, 2, 1_000_000), sim.add_flow(1, 3, 1_000_000)]
    sim.add_fault("link_down", "20us", link=[4, 6], until="400us", reroute_after=reroute)
    res = sim.run()
    s = res.summary
    assert s["link_drops"] > 0 and s["drops"] == s["link_drops"] + s["no_route_drops"] and s["buffer_drops"] == 0
    assert s["flows_completed"] == 2                      # recovered (NACKs, timeouts)
    fct = res.flows["fct_ns"][flows]
    if reroute == "never":
        # whatever hashes onto the dead uplink is lost until it is back at 400 us
        assert s["link_drops"] + s["no_route_drops"] > 100
        assert fct.max() > 400_000
    else:
        assert fct.max() < 400_000                        # moved to the other spine at once
    res.write(tmp_path)
    rows = read_csv(tmp_path / "faults.csv")
    assert list(rows["kind"]) == ["link_down"] and rows["at_ns"][0] == 20_000 and rows["end_ns"][0] == 400_000
    assert list(rows["target"]) == ["4-6"]


def test_a_nic_that_stops_for_a_while_pauses_its_link_and_loses_nothing():
    def run(stop):
        sim = Simulation(leaf_spine())
        f = sim.add_flow(2, 0, 1_000_000)
        g = sim.add_flow(3, 1, 1_000_000)
        if stop:
            sim.add_fault("nic_stop", "20us", host=0, **{"for": "200us"})
        return f, g, sim.run()

    f, g, base = run(False)
    f, g, res = run(True)
    s = res.summary
    assert s["drops"] == s["nic_drops"] == s["link_drops"] == 0 and s["flows_completed"] == 2
    assert res.flows["rx_fct_ns"][f] > 220_000                # not before the NIC drains again
    tl = res.pfc_timeline
    port = np.flatnonzero((res.ports["node"] == 4) & (res.ports["peer_node"] == 0))[0]
    mine = (tl["port"] == port) & (tl["priority"] == 3)
    assert mine.sum() == 1                                    # one long pause of the leaf's port
    # the PAUSE for priority 3 leaves behind those for 1 and 2, then crosses the 1 us wire
    way = (3 * ser_ps(64, 10**11) + US) / 1000
    assert tl["pause_start_ns"][mine][0] == pytest.approx(20_000 + way, abs=0.01)
    assert tl["pause_end_ns"][mine][0] == pytest.approx(220_000 + way, abs=0.01)
    assert set(tl["priority"][tl["port"] == port]) == set(range(1, 8))   # every lossless priority


def storm_sim(action=None, forever=True, part="none"):
    """Host 0's NIC stops at 100 us.  Flows 4->0 and 5->0 keep coming; 6->1 and 5->3 are
    innocent but share the spines' downlinks to leaf 8 and the paused upstream queues.
    `part`: a run in parts (issue 20)."""
    t = topology.leaf_spine(2, 2, 4, "100Gbps", "1us", "100Gbps", "1us")   # leaves 8, 9; spines 10, 11
    sw = {"buffer": "2MB"}
    if action:
        sw["pfc"] = {"watchdog": {"enabled": True, "poll_interval": "50us", "detection_time": "200us",
                                  "restoration_time": "200us", "action": action}}
    sim = Simulation(t, switch=sw, partition=part)
    for src, dst in ((4, 0), (5, 0), (6, 1), (5, 3)):
        sim.add_flow(src, dst, 30_000_000)
    sim.add_fault("nic_stop", "100us", host=0, **({} if forever else {"for": "500us"}))
    return sim


def storm(action=None, stop="2ms", forever=True):
    sim = storm_sim(action, forever)
    return sim, sim.run(stop=stop)


def test_a_pfc_storm_spreads_and_the_watchdog_contains_it():
    sim, res = storm()
    victims = res.flows["delivered_bytes"][2:]
    assert res.summary["watchdog_detections"] == 0
    spread = np.unique(res.pfc_timeline["port"][np.isnan(res.pfc_timeline["pause_end_ns"])])
    assert len(spread) >= 4                                    # the storm reached the fabric
    for action in ("drop", "forward"):
        sim, wd = storm(action)
        ports = wd.ports
        tor = np.flatnonzero((ports["node"] == 8) & (ports["peer_node"] == 0))[0]
        assert ports["watchdog_detections"][tor] == 1           # the leaf's port to the stuck NIC
        assert (wd.flows["delivered_bytes"][2:] > 3 * victims).all()   # the innocent flows recover
        if action == "drop":
            assert ports["watchdog_drops"][tor] > 0 and wd.summary["watchdog_drops"] >= ports["watchdog_drops"][tor]
        else:
            assert wd.summary["nic_drops"] > 0                  # the stuck NIC drops what it is sent
        assert ports["watchdog_restorations"][tor] == 0          # it never resumes


def test_the_watchdog_restores_the_queue_once_the_nic_resumes():
    sim, res = storm("drop", stop="1500us", forever=False)
    ports = res.ports
    tor = np.flatnonzero((ports["node"] == 8) & (ports["peer_node"] == 0))[0]
    assert ports["watchdog_detections"][tor] == 1 and ports["watchdog_restorations"][tor] == 1


def test_fault_errors_name_the_key():
    sim = Simulation(leaf_spine())
    for kw, key in ((dict(kind="nic_stop", at="1us", host=9), "faults[0].host"),
                    (dict(kind="link_down", at="1us", link=[0, 2]), "faults[0].link"),
                    (dict(kind="link_down", at="5us", link=[4, 6], until="1us"), "faults[0].until"),
                    (dict(kind="link_rate", at="1us", link=[4, 6]), "faults[0].rate"),
                    (dict(kind="flood", at="1us"), "faults[0].kind"),
                    (dict(kind="nic_stop", host=1), "faults[0].at"),
                    (dict(kind="nic_stop", at="1us", host=1, until="2us"), "faults[0].until")):
        with pytest.raises(ScenarioError) as e:
            sim.add_fault(**kw)
        assert e.value.key == key
    assert sim.faults == []


def test_faults_in_yaml():
    from rocesim.scenario import build
    raw = dict(topology={"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                         "link": {"rate": "100Gbps", "delay": "1us"}},
               traffic=[{"kind": "flows", "flows": [{"src": 2, "dst": 0, "size": "100KB"}]}],
               faults=[{"kind": "nic_stop", "host": 0, "at": "5us", "for": "50us"},
                       {"kind": "link_rate", "link": [4, 6], "at": "1us", "rate": "40Gbps"}])
    res = build(raw).sim.run()
    assert [f["kind"] for f in res.summary["faults"]] == ["nic_stop", "link_rate"]
    assert res.summary["faults"][0]["end_ns"] == 55_000 and res.summary["flows_completed"] == 1
    with pytest.raises(ScenarioError) as e:
        build(dict(raw, faults=[{"kind": "nic_stop", "host": 0, "at": "5us", "for": "-1us"}]))
    assert e.value.key == "faults[0].for"
    with pytest.raises(ScenarioError) as e:
        build(dict(raw, faults={"kind": "nic_stop"}))
    assert e.value.key == "faults"
