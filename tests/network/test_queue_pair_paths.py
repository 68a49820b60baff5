"""Connections that keep their path (issue 31, rocesim.world.connections): the flows of one
queue pair take one ECMP path; a queue pair's 5-tuple follows nic.udp_source_port and
switch.load_balancing.hash_qp; n queue pairs over n equal uplinks load them as n balls
thrown into n bins do; a simulation without connections hands the core nothing new."""
from fractions import Fraction
from math import factorial

import numpy as np
import pytest

from helpers import scenario_error, small_scenario
from rocesim import ScenarioError, Simulation, scenario, topology
from rocesim._core.engine import five_tuple_hashes
from rocesim.world.connections import five_tuple_keys

SIZE = 1000                      # one packet per flow (1048 bytes on the wire with headers)
WIRE = 1048


def leaf_spine(leaves=2, spines=8, hosts_per_leaf=8):
    return topology.leaf_spine(leaves, spines, hosts_per_leaf, "100Gbps", "1us")


def leaf_uplinks(res, n_hosts, leaves):
    """(leaves, spines) bytes each leaf sent up to each spine."""
    p = res.ports
    node, peer, tx = p["node"], p["peer_node"], p["tx_bytes"]
    first_spine = n_hosts + leaves
    out = []
    for leaf in range(n_hosts, n_hosts + leaves):
        up = np.flatnonzero((node == leaf) & (peer >= first_spine))
        out.append(tx[up[np.argsort(peer[up])]])
    return np.array(out)


def chain(sim, src, dst, n, connection, size="100KB"):
    """n flows src -> dst one after another, each on `connection(i)`."""
    prev = ()
    for i in range(n):
        prev = (sim.add_flow(src, dst, size, after=prev, connection=connection(i)),)


def test_the_flows_of_one_connection_take_one_path_and_flows_of_their_own_spread():
    """16 flows one after another from leaf 0 to leaf 1 (8 spines): on one connection every
    byte leaves leaf 0 by one uplink, whatever the seed; each its own queue pair, several."""
    topo = leaf_spine()
    used_by_seed = []
    for seed in (1, 2, 3):
        sim = Simulation(topo, seed=seed)
        chain(sim, 0, 8, 16, lambda i: "job-a")
        up = leaf_uplinks(sim.run(progress=False), topo.n_hosts, 2)[0]
        assert (up > 0).sum() == 1 and up.sum() >= 16 * 100_000
        used_by_seed.append(int(np.argmax(up)))
    assert len(set(used_by_seed)) > 1                      # the seed moves the one path
    sim = Simulation(topo, seed=1)
    chain(sim, 0, 8, 16, lambda i: None)
    assert (leaf_uplinks(sim.run(progress=False), topo.n_hosts, 2)[0] > 0).sum() >= 4


def test_a_fixed_source_port_puts_a_host_pairs_queue_pairs_on_one_path_unless_switches_hash_the_qp():
    topo = leaf_spine()

    def used(nic=None, switch=None):
        sim = Simulation(topo, seed=5, nic=nic, switch=switch)
        for q in range(16):
            sim.add_flow(0, 8, SIZE, connection=q)
        return int((leaf_uplinks(sim.run(progress=False), topo.n_hosts, 2)[0] > 0).sum())

    assert used() >= 5                                               # per_qp: 16 draws over 8 uplinks
    assert used(nic={"udp_source_port": "fixed"}) == 1
    assert used(nic={"udp_source_port": "fixed"}, switch={"load_balancing": {"hash_qp": True}}) >= 5


def balls_into_bins(n):
    """(E[max load], Var[max load], E[idle share], Var[idle share]) of n balls thrown into
    n bins uniformly: P(max <= k) = n!/n^n [x^n] (sum_{j<=k} x^j/j!)^n; idle bins by
    inclusion of the events 'bin i empty'."""
    def at_most(k):
        poly = [Fraction(0)] * (n + 1)
        poly[0] = Fraction(1)
        term = [Fraction(1, factorial(j)) for j in range(k + 1)]
        for _ in range(n):                                   # (sum_{j<=k} x^j/j!)^n, up to x^n
            poly = [sum(poly[i - j] * term[j] for j in range(min(i, k) + 1)) for i in range(n + 1)]
        return poly[n] * factorial(n) / Fraction(n) ** n
    cdf = [at_most(k) for k in range(n + 1)]
    pmf = [cdf[0]] + [cdf[k] - cdf[k - 1] for k in range(1, n + 1)]
    mean = sum(k * p for k, p in enumerate(pmf))
    var = sum(k * k * p for k, p in enumerate(pmf)) - mean ** 2
    one, two = Fraction(n - 1, n) ** n, Fraction(n - 2, n) ** n
    idle_mean = n * one
    idle_var = n * one + n * (n - 1) * two - idle_mean ** 2
    return float(mean), float(var), float(idle_mean / n), float(idle_var / n ** 2)


def test_balls_into_bins_closed_form():
    """(The closed form itself, against its small cases: 2 balls in 2 bins collide half the
    time; 3 in 3: max 1 with 6/27, 3 with 3/27.)"""
    mean, _, idle, _ = balls_into_bins(2)
    assert mean == pytest.approx(1.5) and idle == pytest.approx(0.25)
    mean, _, idle, _ = balls_into_bins(3)
    assert mean == pytest.approx((6 * 1 + 18 * 2 + 3 * 3) / 27) and idle == pytest.approx(8 / 27)


