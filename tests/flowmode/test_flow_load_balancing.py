"""Flow mode under load balancing (issue 31 item 6): ECMP per connection draws the packet
level's paths; schemes that spread packets (spray, adaptive) and the sender's entropy split a
fluid flow over its equal-cost paths, each link carrying its share of the flow's one rate;
flowlet stays ECMP per connection; the summary says how the fluid approximated them."""
import numpy as np
import pytest

from helpers import HDR, MTU, ROOT
from rocesim import Simulation, topology
from rocesim.cli import main
from rocesim.lb import fluid_approximation, resolve


def _leaf_spine(spines=8):
    """2 leaves of 8 hosts (hosts 0..15, leaves 16 and 17), `spines` spines, 100G, 1 us."""
    return topology.leaf_spine(leaves=2, spines=spines, hosts_per_leaf=8, host_rate="100Gbps", host_delay="1us")


def _run(mode, lb="ecmp", seed=1, spines=8, pairs=8, size=1_000_000, nic=None, **lb_params):
    sim = Simulation(_leaf_spine(spines), mode=mode, seed=seed, cc="dcqcn", nic=nic,
                     switch={"load_balancing": {"scheme": lb, **lb_params}})
    for i in range(pairs):
        sim.add_flow(i, 8 + i, size, connection=0)
    return sim.run(progress=False)


def _leaf0_uplinks(res) -> np.ndarray:
    """Bytes sent on leaf 0's uplinks (data only: the ACKs come back over leaf 1's)."""
    p = res.ports
    return p["tx_bytes"][(p["node"] == 16) & (p["peer_node"] >= 18)]


def _wire(size) -> int:
    return size + -(-size // MTU) * HDR


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ecmp_per_connection_puts_each_flow_on_the_packet_levels_uplink(seed):
    packet, flow = _run("packet", seed=seed), _run("flow", seed=seed)
    assert packet.summary["retx_bytes"] == 0
    up = _leaf0_uplinks(packet)
    assert (up > 0).sum() < 8                         # collisions: the draw matters
    np.testing.assert_array_equal(_leaf0_uplinks(flow), up)


def test_entropy_windows_take_the_packet_levels_paths():
    # 1 MB = 1000 packets, a new entropy every 100: ten windows, each on ECMP's choice for its value
    nic = {"entropy_every": 100}
    packet, flow = _run("packet", pairs=1, nic=nic), _run("flow", pairs=1, nic=nic)
    assert (_leaf0_uplinks(packet) > 0).sum() > 1
    np.testing.assert_array_equal(_leaf0_uplinks(flow), _leaf0_uplinks(packet))


@pytest.mark.parametrize("lb", ["spray", "adaptive"])
def test_a_spread_flow_loads_each_uplink_with_its_share(lb):
    res = _run("flow", lb, pairs=1, size=800_000)
    W = _wire(800_000)
    np.testing.assert_array_equal(_leaf0_uplinks(res), np.full(8, W // 8))
    p = res.ports
    down = p["tx_bytes"][(p["node"] >= 18) & (p["peer_node"] == 17)]       # the spines to leaf 1
    np.testing.assert_array_equal(down, np.full(8, W // 8))
    assert p["tx_bytes"][(p["node"] == 17) & (p["peer_node"] == 8)] == W   # leaf 1 to the receiver
    assert res.summary["flow_split_fallbacks"] == 0


def test_split_bytes_are_conserved_over_uneven_shares():
    size = 1_000_001                                  # over 3 uplinks: no whole third
    res = _run("flow", "spray", spines=3, pairs=1, size=size)
    up = _leaf0_uplinks(res)
    assert up.sum() == _wire(size)
    assert up.max() - up.min() <= 1


def test_split_flows_share_the_uplinks_max_min():
    # 8 flows over 4 uplinks (2:1): each uplink carries a quarter of every flow, so each flow
    # gets half its NIC's rate (bare fluid: no calibrated share)
    sim = Simulation(_leaf_spine(4), mode="flow", flow={"share": 1, "startup": "0us"},
                     switch={"load_balancing": {"scheme": "spray"}})
    for i in range(8):
        sim.add_flow(i, 8 + i, 10_000_000)
    res = sim.run(progress=False)
    alone = _wire(10_000_000) * 8 / 100e9 * 1e9       # ns at line rate
    assert np.all(np.abs(res.flows["fct_ns"] / alone - 2) < 0.01)


def test_a_path_set_too_large_for_a_fluid_flow_takes_its_ecmp_path_and_says_so():
    res = _run("flow", "spray", spines=40, pairs=1)    # 1 + 40 + 40 + 1 links: more than a flow holds
    assert res.summary["flow_split_fallbacks"] == 1
    assert (_leaf0_uplinks(res) > 0).sum() == 1
    assert res.completed.all()


def test_flowlet_is_ecmp_per_connection_in_the_fluid_and_the_summary_says_so():
    flowlet, ecmp = _run("flow", "flowlet"), _run("flow")
    np.testing.assert_array_equal(_leaf0_uplinks(flowlet), _leaf0_uplinks(ecmp))
    assert "flowlet" in flowlet.summary["flow_load_balancing"]
    assert "flow_load_balancing" not in ecmp.summary         # the fluid routes as the packets go
    assert "flow_load_balancing" not in _run("packet", "spray", pairs=1).summary


def test_the_approximation_names_each_tier_and_the_entropy():
    lb = resolve({"scheme": "ecmp", "tiers": {2: {"scheme": "spray"}}})
    text = fluid_approximation(lb, 4)
    assert "spray at tier 2: each flow split evenly" in text and "ecmp (other tiers)" in text
    assert "nic.entropy_every 4" in text
    assert fluid_approximation(resolve({"scheme": "ecmp"}), "none") is None


def test_split_only_at_the_tier_that_sprays():
    # a k=4 fat tree, spraying at the aggregation switches (tier 2) only: the edge switch sends
    # the flow up one uplink (ECMP), and that aggregation switch splits it over its two cores
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, mode="flow", switch={"load_balancing": {"scheme": "ecmp", "tiers": {2: {"scheme": "spray"}}}})
    sim.add_flow(0, 15, 1_000_000)                    # across pods
    res = sim.run(progress=False)
    p, W = res.ports, _wire(1_000_000)
    tier = sim.network.port_tier
    edge = p["peer_node"][p["node"] == 0][0]          # the sender's pod (the ACKs climb the other)
    up1 = (p["node"] == edge) & (tier == 1)
    np.testing.assert_array_equal(np.sort(p["tx_bytes"][up1]), [0, W])
    up2 = np.isin(p["node"], p["peer_node"][up1]) & (tier == 2)
    np.testing.assert_array_equal(np.sort(p["tx_bytes"][up2]), [0, 0, W // 2, W // 2])


def test_check_says_how_the_fluid_approximates_the_scheme(capsys):
    path = str(ROOT / "scenarios" / "load_balancing" / "ecmp_collision.yaml")
    assert main(["check", path, "--mode", "flow", "--set", "switch.load_balancing.scheme=adaptive"]) == 0
    assert "load balancing in the fluid: adaptive: each flow split evenly" in capsys.readouterr().err
    assert main(["check", path, "--mode", "flow"]) == 0
    assert "load balancing in the fluid" not in capsys.readouterr().err
