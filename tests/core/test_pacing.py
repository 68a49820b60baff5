"""NIC pacing: a flow runs at min(scheme rate, rate limit); a new rate takes effect at once."""
import pytest

from helpers import ser_ps
from rocesim import ScenarioError, Simulation, topology
from rocesim.cc import builtin_schemes
from rocesim.scenario import build

RATE = 100 * 10**9
US = 10**6
FRAME, ACK = 1048, 60


def idle_fct_ps(n_packets, limit_bps, hops=2, delay=US):
    """Paced sender, links faster than the limit: packet j leaves at j x S x 8 / limit and
    crosses `hops` store-and-forward links without waiting; then the ACK comes back."""
    last_leaves = (n_packets - 1) * ser_ps(FRAME, limit_bps)
    return last_leaves + hops * (ser_ps(FRAME, RATE) + delay) + hops * (ser_ps(ACK, RATE) + delay)


@pytest.mark.parametrize("cc", list(builtin_schemes()))
def test_rate_limited_flow_in_an_idle_network_matches_the_closed_form(cc):
    sim = Simulation(topology.star(4, "100Gbps", "1us"), cc=cc)
    f = sim.add_flow(1, 2, 100_000, rate="10Gbps")
    g = sim.add_flow(0, 3, 100_000)                          # unlimited, on other ports
    res = sim.run()
    with_int = builtin_schemes()[cc].needs_int               # HPCC: INT on data (42 B) and ACKs (88 B)
    frame = FRAME + (42 if with_int else 0)
    expected = (99 * ser_ps(frame, 10**10) + 2 * (ser_ps(frame, RATE) + US)
                + 2 * (ser_ps(ACK + (88 - ACK if with_int else 0), RATE) + US))
    assert res.flows["fct_ns"][f] * 1000 == pytest.approx(expected, abs=1)
    assert res.flows["slowdown"][f] == pytest.approx(1.0, abs=1e-9)   # the ideal counts the cap
    assert res.flows["fct_ns"][g] < res.flows["fct_ns"][f] / 5


def test_a_limit_above_the_bottleneck_changes_nothing():
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    f = sim.add_flow(1, 2, 100_000, rate="400Gbps")
    res = sim.run()
    plain = Simulation(topology.star(3, "100Gbps", "1us"))
    plain.add_flow(1, 2, 100_000)
    assert res.flows["fct_ns"][f] == plain.run().flows["fct_ns"][0]
    assert res.flows["slowdown"][f] == 1.0


def test_rate_in_yaml_flows_and_its_errors():
    raw = dict(topology={"kind": "star", "hosts": 3, "link": {"rate": "100Gbps", "delay": "1us"}},
               traffic=[{"kind": "flows", "flows": [{"src": 1, "dst": 2, "size": "100KB", "rate": "10Gbps"}]}])
    res = build(raw).sim.run()
    assert res.flows["fct_ns"][0] * 1000 == pytest.approx(idle_fct_ps(100, 10**10), abs=1)
    raw["traffic"][0]["flows"][0]["rate"] = "10GB"
    with pytest.raises(ScenarioError) as e:
        build(raw)
    assert e.value.key == "traffic[0].flows[0].rate"
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us")).add_flow(1, 2, 1000, rate=0)
    assert e.value.key == "flows[0].rate"


def test_a_rate_increase_takes_effect_at_once():
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:SlowThenFast")
    f = sim.add_flow(1, 2, 100_000)
    res = sim.run()
    # the first packet's 838 us gap at 10 Mb/s is re-timed at line rate when the rate changes
    assert res.flows["fct_ns"][f] < res.flows["ideal_fct_ns"][f] + 12_000
