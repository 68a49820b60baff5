"""The PFC timeline: every pause interval of every (port, priority), always recorded."""
import numpy as np

from helpers import loop_routes, two_switch_loop, write_scenario
from rocesim import Simulation, topology
from rocesim.cli import main
from rocesim.results import read_csv

PNG = b"\x89PNG\r\n\x1a\n"


def test_intervals_add_up_to_each_ports_pause_time_and_match_the_frames():
    sim = Simulation(topology.star(9, "100Gbps", "1us"), switch={"buffer": "1MB"})
    for h in range(1, 9):
        sim.add_flow(h, 0, 300_000)
    res = sim.run()
    tl, p = res.pfc_timeline, res.ports
    assert len(tl["port"]) == res.summary["pfc_pauses"] > 0          # one interval per XOFF
    assert not np.isnan(tl["pause_end_ns"]).any()                      # all released
    assert (tl["pause_end_ns"] > tl["pause_start_ns"]).all()
    assert (np.diff(tl["pause_start_ns"]) >= 0).all()                  # ordered by start
    per_port = np.bincount(tl["port"], weights=tl["pause_end_ns"] - tl["pause_start_ns"],
                           minlength=len(p["node"]))
    assert np.allclose(per_port, p["paused_ns"].sum(axis=1), atol=1e-3)
    # the senders' NICs are the paused transmitters; the switch (node 9) paused them
    assert set(tl["node"]) <= set(range(1, 9)) and set(tl["peer"]) == {9}
    assert set(tl["priority"]) == {3}
    # intervals of one (port, priority) never overlap
    for port in np.unique(tl["port"]):
        sel = tl["port"] == port
        assert (tl["pause_start_ns"][sel][1:] >= tl["pause_end_ns"][sel][:-1]).all()


def test_a_deadlock_leaves_open_intervals_in_the_csv(tmp_path):
    t, a, b = two_switch_loop()
    sim = Simulation(t, switch={"buffer": "1MB"},
                     routes=loop_routes(a, b))
    sim.add_flow(0, 1, 3_000_000)
    res = sim.run(stop="1ms")
    tl = res.pfc_timeline
    still = np.isnan(tl["pause_end_ns"])
    loop_ports = set(np.flatnonzero((res.ports["node"] >= 2) & (res.ports["peer_node"] >= 2)))
    # the cycle stays paused, and so does the sender's NIC behind it
    assert set(tl["port"][still]) == loop_ports | {int(sim.ports.host_port[0])}
    out = tmp_path / "out"
    res.write(out)
    csv = read_csv(out / "pfc_timeline.csv")
    assert list(csv) == ["port", "node", "peer", "priority", "pause_start_ns", "pause_end_ns"]
    assert np.isnan(csv["pause_end_ns"]).sum() == still.sum()


def test_cli_writes_the_timeline_plot(tmp_path):
    raw = dict(seed=1, topology={"kind": "star", "hosts": 5, "link": {"rate": "100Gbps", "delay": "1us"}},
               switch={"buffer": "1MB"},
               traffic=[{"kind": "incast", "senders": [1, 2, 3, 4], "receiver": 0, "size": "200KB"}])
    path = write_scenario(tmp_path, raw)
    assert main(["run", str(path), "-o", str(tmp_path / "o"), "-q"]) == 0
    assert (tmp_path / "o" / "pfc_timeline.png").read_bytes()[:8] == PNG
    assert (tmp_path / "o" / "pfc_timeline.csv").is_file()
