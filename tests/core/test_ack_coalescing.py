"""The NIC receiver's coalesced ACKs (nic.ack_every) and its coalescing timer (nic.ack_timeout).

The receiver ACKs every `ack_every` in-order packets, the last byte at once, and whatever it
owes at the latest `ack_timeout` after the first packet the ACK covers.  Without the timer
a sender whose window holds fewer than ack_every packets waits forever (issue 16).
"""
import pytest

from helpers import ser_ps
from rocesim import ScenarioError, Simulation, topology

RATE, DELAY = 100 * 10**9, 10**6            # the star's links: 100 Gb/s, 1 us
T_DATA, T_ACK = ser_ps(1048, RATE), ser_ps(60, RATE)   # a full data packet, an ACK


def test_an_incast_of_windows_below_ack_every_finishes():
    """The issue's case: HPCC on a 40G star, 4000 B packets, ack_every 4, 5-to-1 incast of
    500 KB.  HPCC's windows shrink to about a packet each, fewer than 4: without the timer
    (ack_timeout 0, the HPCC fork's receiver) flows stall for good."""
    def run(**nic):
        sim = Simulation(topology.star(6, "40Gbps", "1us"), cc="hpcc",
                         nic={"payload": "4000B", "ack_every": 4, **nic})
        for h in range(1, 6):
            sim.add_flow(h, 0, 500_000)
        return sim.run(progress=False).summary

    s = run()                                            # the default timeout ('auto')
    assert s["flows_completed"] == 5 and not s["stalled"]
    assert s["packets_in_use_at_end"] == 0               # every packet held for an ACK went back
    # the receiver's link carries 5 x 125 packets of 4048 B: the last flow ends after that, and
    # HPCC (eta 0.95) keeps the link busy to within 20 %
    wire_ns = 5 * 125 * ser_ps(4048, 40 * 10**9) / 1000
    assert wire_ns < s["sim_time_ns"] < 1.2 * wire_ns
    stuck = run(ack_timeout="0us")
    assert stuck["flows_completed"] < 5 and stuck["stalled"]


@pytest.mark.parametrize("n,w,rounds,timeout", [(4, 1, 10, "auto"), (4, 3, 10, "auto"),
                                                 (8, 5, 7, "auto"), (4, 2, 6, "3us")])
def test_a_window_below_ack_every_waits_the_timeout_each_round(n, w, rounds, timeout):
    """A lone flow with a window of w packets (DCQCN+window on an idle star: the window
    stays put) and ack_every n > w.  Each round the sender sends w packets back to back and
    waits; the first reaches the receiver 2 (t + d) after it left, the ACK of all w goes
    T later (T = n packet times for 'auto'), and comes back in 2 (t_ack + d).  The last
    round's ACK goes with its last packet.  So, exactly:
        FCT = (rounds - 1) (2 t + 4 d + T + 2 t_ack) + (w + 1) t + 4 d + 2 t_ack
    with one ACK per round."""
    sim = Simulation(topology.star(2, "100Gbps", "1us"), cc="dcqcn",
                     cc_params={"window": f"{w * 1000}B"},
                     nic={"ack_every": n, **({} if timeout == "auto" else {"ack_timeout": timeout})})
    sim.add_flow(0, 1, rounds * w * 1000)
    res = sim.run(progress=False)
    T = n * T_DATA if timeout == "auto" else 3 * 10**6
    period = 2 * T_DATA + 4 * DELAY + T + 2 * T_ACK
    fct_ps = (rounds - 1) * period + (w + 1) * T_DATA + 4 * DELAY + 2 * T_ACK
    assert res.flows["fct_ns"][0] * 1000 == pytest.approx(fct_ps, abs=1)
    assert res.summary["acks"] == rounds
    assert res.summary["packets_in_use_at_end"] == 0


def line_rate_flow(ack_every, ack_timeout):
    sim = Simulation(topology.star(2, "100Gbps", "1us"), nic={"ack_every": ack_every, "ack_timeout": ack_timeout})
    sim.add_flow(0, 1, 100_000)                 # 100 packets, no window, at line rate
    return sim.run(progress=False)


def test_at_line_rate_the_count_comes_first():
    """'auto' is ack_every packet times: at line rate the ack_every-th packet arrives
    (ack_every - 1) packet times after the first, so the ACKs are every 4th packet's, as
    without a timer.  A timer shorter than that cuts them: at 100 ns (a packet every
    83.84 ns) each ACK covers two packets."""
    auto, off, short = (line_rate_flow(4, t) for t in ("auto", "0us", "100ns"))
    assert auto.summary["acks"] == off.summary["acks"] == 100 // 4
    assert short.summary["acks"] == 100 // 2
    # without a window the ACKs never hold the sender back: the same FCT
    assert auto.flows["fct_ns"][0] == off.flows["fct_ns"][0] == short.flows["fct_ns"][0]


def test_with_ack_every_1_the_timer_never_runs():
    """Every in-order packet is ACKed on arrival, nothing is owed: the timeout changes no
    event (the event count is the same)."""
    def run(ack_timeout):
        sim = Simulation(topology.star(5, "100Gbps", "1us"), cc="hpcc", nic={"ack_timeout": ack_timeout})
        for h in range(1, 5):
            sim.add_flow(h, 0, 200_000)
        return sim.run(progress=False)

    ref = run("0us")
    for t in ("auto", "1ns"):
        res = run(t)
        assert res.summary["events"] == ref.summary["events"]
        assert (res.flows["fct_ns"] == ref.flows["fct_ns"]).all()


@pytest.mark.parametrize("value", ["-1us", "soon", 5])
def test_the_timeout_is_a_time(value):
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(2, "100Gbps", "1us"), nic={"ack_timeout": value})
    assert e.value.key == "nic.ack_timeout"
