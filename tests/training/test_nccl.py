"""NCCL's ring (rocesim.training.nccl) on multi-GPU platforms, against closed forms.

Notation: S servers of G GPUs, one NIC of rate B per GPU (rail-optimized), scale-up rate R
per GPU with latency delta; F = 1108/1000 wire bytes per payload byte when a NIC sends and
receives at once (tests/training/test_collectives.py).  In an idle platform the bus
bandwidth of NCCL's ring all-reduce tends to min(G B, R G/(G-1)) (CASES.md: each NIC carries
one channel's share each way, each GPU's port the channels that stay in the server).
"""
import numpy as np
import pytest

from helpers import HDR, MTU, ser_ps, write_scenario
from rocesim import ScenarioError, Simulation, scenario
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp
from rocesim.training.nccl import NcclConfig, channels_for, ring_layout

MIB = 1 << 20
F = 1108 / 1000
B = 400e9


def platform(servers=2, gpus=4, su_rate=2880 * 10**9, nics=None):
    return pf.rail_optimized(servers, gpus, "400Gbps", "1us", ScaleUp(su_rate, 10**6), nics_per_server=nics)


def run(plat, op, m, nccl=None, ranks="all", algorithm="nccl_ring"):
    sim = Simulation(plat, nccl=nccl)
    rec = sim.add_collective(op, algorithm, ranks, m)
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    return res, rec, res.collectives["duration_ns"][0] * 1e-9


def run_alg(plat, algorithm, m):
    return run(plat, "allreduce", m, algorithm=algorithm)


def bus_bw(op, m, n, seconds):
    """nccl-tests' bus bandwidth in bytes/s (doc/PERFORMANCE.md)."""
    return m / seconds * (2 * (n - 1) / n if op == "allreduce" else (n - 1) / n)


@pytest.mark.parametrize("su_gbps", [2880, 400])
def test_nccl_ring_allreduce_reaches_the_platform_bound(su_gbps):
    """NIC-bound (NVLink 2880 Gbps) and NVLink-bound (400 Gbps per GPU, below 4 NICs' worth
    x 3/4): the bus bandwidth is within 10% of min(G B / F, R G/(G-1)) and never above the
    bound without headers."""
    G, m = 4, 128 * MIB
    R = su_gbps * 1e9
    _, _, d = run(platform(2, G, su_gbps * 10**9), "allreduce", m)
    got = bus_bw("allreduce", m, 2 * G, d) * 8
    assert got >= 0.9 * min(G * B / F, R * G / (G - 1))
    assert got <= min(G * B, R * G / (G - 1))


@pytest.mark.parametrize("op", ["reducescatter", "allgather"])
def test_nccl_ring_reduce_scatter_and_all_gather_reach_the_same_bound(op):
    G, m = 4, 128 * MIB
    _, _, d = run(platform(2, G), op, m)
    got = bus_bw(op, m, 2 * G, d) * 8
    assert 0.85 * G * B / F <= got <= G * B


