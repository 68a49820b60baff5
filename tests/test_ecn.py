"""RED/ECN marking follows its curve on a queue whose trajectory is known.

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
