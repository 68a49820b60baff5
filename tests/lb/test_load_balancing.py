"""Load balancing at the switches (issue 31): every scheme of the registry installs and
delivers every byte, and each one's choice shows where it should: exact balance under
round-robin spraying, one path per queue pair under ECMP, polarization with a shared hash
seed, the sender's entropy spreading one flow, adaptive routing steering around a queue."""
import numpy as np
import pytest

from rocesim import Simulation, topology, traffic
from rocesim.errors import ScenarioError
from rocesim.lb import builtin_balancers

G100, US = 100 * 10**9, 10**6


def leaf_spine(spines=4, **kw):
    t = topology.leaf_spine(2, spines, 4, "100Gbps", "1us")
    return t, Simulation(t, seed=3, **kw)


def uplink_bytes(sim, res, leaf):
    """Bytes each uplink of switch `leaf` sent (its ports towards spines), in port order."""
    ports = sim.ports
    up = np.flatnonzero((ports.node == leaf) & (ports.peer_node >= sim.topology.n_hosts))
    return res.ports["tx_bytes"][up]


def test_the_registry_holds_the_four_schemes_ecmp_first():
    assert list(builtin_balancers())[0] == "ecmp"
    assert set(builtin_balancers()) == {"ecmp", "flowlet", "spray", "adaptive"}


@pytest.mark.parametrize("scheme", sorted(builtin_balancers()))
def test_every_scheme_delivers_every_byte_under_pfc(scheme):
    t, sim = leaf_spine(switch={"load_balancing": {"scheme": scheme}})
    sim.add_flows(traffic.permutation(t.n_hosts, 300_000, 0, np.random.default_rng(1)))
    res = sim.run(progress=False)
    s = res.summary
    assert s["flows_completed"] == s["flows_total"] and s["drops"] == 0
    assert s["data_bytes_delivered"] == res.flows["size_bytes"].sum()


def test_ecmp_keeps_a_flow_on_one_uplink_and_round_robin_spraying_splits_it_evenly():
    size = 4_000_000                              # 4,000 packets of 1000 B
    for scheme, check in (("ecmp", lambda b: (b > 0).sum() == 1),
                          ("spray", lambda b: b.max() - b.min() <= 1048)):   # within one frame
        t, sim = leaf_spine(switch={"load_balancing": {"scheme": scheme, **({"order": "round_robin"}
                                                                               if scheme == "spray" else {})}})
        sim.add_flow(0, 4, size)                  # leaf 8 -> leaf 9
        res = sim.run(progress=False)
        b = uplink_bytes(sim, res, leaf=t.n_hosts)
        assert check(b), (scheme, b)


def test_the_senders_entropy_spreads_one_queue_pair_over_ecmp_paths():
    t, sim = leaf_spine(nic={"entropy_every": 1})
    sim.add_flow(0, 4, 4_000_000)
    res = sim.run(progress=False)
    b = uplink_bytes(sim, res, leaf=t.n_hosts)
    assert (b > 0).all() and b.min() > 0.15 * b.sum()     # 4 uplinks, each about a quarter


def test_a_shared_hash_seed_polarizes_a_fat_tree():
    """k=4: a ToR's 2 uplinks and an aggregation's 2 uplinks pick by the same hash function
    when every switch shares its seed, so a flow that took uplink i at its ToR takes uplink i
    again at the aggregation: half the core switches carry no upward traffic of a pod."""
    def idle_cores(hash_seed):
        t = topology.fat_tree(4, "100Gbps", "1us")
        sim = Simulation(t, seed=5, switch={"load_balancing": {"hash_seed": hash_seed}})
        src = np.repeat(np.arange(4), 60)                         # pod 0's hosts
        dst = 4 + np.tile(np.arange(12), 20)                      # to the other pods
        sim.add_flows(traffic.FlowTable(src, dst, np.full(src.size, 20_000), np.zeros(src.size)))
        res = sim.run(progress=False)
        levels = t.host_levels()
        cores = np.flatnonzero(levels == 3)
        into_core = np.isin(sim.ports.peer_node, cores) & np.isin(sim.ports.node, np.flatnonzero(levels == 2))
        pod0_aggs = np.unique(sim.ports.peer_node[np.isin(sim.ports.node, [t.n_hosts, t.n_hosts + 1])])
        rx = {c: res.ports["tx_bytes"][into_core & (sim.ports.peer_node == c) & np.isin(sim.ports.node, pod0_aggs)].sum()
              for c in cores}
        return sum(v == 0 for v in rx.values())
    assert idle_cores("shared") == 2 and idle_cores("per_switch") == 0


