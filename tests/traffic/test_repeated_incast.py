"""Repeated incasts at a load (rocesim.traffic.patterns): the HPCC paper's 60 x 500 KB at 2%."""
import numpy as np
import pytest

from rocesim import ScenarioError, scenario, traffic


def test_incast_events_carry_the_requested_load():
    rng = np.random.default_rng(3)
    duration = 200 * 10**9                      # 200 ms: ~530 events of 60 senders
    t = traffic.repeated_incast(320, 60, 500_000, 0.02, 100e9, duration, rng)
    offered = t.size.sum() * 8 / (duration / 1e12)
    assert offered == pytest.approx(0.02 * 320 * 100e9, rel=0.1)
    starts, counts = np.unique(t.start, return_counts=True)
    assert (counts == 60).all()                 # one receiver, 60 senders per event
    for s in starts[:20]:
        ev = t.start == s
        assert np.unique(t.dst[ev]).size == 1
        assert np.unique(t.src[ev]).size == 60 and t.dst[ev][0] not in t.src[ev]
    assert (t.dport == 200).all()               # marked as incast, as the HPCC fork's files do


def scn(**incast):
    return {"topology": {"kind": "star", "hosts": 16, "link": {"rate": "100Gbps", "delay": "1us"}},
            "traffic": [{"kind": "incast", "size": "50KB", "senders": 8, "load": 0.05, "duration": "1ms",
                         **incast}]}


def test_scenario_repeated_incast_runs():
    s = scenario.build(scn())
    assert s.sim.n_nodes % 8 == 0 and s.sim.n_nodes > 0
    res = s.sim.run()
    assert res.summary["flows_completed"] == s.sim.n_nodes


@pytest.mark.parametrize("extra,key", [({"receiver": 3}, "traffic[0].load"),
                                       ({"senders": 16}, "traffic[0].senders"),
                                       ({"load": 2}, "traffic[0].load"),
                                       ({"duration": 5}, "traffic[0].duration"),
                                       ({"bogus": 1}, "traffic[0].bogus")])
def test_scenario_repeated_incast_errors(extra, key):
    with pytest.raises(ScenarioError) as e:
        scenario.build(scn(**extra))
    assert e.value.key == key
