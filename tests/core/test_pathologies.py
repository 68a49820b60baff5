"""The recipes of scenarios/pathologies/: each runs from its file and shows its outcome."""
import os
import subprocess
import sys

import numpy as np
import pytest

from rocesim import scenario as sc
from rocesim.results.metrics import paused_links
from helpers import ROOT, same_rocesim_env

SCEN = os.path.join(ROOT, "scenarios", "pathologies")


def run(name, *overrides):
    scn = sc.load(os.path.join(SCEN, f"{name}.yaml"), overrides)
    return scn.sim.run(scn.stop, sample_interval=scn.output["sample_interval"])


def rotated(links, first):
    k = links.index(first)
    return links[k:] + links[:k]


@pytest.mark.parametrize("rate,deadlock", [("8Gbps", False), ("16Gbps", True)])
def test_routing_loop_deadlocks_above_n_b_over_ttl(rate, deadlock):
    res = run("routing_loop", f"traffic[0].flows[0].rate={rate}", "traffic[0].flows[0].size=1MB")
    assert res.summary["deadlock"] is deadlock
    if deadlock:
        assert [c["links"] for c in res.summary["deadlock_cycles"]] == [["2->3", "3->2"]]
    else:
        assert res.summary["ttl_drops"] == 1000          # every packet died by TTL


def test_ring_cbd_alone_does_not_deadlock():
    res = run("ring_cbd", "stop=2ms")
    assert res.summary["pfc_pauses"] > 100 and res.summary["deadlock"] is False
    assert res.flows["delivered_bytes"].min() > 5_000_000


@pytest.mark.parametrize("rate,deadlock", [(None, True), ("6Gbps", False), ("7Gbps", True)])
def test_ring_third_flow_deadlocks_unless_rate_limited(rate, deadlock):
    res = run("ring_third_flow", "stop=3ms", *([f"traffic[0].flows[2].rate={rate}"] if rate else []))
    assert res.summary["deadlock"] is deadlock
    if deadlock:
        (c,) = res.summary["deadlock_cycles"]
        assert rotated(c["links"], "4->5") == ["4->5", "5->6", "6->7", "7->4"]
    else:
        assert res.flows["delivered_bytes"][:2].min() > 5_000_000


def test_triangle_deadlocks():
    res = run("triangle", "stop=1ms")
    (c,) = res.summary["deadlock_cycles"]
    assert rotated(c["links"], "3->4") == ["3->4", "4->5", "5->3"] and sorted(c["flows"]) == [0, 1, 2]


@pytest.mark.parametrize("bounce", ["none", "next", "7"])
def test_stale_route_deadlock_and_its_avoidance(bounce):
    over = ["stop=1ms", f"switch.pfc.bounce_priority={bounce}"]
    if bounce == "7":
        over.append("switch.pfc.priorities=[1, 2, 3, 4, 5, 6]")      # bounces go lossy
    res = run("stale_route_clos", *over)
    if bounce == "none":
        (c,) = res.summary["deadlock_cycles"]
        assert rotated(c["links"], "4->8") == ["4->8", "8->5", "5->9", "9->4"]
        assert set(c["flows"]) == {0, 1, 2, 3}
    else:
        assert res.summary["deadlock"] is False
        assert res.flows["delivered_bytes"].min() > 3_000_000         # all four keep moving
        assert res.summary["drops"] == 0 and res.summary["link_drops"] == 0


def victim_throughput(res):
    r = res.samples["rates"]
    sel = (r["flow_id"] == 3) & (r["time_ns"] > 100_000)
    return r["throughput_bps"][sel].mean()


def test_victim_flow_loses_throughput_to_pfc_and_a_scheme_gives_it_back():
    alone = victim_throughput(run("victim_flow", "stop=500us"))
    hpcc = victim_throughput(run("victim_flow", "stop=500us", "cc.scheme=hpcc"))
    fair = 200e9 / 3
    assert alone < 0.6 * fair                 # head-of-line blocked behind the incast
    assert hpcc > 0.9 * fair


def test_congestion_spreads_further_with_the_incast_degree():
    times = np.arange(0, 300_001, 5_000)
    peak = {}
    for n, senders in ((2, "[4, 5]"), (8, "[4, 5, 6, 7, 8, 9, 12, 13]")):
        res = run("congestion_spreading", "stop=300us", f"traffic[0].senders={senders}")
        peak[n] = paused_links(res.pfc_timeline, times).max()
        if n == 8:
            tl = res.pfc_timeline
            cores = set(range(16 + 16, 16 + 20))                 # the core switches
            assert cores & set(tl["node"]) and cores & set(tl["peer"])   # reached the core
    assert peak[8] > 2 * peak[2] > 0


@pytest.mark.parametrize("action", [None, "drop", "forward"])
def test_pfc_storm_and_the_watchdog(action):
    over = [] if action is None else ["switch.pfc.watchdog.enabled=true", f"switch.pfc.watchdog.action={action}"]
    res = run("pfc_storm", "stop=1ms", *over)
    innocent = res.flows["delivered_bytes"][2:]
    ports = res.ports
    tor = np.flatnonzero((ports["node"] == 8) & (ports["peer_node"] == 0))[0]
    if action is None:
        assert res.summary["stalled"]                         # the whole fabric froze
        assert res.summary["deadlock"] is False               # by a stuck NIC, not a cycle of pauses
        assert (innocent < 1_500_000).all()
        assert paused_links(res.pfc_timeline, [900_000])[0] == 6
    else:
        assert list(np.flatnonzero(ports["watchdog_detections"])) == [tor]   # only the storm's port
        assert (innocent > 2_500_000).all()                   # the innocent flows run on


def test_the_figures_script_runs(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "plots", "pathologies.py"), "--out", str(tmp_path),
                          "loop"], capture_output=True, text=True, cwd=str(tmp_path),
                         env=same_rocesim_env())      # the rocesim under test, built or installed
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "loop.png").read_bytes()[:4] == b"\x89PNG"
