"""The flow-level network (rocesim/_core/fluid.pyx) against closed forms and an independent
max-min fluid simulation written here in plain Python."""
import numpy as np
import pytest

from rocesim import Simulation, topology

RATE = 100e9


def fluid(topo, **kw) -> Simulation:
    """A Simulation whose core runs flows as fluids."""
    return Simulation(topo, mode="flow", **kw)


def _headers(sim):
    p = sim.network.params
    return p["payload"], p["header"], p["ack_size"], p["ack_every"]


def test_a_lone_flow_takes_exactly_its_ideal_time():
    """Alone in an idle network the fluid flow's time is the packet model's closed form
    (flows.pyx: store and forward, the last ACK back), to the picosecond; except that the
    packet model's last ACK may wait behind the one before it (a last packet shorter than
    an ACK), which the fluid leaves out: at most one ACK's serialization."""
    ack_ns = 60 * 8 / RATE * 1e9
    for size in (1, 999, 1000, 1001, 1999, 64_000, 3_000_000):
        sim = fluid(topology.dumbbell(1, 1, "100Gbps", "1us"))
        sim.add_flow(0, 1, size)
        fl = sim.run().flows
        exact = size % 1000 == 0 or size % 1000 > 60
        assert 0 <= fl["ideal_fct_ns"][0] - fl["fct_ns"][0] <= (0.002 if exact else ack_ns)


