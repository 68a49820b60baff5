"""Flow dependencies (rocesim/_core/flows.pyx): a flow starts when its parents are done."""
import pytest

from rocesim import ScenarioError, Simulation, topology


def test_child_starts_when_parent_data_has_arrived_plus_delay():
    sim = Simulation(topology.star(4, "100Gbps", "1us"))
    a = sim.add_flow(1, 2, 100_000, start="5us")
    b = sim.add_flow(2, 3, 100_000, after=[a], delay="3us")
    res = sim.run()
    f = res.flows
    arrived = (f["start_ns"][a] + f["rx_fct_ns"][a])
    assert f["start_ns"][b] == pytest.approx(arrived + 3000, abs=1e-6)
    assert f["start_ns"][b] < f["start_ns"][a] + f["fct_ns"][a] + 3000   # not waiting for the ACK


def test_compute_steps_delay_exactly_and_join_waits_for_all_parents():
    sim = Simulation(topology.star(4, "100Gbps", "1us"))
    c1 = sim.add_compute(1, "40us", start="10us")
    c2 = sim.add_compute(2, "7us")
    f = sim.add_flow(1, 3, 10_000, after=[c1, c2])
    c3 = sim.add_compute(3, "2us", after=[f])
    res = sim.run()
    fl = res.flows
    assert fl["start_ns"][c1] == 10_000 and fl["fct_ns"][c1] == 40_000
    assert fl["start_ns"][f] == 50_000                      # the later parent ends at 50 us
    assert fl["slowdown"][f] == 1.0
    assert fl["start_ns"][c3] == pytest.approx(50_000 + fl["rx_fct_ns"][f])
    assert fl["fct_ns"][c3] == 2_000
    assert res.summary["flows_completed"] == 4


def test_dependencies_on_unknown_flows_are_refused():
    sim = Simulation(topology.star(4, "100Gbps", "1us"))
    with pytest.raises(ScenarioError):
        sim.add_flow(1, 2, 1000, after=[5])