def test_nccl_ring_flows_cross_servers_rail_aligned_and_carry_the_ring_bytes():
    """Every flow between servers goes NIC r of one server -> NIC r of the next; each
    channel's part crosses each of the S boundaries once per step: 2(p-1) blocks of
    part/p, so the network carries S x 2(p-1) x m/p bytes in all (sizes that divide evenly)."""
    S, G = 3, 4
    plat = platform(S, G)
    p = S * G
    nch = 16                                   # auto: 4 per NIC
    m = p * nch * 64 * 1024
    res, rec, _ = run(plat, "allreduce", m)
    net = rec.flows[~res.flows["is_compute"][rec.flows]]
    src, dst = res.flows["src"][net], res.flows["dst"][net]
    assert (src % G == dst % G).all()                              # the same rail on both sides
    assert ((dst // G - src // G) % S == 1).all()                  # to the next server of the ring
    assert res.flows["size_bytes"][net].sum() == S * 2 * (p - 1) * m // p
    per_nic = np.bincount(src, minlength=S * G)
    assert (per_nic == per_nic[0]).all()                           # channels spread evenly over the NICs


def test_nccl_ring_layout_enters_and_leaves_each_server_on_the_channel_rail():
    plat = platform(2, 4)
    lay = ring_layout(plat, np.arange(8), 8)
    assert lay.rail.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    for c in range(8):
        order = lay.order[c]
        assert sorted(order) == list(range(8))
        enter = [order[0], order[4]]                               # the first GPU of each server
        assert (plat.rail[enter] == lay.rail[c]).all()


def test_nccl_channels_follow_nccl_defaults_and_the_setting():
    plat = platform(2, 4)
    auto = NcclConfig()
    assert channels_for(plat, np.arange(8), 1 << 30, auto) == 16          # 4 per NIC
    assert channels_for(plat, np.array([0, 4]), 1 << 30, auto) == 4      # one GPU (one NIC) per server
    assert channels_for(plat, np.arange(8), 3 * 32 * 1024, auto) == 3    # 32 KiB per channel at least
    assert channels_for(plat, np.arange(8), 1 << 30, NcclConfig(channels=2)) == 2
    two_nics = platform(2, 4, nics=2)
    assert channels_for(two_nics, np.arange(8), 1 << 30, auto) == 8


def test_nccl_qps_per_connection_split_slices_and_keep_the_bytes():
    plat = platform(2, 4)
    m = 16 * MIB
    one, rec1, d1 = run(plat, "allreduce", m)
    two, rec2, d2 = run(plat, "allreduce", m, nccl={"qps_per_connection": 2})
    n1 = (~one.flows["is_compute"][rec1.flows]).sum()
    n2 = (~two.flows["is_compute"][rec2.flows]).sum()
    assert n2 == 2 * n1
    assert two.flows["size_bytes"][~two.flows["is_compute"]].sum() == one.flows["size_bytes"][~one.flows["is_compute"]].sum()
    assert d2 == pytest.approx(d1, rel=0.1)


def test_nccl_min_message_floors_every_slice():
    plat = platform(2, 4)
    res, rec, _ = run(plat, "allreduce", 64 * 1024, nccl={"min_message": "4KiB"})
    net = rec.flows[~res.flows["is_compute"][rec.flows]]
    assert net.size and (res.flows["size_bytes"][net] >= 4096).all()


def test_nccl_ring_inside_one_server_is_the_fluid_closed_form_with_step_latency():
    """One server: 2(G-1) steps of delta + m/(G R) + the step latency, to the ps."""
    G, m = 4, 8 * MIB
    plat = platform(2, G)
    lat = 3e-6
    _, _, d = run(plat, "allreduce", m, nccl={"step_latency": "3us"}, ranks=list(range(G)))
    R = 2880e9
    assert d == pytest.approx(2 * (G - 1) * (1e-6 + lat + m / G * 8 / R), abs=2 * G * 1e-12)


def test_nccl_settings_come_from_the_scenario_and_are_checked(tmp_path):
    body = {
        "topology": {"kind": "rail_optimized", "servers": 2, "gpus_per_server": 4,
                     "nic_link": {"rate": "400Gbps", "delay": "1us"},
                     "scale_up": {"rate": "2880Gbps", "delay": "1us"}},
        "nccl": {"channels": 2, "step_latency": "2us"},
        "traffic": [{"kind": "collective", "op": "allreduce", "algorithm": "nccl_ring", "size": "4MB"}],
    }
    sc = scenario.load(write_scenario(tmp_path, body))
    assert sc.sim.nccl.channels == 2 and sc.sim.nccl.step_latency == 2 * 10**6
    body["nccl"] = {"chanels": 2}
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(tmp_path, body))
    assert e.value.key == "nccl.chanels"
    body["nccl"] = {"channels": 0}
    with pytest.raises(ScenarioError) as e:
        scenario.load(write_scenario(tmp_path, body))
    assert e.value.key == "nccl.channels"


@pytest.mark.slow
def test_nccl_ring_1gib_allreduce_on_64_gpus_reaches_90_percent_of_the_bound():
    """The issue's platform: 8 servers x 8 GPUs, 400G NICs, NVLink 2880 Gbps, rail-optimized.
    A 1 GiB all-reduce reaches at least 90% of min(8 x 400G, 2880G x 8/7) = 3.2 Tbps (bus
    bandwidth; payload 1000 B, so the headers alone leave 1000/1108 of it), and at least
    97% of what the wire leaves (min(8 B / F, R 8/7))."""
    G, m = 8, 1 << 30
    _, _, d = run(platform(8, G), "allreduce", m)
    got = bus_bw("allreduce", m, 64, d) * 8
    assert got >= 0.9 * min(G * B, 2880e9 * G / (G - 1))
    assert got >= 0.97 * min(G * B / F, 2880e9 * G / (G - 1))


def test_nccl_tree_crosses_servers_on_rails_and_is_bounded_by_its_busiest_nic():
    """NCCL's tree (chains inside servers, a double binary tree across them): every tree
    edge between servers carries each channel's part up and down, 2(S-1) m bytes in all,
    rail to rail; the all-reduce takes at least what its busiest NIC sends at B, and at
    most 1.4 x that with headers or the GPUs' scale-up egress (1.5 m at R here), whichever
    is larger."""
    S, G, m = 2, 4, 128 * MIB
    res, rec, d = run_alg(platform(S, G), "nccl_tree", m)
    net = rec.flows[~res.flows["is_compute"][rec.flows]]
    src, dst, size = res.flows["src"][net], res.flows["dst"][net], res.flows["size_bytes"][net]
    assert (src % G == dst % G).all()
    assert size.sum() == 2 * (S - 1) * m
    busiest = np.bincount(src, weights=size).max()
    assert d >= busiest * 8 / B
    assert d <= 1.4 * max(busiest * 8 * F / B, 1.5 * m * 8 / 2880e9)


def test_nccl_tree_uses_both_trees_on_every_nic():
    """Each NIC carries channels of both trees: on 4 servers every server head is inner
    (sends to two children) in one of them, so every NIC sends to more than one peer."""
    S, G = 4, 4
    res, rec, _ = run_alg(platform(S, G), "nccl_tree", 32 * MIB)
    net = rec.flows[~res.flows["is_compute"][rec.flows]]
    src, dst = res.flows["src"][net], res.flows["dst"][net]
    peers = {h: set(dst[src == h].tolist()) for h in range(S * G)}
    assert all(len(v) >= 2 for v in peers.values())


@pytest.mark.parametrize("op,algorithm,servers,size", [("reducescatter", "nccl_ring", 2, 40 * MIB),
                                                        ("allreduce", "nccl_ring", 3, 8 * MIB),
                                                        ("allreduce", "nccl_tree", 4, 8 * MIB)])
def test_nccl_collectives_have_no_stray_roots(op, algorithm, servers, size):
    """Every node of the collective waits for something: only the per-rank start nodes are
    roots, so nothing starts before the collective is triggered (several loops included)."""
    from rocesim.training.collectives import append_collective
    from rocesim.training.graph import Graph
    g = Graph()
    plat = platform(servers, 4)
    rec = append_collective(g, op, algorithm, np.arange(plat.n_ranks), size, platform=plat,
                            nccl=NcclConfig(channels=2))
    children, _ = g.edges()
    has_parent = np.zeros(g.n, bool)
    has_parent[children] = True
    roots = np.flatnonzero(~has_parent)
    assert set(roots.tolist()) == set(rec.start_nodes.tolist())


def test_nccl_tuning_model_matches_its_formula_and_picks_the_faster():
    """NCCL's estimate (tuning.cc, Simple): ring 8.4 + (steps - 2(N-1)) x 3.4 + 2(N-1) x 14 us
    + m / (busBw n / steps); tree 8.4 + 2 ((n/N - 1) x 4 + log2 N x 14) + m / (0.46 busBw).
    On 8 servers of 8 GPUs (busBw 400 GB/s) the tree wins small, the ring large."""
    from rocesim.training.algorithms.auto import auto_algorithm, tuned_time_us
    plat = platform(8, 8)
    ranks = np.arange(64)
    bus = 400e9 / 1e6                                           # bytes per us
    m = 1 << 30
    ring = 8.4 + (126 - 14) * 3.4 + 14 * 14.0 + m / (bus * 64 / 126)
    tree = 8.4 + 2 * (7 * 4.0 + 3 * 14.0) + m / (bus * 0.92 * 0.5)
    assert tuned_time_us("nccl_ring", "allreduce", plat, ranks, m) == pytest.approx(ring)
    assert tuned_time_us("nccl_tree", "allreduce", plat, ranks, m) == pytest.approx(tree)
    assert auto_algorithm("allreduce", plat, ranks, 1 << 20) == "nccl_tree"
    assert auto_algorithm("allreduce", plat, ranks, 2 << 30) == "nccl_ring"
    assert auto_algorithm("allgather", plat, ranks, 1 << 20) == "nccl_ring"


def test_auto_is_the_default_and_collectives_csv_names_what_ran():
    from rocesim.training.algorithms.auto import auto_algorithm
    plat = platform(2, 4)
    sim = Simulation(plat)
    small = sim.add_collective("allreduce", None, "all", 1 << 20)
    gather = sim.add_collective("allgather", None, "all", 1 << 20)
    assert small.algorithm == auto_algorithm("allreduce", plat, np.arange(8), 1 << 20) == "nccl_tree"
    assert gather.algorithm == "nccl_ring"
    res = sim.run()
    assert res.collectives["algorithm"].tolist() == ["nccl_tree", "nccl_ring"]


def nvls_platform(servers, gpus):
    return pf.rail_optimized(servers, gpus, "400Gbps", "1us", ScaleUp(2880 * 10**9, 10**6, "switch", True))


def test_nccl_nvls_in_one_server_is_its_pipelined_closed_form():
    """NVLS_PIECES pieces (16): each piece's reduce-scatter holds a GPU's sending side for
    (k-1)/k of it at R, its all-gather the receiving side as long, each plus the hop and the
    step latency; the stages of successive pieces overlap, so NVLS_PIECES + 1 stages in all."""
    from rocesim.training.algorithms.nccl_nvls import NVLS_PIECES
    k, m = 8, 256 * MIB
    _, _, d = run(nvls_platform(2, k), "allreduce", m, ranks=list(range(k)), algorithm="nccl_nvls")
    stage = np.ceil(m / NVLS_PIECES * (k - 1) / k * 8e12 / 2880e9) + 10**6 + 10**6
    assert d == pytest.approx((NVLS_PIECES + 1) * stage * 1e-12, abs=1e-9)
    ring = 2 * (k - 1) / k * m * 8 / 2880e9
    assert d < 0.6 * ring                                 # about half of the ring's bytes per port


def test_nccl_nvls_across_servers_crosses_nics_rail_by_rail_with_fewer_bytes_than_a_ring():
    """Across S servers only each GPU's reduced slice crosses the network, on its own rail
    (a ring all-reduce per rail): 2(S-1) m bytes in all, where NCCL's ring through all p
    GPUs sends S x 2(p-1) m / p (test above)."""
    S, k, m = 2, 4, 64 * MIB
    plat = nvls_platform(S, k)
    res, rec, _ = run(plat, "allreduce", m, algorithm="nccl_nvls")
    net = rec.flows[~res.flows["is_compute"][rec.flows]]
    src, dst = res.flows["src"][net], res.flows["dst"][net]
    assert (src % k == dst % k).all()
    assert res.flows["size_bytes"][net].sum() == 2 * (S - 1) * m < S * 2 * (S * k - 1) * m // (S * k)
    with pytest.raises(ScenarioError) as e:
        run(platform(S, k), "allreduce", m, algorithm="nccl_nvls")
    assert e.value.key == "algorithm"


def test_auto_picks_nvls_as_nccls_tuning_does_and_only_where_the_switch_reduces():
    """NCCL 2.27's tuning (tuning.cc, ncclTopoTuneModel; enqueue.cc, updateCollCostTable),
    R = 2880 Gbps = 360000 B/us per GPU port, 8 x 400G NICs = 400000 B/us per server:
    NVLS in one server 25 us + m / (R 5/6) (all-reduce), 25 us + m / (R 7/8) (all-gather,
    reduce-scatter); NVLS_TREE across S servers 25 + 2 log2(S) x 14 us + m / (5/6 min(R,
    NICs, halved beyond 2 servers)).  Never NVLS without `nvls`, with 2 GPUs a server or
    uneven servers; never NVLS all-gather/reduce-scatter across servers (it needs CollNet)."""
    from rocesim.training.algorithms.auto import auto_algorithm, tuned_time_us
    R, nics = 360000.0, 400000.0
    plat = nvls_platform(8, 8)
    one, two, all8 = np.arange(8), np.arange(16), np.arange(64)
    m = 1 << 30
    assert tuned_time_us("nccl_nvls", "allreduce", plat, one, m) == pytest.approx(25 + m / (R * 5 / 6))
    assert tuned_time_us("nccl_nvls", "allgather", plat, one, m) == pytest.approx(25 + m / (R * 7 / 8))
    assert tuned_time_us("nccl_nvls_tree", "allreduce", plat, two, m) == pytest.approx(25 + 28 + m / (R * 5 / 6))
    assert tuned_time_us("nccl_nvls_tree", "allreduce", plat, all8, m) == \
        pytest.approx(25 + 6 * 14 + m / (nics / 2 * 5 / 6))
    for size in (1 << 16, 1 << 20, 4 << 30):
        assert auto_algorithm("allreduce", plat, one, size) == "nccl_nvls"      # faster and sooner
        assert auto_algorithm("allreduce", plat, two, size) == "nccl_nvls_tree"
        for op in ("allgather", "reducescatter"):
            assert auto_algorithm(op, plat, two, size) == "nccl_ring"
    assert auto_algorithm("allreduce", plat, all8, 1 << 20) == "nccl_nvls_tree"
    assert auto_algorithm("allreduce", plat, all8, 4 << 30) == "nccl_ring"     # the halved NICs lose
    # all-gather in one server: NVLS's lower latency against the ring's bandwidth (bus R 8/7,
    # algorithm bandwidth x 8/7, latency 8.4 + 7 x 3.4): NVLS below the crossing, the ring above
    ring_bw = R * 8 / 7 * 8 / 7
    cross = (8.4 + 7 * 3.4 - 25) / (1 / (R * 7 / 8) - 1 / ring_bw)
    for op in ("allgather", "reducescatter"):
        assert auto_algorithm(op, plat, one, int(0.9 * cross)) == "nccl_nvls"
        assert auto_algorithm(op, plat, one, int(1.1 * cross)) == "nccl_ring"
    for where, ranks in ((platform(8, 8), one), (platform(8, 8), all8), (nvls_platform(2, 2), np.arange(4)),
                         (nvls_platform(2, 8), np.array([0, 1, 2, 8]))):
        for size in (1 << 16, 1 << 30):
            assert auto_algorithm("allreduce", where, ranks, size) in ("nccl_ring", "nccl_tree")
            assert auto_algorithm("allgather", where, ranks, size) == "nccl_ring"


@pytest.mark.parametrize("op", ["allgather", "reducescatter"])
def test_nccl_nvls_all_gather_and_reduce_scatter_in_one_server_are_their_closed_form(op):
    """One stage per piece (multicast writes, or the switch's reduction): NVLS_PIECES x
    ((k-1)/k of the piece at R + hop + step latency), as a ring's bandwidth term with fewer
    steps; across servers NCCL needs CollNet: refused."""
    from rocesim.training.algorithms.nccl_nvls import NVLS_PIECES
    k, m = 8, 256 * MIB
    _, _, d = run(nvls_platform(2, k), op, m, ranks=list(range(k)), algorithm="nccl_nvls")
    stage = np.ceil(m / NVLS_PIECES * (k - 1) / k * 8e12 / 2880e9) + 10**6 + 10**6
    assert d == pytest.approx(NVLS_PIECES * stage * 1e-12, abs=1e-9)
    with pytest.raises(ScenarioError) as e:
        run(nvls_platform(2, k), op, m, algorithm="nccl_nvls")
    assert e.value.key == "ranks"


def test_nccl_nvls_tree_crosses_servers_on_binary_trees_rail_by_rail_and_auto_runs_it():
    """NVLS_TREE on 4 servers of 4 GPUs: each reduced slice goes up and down both trees of the
    double binary tree over the servers, half on each: 2 (S-1) m bytes on the network, all
    rail-aligned, no more than the ring variant; `auto` on 2 servers runs it."""
    S, k, m = 4, 4, 64 * MIB
    plat = nvls_platform(S, k)
    for algorithm in ("nccl_nvls_tree", "nccl_nvls"):
        res, rec, _ = run(plat, "allreduce", m, algorithm=algorithm)
        net = rec.flows[~res.flows["is_compute"][rec.flows]]
        assert (res.flows["src"][net] % k == res.flows["dst"][net] % k).all()
        assert res.flows["size_bytes"][net].sum() == 2 * (S - 1) * m
    sim = Simulation(nvls_platform(2, k))
    rec = sim.add_collective("allreduce", None, "all", m)
    assert rec.algorithm == "nccl_nvls_tree"
    res = sim.run()
    assert res.collectives["algorithm"].tolist() == ["nccl_nvls_tree"]
    assert res.summary["flows_completed"] == res.summary["flows_total"]


@pytest.mark.parametrize("S", [2, 4])
def test_nccl_nvls_tree_allreduce_in_an_idle_platform_is_its_pipelined_closed_form(S):
    """NVLS_TREE on S servers of k = 8 GPUs, m = 16 x 1,024,000 B: NVLS_PIECES (P = 16)
    pieces of p bytes (rocesim/training/nccl.py, nccl_nvls and _nvls_trees).  Per piece:
    the reduce-scatter holds each GPU's port for stage = step + (k-1)/k p / R + delta (its
    compute node: share_ps + delay_ps after step_latency), then on every rail the double
    binary tree moves p/k/2 = 64,000 B (n = 64 full packets) per tree edge, up level by
    level and down from the root, each send step_latency after what it waits for
    (Transfers.route: the flow's delay), then the all-gather stage (as long as the
    reduce-scatter one).  A lone flow on an idle rail arrives (n + 1) s + 2 D after it
    leaves: its packets back to back (s = one 1048 B frame at B) and the last one stored and
    forwarded at the rail leaf (D = 1 us per wire); n s < 2 D, so a reverse flow's ACKs reach
    a NIC after it has sent (no ACK in its way).  R = 400 Gbps makes a stage longer than the
    network phase T_net, so pieces never share a link and the pipeline is the one of
    nvls_in_server_ps with T_net inserted: (P + 1) stages + T_net.

    S = 2: each tree is one edge, up then down: T_net = 2 T1, T1 = step + (n + 1) s + 2 D
    (exact, to the ps).  S = 4 (trees A: 0 <- 1, 2; 1 <- 3 and B: 3 <- 2, 1; 2 <- 0): the
    deepest up edges and the other leaves' edges go at once, on distinct links (T1), then
    the second up level (T1), then each root sends to its two children from one NIC while
    each child receives from both roots: 2n frames through a root's uplink and a child's
    downlink, at least (2n + 1) s + 2 D after step; then the last down edge (T1).  How the
    leaf interleaves the two roots' frames adds a few frame times (2 s measured): bound 4 s.
    """
    from rocesim.training.algorithms.nccl_nvls import NVLS_PIECES
    k, piece, R, D, step, delta = 8, 1_024_000, 400 * 10**9, 10**6, 10**6, 10**6   # bit/s, ps
    plat = pf.rail_optimized(S, k, "400Gbps", "1us", ScaleUp(R, delta, "switch", True))
    _, rec, d = run(plat, "allreduce", NVLS_PIECES * piece, algorithm="nccl_nvls_tree")
    assert rec.algorithm == "nccl_nvls_tree"
    n = piece // k // 2 // MTU
    s = ser_ps(MTU + HDR, int(B))
    stage = step + -(-piece * (k - 1) * 8 * 10**12 // (k * R)) + delta
    t1 = step + (n + 1) * s + 2 * D
    t_net = 2 * t1 if S == 2 else 3 * t1 + step + (2 * n + 1) * s + 2 * D
    assert n * s < 2 * D and t_net < stage                     # no ACK in a sender's way, no shared link
    closed = (NVLS_PIECES + 1) * stage + t_net
    if S == 2:
        assert d * 1e12 == pytest.approx(closed, abs=1)
    else:
        assert closed <= d * 1e12 + 1 <= closed + 4 * s


def test_nccl_max_transfers_coarsens_but_keeps_bytes_rails_and_rings():
    """Above nccl.max_transfers a collective merges each NIC's duplicate channels and cuts
    fewer, larger slices: at most the budget's transfers (one slice per step and one
    channel per NIC: 4 NICs x 7 steps x ... here), the same bytes, the same rail-aligned hops."""
    plat = platform(2, 4)
    m = 64 * MIB
    full, rec_f, d_full = run(plat, "reducescatter", m)
    small, rec_s, d_small = run(plat, "reducescatter", m, nccl={"max_transfers": 1000})
    nets = [r.flows[~res.flows["is_compute"][r.flows]] for res, r in ((full, rec_f), (small, rec_s))]
    assert nets[1].size < nets[0].size
    assert nets[1].size <= 1000
    for res, net in zip((full, small), nets):
        assert res.flows["size_bytes"][net].sum() == 2 * 7 * m // 8
        assert (res.flows["src"][net] % 4 == res.flows["dst"][net] % 4).all()
    assert d_small == pytest.approx(d_full, rel=0.15)


def test_nccl_ring_runs_on_servers_holding_different_numbers_of_gpus():
    """3 GPUs of one server and 1 of another (the default, auto, picks NCCL's ring): every
    byte crosses as a ring all-reduce moves it (2(p-1) blocks of m/p per channel and step,
    each boundary crossing the network once per step), and all of it arrives."""
    plat = platform(2, 4)
    m = 4 * 16 * 64 * 1024
    res, rec, _ = run(plat, "allreduce", m, ranks=[0, 1, 2, 4], algorithm="auto")
    assert rec.algorithm == "nccl_ring"
    net = rec.flows[~res.flows["is_compute"][rec.flows]]
    assert res.flows["size_bytes"][net].sum() == 2 * 2 * 3 * m // 4       # 2 boundaries x 2(p-1) steps x m/p
    with pytest.raises(ScenarioError):
        run(plat, "allreduce", m, ranks=[0, 1, 2, 4], algorithm="nccl_tree")