@pytest.mark.parametrize("n", [4, 8])
def test_n_queue_pairs_over_n_uplinks_load_them_as_balls_into_bins(n):
    """Per-QP ECMP is a uniform, independent draw per queue pair: host 0 of each leaf sends
    n one-packet flows, each on its own connection, to host 0 of the next leaf over n
    spines; the busiest uplink's count and the share of idle uplinks, averaged over leaves
    and seeds, are within four standard errors of their closed forms."""
    leaves, seeds = 16, 12
    mean, var, idle_mean, idle_var = balls_into_bins(n)
    most, idle = [], []
    for seed in range(seeds):
        topo = leaf_spine(leaves, n, 2)
        sim = Simulation(topo, seed=seed)
        for leaf in range(leaves):
            for q in range(n):
                sim.add_flow(2 * leaf, 2 * ((leaf + 1) % leaves), SIZE, connection=q)
        up = leaf_uplinks(sim.run(progress=False), topo.n_hosts, leaves)
        count = up // WIRE                                   # (ACKs, 60 B each, stay below a packet)
        assert count.sum() == leaves * n
        most += count.max(axis=1).tolist()
        idle += ((count == 0).sum(axis=1) / n).tolist()
    trials = leaves * seeds
    assert np.mean(most) == pytest.approx(mean, abs=4 * (var / trials) ** 0.5)
    assert np.mean(idle) == pytest.approx(idle_mean, abs=4 * (idle_var / trials) ** 0.5)


def test_without_connections_the_core_gets_no_hashes_and_flows_of_their_own_keep_their_id_hash():
    sim = Simulation(leaf_spine(), seed=1)
    for i in range(4):
        sim.add_flow(i, 8 + i, SIZE)
    arrays, _ = sim.core_inputs()
    assert "flow_hash" not in arrays and "flow_rhash" not in arrays
    sim.add_flow(0, 8, SIZE, connection="c")
    arrays, _ = sim.core_inputs()
    own_fwd, own_rev = five_tuple_hashes(np.arange(4))             # the core's hash of a flow id
    assert np.array_equal(arrays["flow_hash"][:4], own_fwd) and np.array_equal(arrays["flow_rhash"][:4], own_rev)
    assert arrays["flow_hash"][4] != arrays["flow_rhash"][4]


def test_five_tuple_keys_follow_the_source_port_and_the_qp_number():
    src, dst, qp = np.array([0, 0, 0, 1]), np.array([5, 5, 5, 5]), np.array([3, 4, -1, 3])
    per_qp = five_tuple_keys(src, dst, qp, udp_source_port="per_qp", hash_qp=False)
    fixed = five_tuple_keys(src, dst, qp, udp_source_port="fixed", hash_qp=False)
    e_ecmp = five_tuple_keys(src, dst, qp, udp_source_port="fixed", hash_qp=True)
    assert per_qp[0] != per_qp[1] and per_qp[0] != per_qp[3]        # another QP, another host pair
    assert fixed[0] == fixed[1] != fixed[3]                          # one 5-tuple per host pair
    assert e_ecmp[0] != e_ecmp[1]
    assert per_qp[2] == fixed[2] == e_ecmp[2] == 2                   # its own QP: its id


def test_a_connection_key_is_a_whole_number_or_a_name():
    sim = Simulation(leaf_spine())
    for bad in (-1, 1.5, True, "", 1 << 62, [1]):
        with pytest.raises(ScenarioError, match=r"flows\[0\]\.connection: expected a connection key"):
            sim.add_flow(0, 8, SIZE, connection=bad)
    assert sim.n_nodes == 0
    sim.add_flow(0, 8, SIZE, connection="allreduce-0")
    sim.add_flow(0, 8, SIZE, connection=(1 << 62) - 1)
    qp = sim.flow_column("qp")
    assert (qp >= 0).all() and qp[0] != qp[1]


def test_yaml_flows_take_a_connection_and_patterns_one_per_pair():
    raw = small_scenario(traffic=[
        {"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": "10KB", "connection": "a"},
                                    {"src": 1, "dst": 0, "size": "10KB", "start": "5us", "connection": "a"},
                                    {"src": 2, "dst": 0, "size": "10KB"}]},
        {"kind": "incast", "senders": [1, 2], "receiver": 3, "size": "10KB", "connection": "per_pair"},
        {"kind": "incast", "senders": [1, 2], "receiver": 3, "size": "10KB", "connection": "per_pair"},
        {"kind": "permutation", "size": "10KB"}])
    sim = scenario.build(raw, ".").sim
    qp = sim.flow_column("qp")
    assert qp[0] == qp[1] >= 0 and qp[2] == -1
    assert qp[3] == qp[4] >= 0 and qp[5] == qp[6] >= 0 and qp[3] != qp[5]    # per entry
    assert (qp[7:] == -1).all()
    err = scenario_error(small_scenario(traffic=[{"kind": "flows", "flows": [
        {"src": 1, "dst": 0, "size": "10KB", "connection": -2}]}]))
    assert err.key == "traffic[0].flows[0].connection"
    err = scenario_error(small_scenario(traffic=[{"kind": "permutation", "size": "1KB", "connection": "per_qp"}]))
    assert err.key == "traffic[0].connection"