def test_adaptive_routing_places_a_new_queue_pair_on_the_emptier_uplink():
    """Leaf uplinks at 25 Gb/s: host 1's flow builds a queue on its uplink; host 2's flow,
    starting 20 us later under adaptive routing (with a flowlet gap: no reordering), sees
    that queue and takes the other uplink, whatever its hash says, over 8 seeds."""
    for seed in range(1, 9):
        t = topology.leaf_spine(2, 2, 4, "100Gbps", "1us", "25Gbps", "1us")
        sim = Simulation(t, seed=seed, switch={"load_balancing": {"scheme": "adaptive", "gap": "100us"}})
        sim.add_flow(1, 5, 400_000)
        sim.add_flow(2, 6, 400_000, start="20us")
        res = sim.run(progress=False)
        b = uplink_bytes(sim, res, leaf=t.n_hosts)
        assert sorted(b) == pytest.approx([400_000 * 1048 / 1000] * 2, rel=0.01), (seed, b)


@pytest.mark.parametrize("given, key", [
    ({"scheme": "wrr"}, "switch.load_balancing.scheme"),
    ({"scheme": "ecmp", "gap": "1us"}, "switch.load_balancing"),
    ({"scheme": "spray", "order": "sorted"}, "switch.load_balancing.order"),
    ({"scheme": "adaptive", "tiers": {0: {"scheme": "spray"}}}, "switch.load_balancing.tiers.0"),
    ({"scheme": "adaptive", "tiers": {2: {"scheme": "spray", "hash_seed": "shared"}}},
     "switch.load_balancing.tiers.2"),
    ("adaptive", "switch.load_balancing"),
])
def test_bad_load_balancing_settings_name_the_key(given, key):
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), switch={"load_balancing": given})
    assert e.value.key.startswith(key), e.value.key


def test_a_tier_may_take_another_scheme():
    t, sim = leaf_spine(switch={"load_balancing": {"scheme": "ecmp", "tiers": {1: {"scheme": "spray",
                                                                                    "order": "round_robin"}}}})
    sim.add_flow(0, 4, 4_000_000)
    res = sim.run(progress=False)
    b = uplink_bytes(sim, res, leaf=t.n_hosts)
    assert b.max() - b.min() <= 1048


def test_uplink_imbalance_is_the_busiest_uplink_over_its_tiers_mean():
    """Each host of a leaf sends 1 MB to a host of the other leaf, both ways: the summary's
    figure is the busiest uplink's bytes over the mean of the 8 (4 per leaf), read off the
    ports, under ECMP (above 1) and under round-robin spraying (exactly 1: data and ACKs
    alike go round the uplinks)."""
    for scheme in ("ecmp", "spray"):
        t, sim = leaf_spine(switch={"load_balancing": {"scheme": scheme, **({"order": "round_robin"}
                                                                               if scheme == "spray" else {})}})
        for h in range(4):
            sim.add_flow(h, 4 + h, 1_000_000)
            sim.add_flow(4 + h, h, 1_000_000)
        res = sim.run(progress=False)
        up = np.concatenate([uplink_bytes(sim, res, leaf) for leaf in (t.n_hosts, t.n_hosts + 1)])
        s = res.summary
        assert s["uplink_imbalance"] == pytest.approx(up.max() / up.mean(), abs=1e-4)
        assert s["uplink_imbalance_by_tier"] == {1: s["uplink_imbalance"]}
        assert s["uplink_imbalance"] > 1.0 if scheme == "ecmp" else s["uplink_imbalance"] == 1.0


def test_top_switch_names_the_spine_that_carried_each_flow():
    """Under ECMP, the bytes each uplink of leaf 0 sent are those of the flows whose
    `top_switch` is the spine at its other end; a flow under one leaf tops at the leaf, and
    under spraying no flow has one path (-1), a compute step never."""
    t, sim = leaf_spine(spines=4)
    sizes = [10_000 * (k + 1) for k in range(12)]
    for k, size in enumerate(sizes):
        sim.add_flow(k % 4, 4 + k % 4, size)
    sim.add_flow(0, 1, 5_000)
    sim.add_compute(2, "1us")
    res = sim.run(progress=False)
    top = res.flows["top_switch"]
    leaf = t.n_hosts
    assert top[12] == leaf and top[13] == -1
    ports = sim.ports
    for port in np.flatnonzero((ports.node == leaf) & (ports.peer_node > leaf + 1)):
        carried = sum(size * 1048 // 1000 for size, s in zip(sizes, top) if s == ports.peer_node[port])
        assert res.ports["tx_bytes"][port] == carried
    assert len(set(top[:12])) > 1
    _, sprayed = leaf_spine(spines=4, switch={"load_balancing": {"scheme": "spray"}})
    sprayed.add_flow(0, 4, 10_000)
    assert sprayed.run(progress=False).flows["top_switch"][0] == -1
