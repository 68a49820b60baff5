"""Loss recovery without PFC: go-back-N with NACKs, selective repeat, a timeout run from each send."""
import pytest

from helpers import lossy_incast
from rocesim import Simulation, topology


@pytest.mark.parametrize("recovery", ["go_back_n", "selective_repeat"])
def test_drops_happen_and_every_flow_completes(recovery):
    res = lossy_incast(4, recovery)
    s, f = res.summary, res.flows
    assert s["drops"] > 100
    assert s["pfc_pauses"] == 0
    assert s["flows_completed"] == 4
    assert list(f["delivered_bytes"]) == list(f["size_bytes"])      # every byte, once, in order
    assert s["data_bytes_delivered"] == f["size_bytes"].sum()
    assert s["retx_bytes"] > 0
    assert s["packets_in_use_at_end"] == 0


def test_selective_repeat_resends_only_what_was_lost():
    gbn, sr = lossy_incast(3, "go_back_n"), lossy_incast(3, "selective_repeat")
    assert gbn.summary["drops"] > 0 and sr.summary["drops"] > 0
    # IRN-style: a retransmission per dropped data packet (all are full 1000 B payloads)
    assert sr.summary["retx_bytes"] == 1000 * sr.summary["drops"]
    # go-back-N resends what followed each loss too
    assert gbn.summary["retx_bytes"] > 1.5 * gbn.summary["drops"] * 1000
    assert sr.summary["nacks"] > gbn.summary["nacks"]


def test_tail_loss_is_recovered_by_the_timeout():
    """With go-back-N and one flow that loses only its tail, no NACK can come: the RTO must fire."""
    res = lossy_incast(8, "go_back_n", buffer="60KB", size=200_000)
    assert res.summary["flows_completed"] == 8
    assert res.summary["timeouts"] > 0
    assert (res.flows["timeouts"] > 0).any()


def test_lossless_priorities_never_drop_while_lossy_ones_do():
    """PFC on priority 3 only: the priority-5 incast drops, the priority-3 one does not."""
    t = topology.star(9, "100Gbps", "1us")
    sim = Simulation(t, switch={"buffer": "1MB", "pfc": {"priorities": [3]}}, nic={"rto": "100us"})
    lossless = [sim.add_flow(h, 0, 300_000, prio=3) for h in (1, 2, 3, 4)]
    lossy = [sim.add_flow(h, 0, 300_000, prio=5, start=h * 11_000) for h in (5, 6, 7, 8)]
    res = sim.run()
    assert res.summary["flows_completed"] == 8
    assert res.flows["retx_bytes"][lossless].sum() == 0
    assert res.flows["retx_bytes"][lossy].sum() > 0
    assert res.summary["drops"] > 0 and res.summary["pfc_pauses"] > 0


def test_no_spurious_timeout_after_an_idle_gap():
    """A slowly paced flow sends one packet per ~2 ms: its timeout must run from each send."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:Paced")
    f = sim.add_flow(1, 2, 5_000)
    res = sim.run()
    assert res.flows["timeouts"][f] == 0 and res.summary["retx_bytes"] == 0