def test_flows_sharing_a_bottleneck_split_it_evenly():
    """n flows into one host's link, started together: each gets C/n, so all end at the
    ideal time plus (n-1) more flows' worth of bytes at the link's rate."""
    n, size = 4, 2_000_000
    sim = fluid(topology.star(n + 1, "100Gbps", "1us"))
    for i in range(n):
        sim.add_flow(i, n, size)
    fl = sim.run().flows
    mtu, hdr, _, _ = _headers(sim)
    wire = size + -(-size // mtu) * hdr
    extra_ns = (n - 1) * wire * 8 / RATE * 1e9
    assert np.allclose(fl["fct_ns"], fl["ideal_fct_ns"] + extra_ns, atol=0.01)


def _reference(paths, rev_paths, wire, ack_load, start, cap):
    """Fluid completion (last byte leaves the sender) of each flow by max-min progressive
    filling recomputed at every start and end: plain Python, no incremental tricks."""
    n = len(wire)
    rem = np.array(wire, float)
    done = np.full(n, np.nan)
    t = 0.0
    while np.isnan(done).any():
        active = [f for f in range(n) if np.isnan(done[f]) and start[f] <= t + 1e-18]
        rate = {}
        left = dict(cap)
        frozen = set()
        while len(frozen) < len(active):
            best, link = None, None
            for l, c in left.items():
                load = sum(1.0 for f in active if f not in frozen and l in paths[f]) + \
                    sum(ack_load[f] for f in active if f not in frozen and l in rev_paths[f])
                if load > 0 and (best is None or c / load < best):
                    best, link = c / load, l
            for f in active:
                if f not in frozen and (link in paths[f] or link in rev_paths[f]):
                    rate[f] = best
                    frozen.add(f)
            for l in left:
                used = sum(rate[f] for f in rate if l in paths[f]) + \
                    sum(rate[f] * ack_load[f] for f in rate if l in rev_paths[f])
                left[l] = cap[l] - used
        future = [start[f] for f in range(n) if start[f] > t + 1e-18]
        ends = [t + rem[f] * 8 / rate[f] for f in active]
        t_next = min(ends + future)
        for f in active:
            rem[f] -= rate[f] * (t_next - t) / 8
            if rem[f] <= 1e-6:
                done[f] = t_next
        t = t_next
    return done


def test_rates_are_max_min_fair_as_an_independent_fluid_computes_them():
    """Random flows on a star (single paths, both directions: ACKs load the reverse links),
    staggered starts: the sender's completion times match a plain recomputation."""
    rng = np.random.default_rng(7)
    hosts = 6
    sim = fluid(topology.star(hosts, "100Gbps", "1us"))
    mtu, hdr, ack, every = _headers(sim)
    n = 14
    src = rng.integers(0, hosts, n)
    dst = (src + rng.integers(1, hosts, n)) % hosts
    size = rng.integers(10_000, 400_000, n)
    start_ns = rng.integers(0, 20, n) * 1000
    for k in range(n):
        sim.add_flow(int(src[k]), int(dst[k]), int(size[k]), f"{start_ns[k]}ns")
    res = sim.run()
    fl = res.flows
    # star: host h's link to the switch is port ("up", h), the switch's to h is ("down", h)
    packets = -(-size // mtu)
    wire = size + packets * hdr
    ack_load = np.full(n, ack / (every * (mtu + hdr)))     # an ACK per ack_every full packets
    paths = [{("up", s), ("down", d)} for s, d in zip(src, dst)]
    rev = [{("up", d), ("down", s)} for s, d in zip(src, dst)]
    cap = {(w, h): RATE for w in ("up", "down") for h in range(hosts)}
    sent = _reference(paths, rev, wire, ack_load, start_ns * 1e-9, cap)
    # the core's flow ends after the last packet crosses the switch (behind the full one
    # before it: one full packet's serialization, and the delays) and its ACK comes back
    last = np.where(packets > 1, mtu + hdr, wire)
    tail_ns = 2 * 1000 + last * 8 / RATE * 1e9 + 2 * (1000 + ack * 8 / RATE * 1e9)
    expect = sent * 1e9 - start_ns + tail_ns
    assert np.allclose(fl["fct_ns"], expect, rtol=1e-6, atol=0.01)


def test_bytes_are_conserved_on_every_link():
    """Each port carried, in wire bytes, exactly the data of the flows routed over it and
    the ACKs of those routed back over it."""
    sim = fluid(topology.leaf_spine(4, 2, 2, "100Gbps", "1us"))
    rng = np.random.default_rng(3)
    H = sim.topology.n_hosts
    for _ in range(30):
        s = int(rng.integers(H))
        sim.add_flow(s, int((s + rng.integers(1, H)) % H), int(rng.integers(1, 300_000)))
    res = sim.run()
    mtu, hdr, ack, every = _headers(sim)
    size = np.asarray(res.flows["size_bytes"])
    packets = -(-size // mtu)
    data = int((size + packets * hdr).sum())
    acks = int((-(-packets // every) * ack).sum())
    host_tx = res.ports["tx_bytes"][np.asarray(res.ports["node"]) < H].sum()
    assert host_tx == data + acks          # every byte leaves a NIC once (data or ACK)
    assert (res.flows["delivered_bytes"] == size).all()


def test_dependencies_and_compute_steps_run_as_in_packet_mode():
    """A flow, a compute step after it, a flow after that: the times add up."""
    sim = fluid(topology.star(2, "100Gbps", "1us"))
    a = sim.add_flow(0, 1, 100_000)
    c = sim.add_compute(1, "5us", after=[a])
    b = sim.add_flow(1, 0, 100_000, after=[c])
    fl = sim.run().flows
    start = np.asarray(fl["start_ns"])
    rx = np.asarray(fl["rx_fct_ns"])
    assert start[c] == pytest.approx(start[a] + rx[a], abs=0.001)
    assert start[b] == pytest.approx(start[c] + 5000, abs=0.001)


def test_a_fluid_run_is_deterministic():
    def once():
        sim = fluid(topology.fat_tree(4, "100Gbps", "1us"), seed=5)
        rng = np.random.default_rng(1)
        for _ in range(200):
            s = int(rng.integers(16))
            sim.add_flow(s, int((s + rng.integers(1, 16)) % 16), int(rng.integers(1, 1_000_000)),
                         f"{int(rng.integers(0, 50))}us")
        return np.asarray(sim.run().flows["fct_ns"])
    assert np.array_equal(once(), once())


def test_a_finished_run_is_not_taken_for_a_stall_by_superseded_send_completions():
    """A 10 GB flow shares its receiver's link with three short ones, so its send completion
    is scheduled at 25, 33 and 50 Gb/s (about 3.2, 2.4 and 1.6 s) before it runs alone at
    100 Gb/s and ends at 0.84 s.  Those superseded events lie more than the stall watch's
    simulated second past the last work: skipping them must not move the clock, and the
    run ends complete, not stalled."""
    sim = fluid(topology.star(5, "100Gbps", "1us"))
    sim.add_flow(1, 0, 10_000_000_000)
    for host, size in zip((2, 3, 4), (1_000_000, 2_000_000, 3_000_000)):
        sim.add_flow(host, 0, size)
    s = sim.run(progress=False).summary
    assert (s["stalled"], s["flows_completed"]) == (False, 4)
    assert s["sim_time_ns"] < 1e9
