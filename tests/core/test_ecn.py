"""RED/ECN marking at the switch (rocesim/_core/mmu.pxd) follows its curve on a known queue.

Two senders at line rate into one link of the same rate: every departure lets two
packets in, so the egress queue seen at the m-th dequeue is about m packets while both
send (m = 1..N) and drains back to 0 over the next N departures.  The expected number
of marks is the sum of the RED probability over that trajectory.
"""
import numpy as np
import pytest

from rocesim import Simulation, topology

S = 1048          # bytes of a full data packet on the wire


def marks(kmin, kmax, pmax, n_packets, seed=1):
    sim = Simulation(topology.star(3, "100Gbps", "1us"), seed=seed,
                     switch={"ecn": {"kmin": kmin, "kmax": kmax, "pmax": pmax}})
    size = n_packets * 1000
    sim.add_flow(1, 0, size)
    sim.add_flow(2, 0, size)
    res = sim.run()
    to_receiver = res.ports["peer_node"] == 0
    return int(res.ports["ecn_marks"][to_receiver].sum()), int(res.ports["ecn_marks"].sum())


def red(q, kmin, kmax, pmax):
    q = np.asarray(q, float)
    p = np.where(q > kmax, 1.0, pmax * (q - kmin) / (kmax - kmin))
    return np.where(q <= kmin, 0.0, p)


def expected(kmin, kmax, pmax, n):
    grow = np.arange(1, n + 1) * S
    drain = np.arange(n - 1, -1, -1) * S
    p = red(np.concatenate([grow, drain]), kmin, kmax, pmax)
    return p.sum(), np.sqrt((p * (1 - p)).sum())


@pytest.mark.parametrize("kmin,kmax,pmax", [
    (0, 4000 * S, 1.0),          # linear over the whole trajectory
    (500 * S, 1500 * S, 0.2),    # the HPCC-fork shape: ramp to 0.2, then always
    (800 * S, 2400 * S, 0.5),
])
def test_marks_follow_the_red_curve(kmin, kmax, pmax):
    n = 2000
    got, everywhere = marks(f"{kmin}B", f"{kmax}B", pmax, n)
    mean, std = expected(kmin, kmax, pmax, n)
    assert got == everywhere                       # only the congested port marks
    # the trajectory is exact to about one packet per step: allow that plus 4 sigma
    slack = 4 * std + 2 * n * S * pmax / (kmax - kmin) + 2
    assert abs(got - mean) <= slack, (got, mean, slack)


def test_step_marking_is_deterministic():
    """kmin == kmax == K, pmax 1 (DCTCP): every packet dequeued above K is marked."""
    n, k = 1000, 300 * S
    a, _ = marks(f"{k}B", f"{k}B", 1.0, n, seed=1)
    b, _ = marks(f"{k}B", f"{k}B", 1.0, n, seed=2)
    assert a == b
    assert abs(a - 2 * (n - 300)) <= 3


def test_no_marks_below_kmin():
    got, everywhere = marks("10MB", "20MB", 1.0, 1000)
    assert everywhere == 0


def test_ecn_off_marks_nothing():
    sim = Simulation(topology.star(3, "100Gbps", "1us"), switch={"ecn": {"enabled": False}})
    sim.add_flow(1, 0, 2_000_000)
    sim.add_flow(2, 0, 2_000_000)
    assert sim.run().ports["ecn_marks"].sum() == 0


@pytest.mark.parametrize("ack_every", [1, 4, 7])
def test_coalesced_acks_echo_every_mark(ack_every):
    """Every CE mark a switch sets on in-order data reaches the sender, whatever ack_every:
    the ACKs echo how many of the packets they cover were marked (no loss here, so every
    data packet is in order and acknowledged exactly once)."""
    import pyschemes
    pyschemes.CountsMarks.packets = pyschemes.CountsMarks.marked = 0
    sim = Simulation(topology.star(5, "100Gbps", "1us"), cc="pyschemes:CountsMarks",
                     nic={"ack_every": ack_every},
                     switch={"ecn": {"kmin": "20KB", "kmax": "200KB", "pmax": 0.5}})
    for h in range(1, 5):
        sim.add_flow(h, 0, 400_000)
    res = sim.run(progress=False)
    marks = int(res.ports["ecn_marks"].sum())
    assert res.summary["drops"] == 0 and marks > 100
    assert pyschemes.CountsMarks.packets == 4 * 400
    assert pyschemes.CountsMarks.marked == marks
