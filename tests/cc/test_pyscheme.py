"""Schemes written in Python (rocesim.cc.python): same events, same effects, own rules."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import pyschemes
import yaml
from helpers import ROOT, TESTS, same_rocesim_env, ser_ps
from rocesim import ScenarioError, Simulation, scenario, topology

US = 10**6


def test_python_rate_is_obeyed_exactly():
    """A flow paced at 10G on a 100G path: packet k leaves at k x S / 10G."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:FixedRate", cc_params={"rate": "10Gbps"})
    f = sim.add_flow(1, 2, 100_500)
    res = sim.run()
    n, S, L = 101, 1048, 548
    last_sent = (n - 1) * ser_ps(S, 10**10)
    expected = last_sent + 2 * ser_ps(L, 10**11) + 2 * US + 2 * (ser_ps(60, 10**11) + US)
    assert res.flows["fct_ns"][f] * 1000 == expected


def test_python_line_rate_matches_the_builtin_none_exactly():
    def run(cc):
        sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), cc=cc, switch={"buffer": "2MB"})
        for h in range(1, 16):
            sim.add_flow(h, 0, 100_000, start=h * 1000)
        return sim.run()
    py, c = run("pyschemes:LineRate"), run("none")
    np.testing.assert_array_equal(py.flows["fct_ns"], c.flows["fct_ns"])
    assert py.summary["events"] == c.summary["events"]
    assert py.summary["pfc_pauses"] == c.summary["pfc_pauses"] > 0


def test_python_scheme_sees_acks_cnps_int_and_timers():
    pyschemes.Recorder.calls = []
    sim = Simulation(topology.star(5, "100Gbps", "1us"), cc="pyschemes:Recorder",
                     switch={"ecn": {"kmin": "10KB", "kmax": "50KB"}})
    for h in (1, 2, 3, 4):
        sim.add_flow(h, 0, 300_000)
    res = sim.run()
    calls = pyschemes.Recorder.calls
    kinds = [c[0] for c in calls]
    assert kinds[:4] == ["start"] * 4
    acks = [c for c in calls if c[0] == "ack"]
    assert len(acks) == 4 * 300                                   # one ACK per data packet
    for f in range(4):
        seqs = [c[3] for c in acks if c[1] == f]
        assert seqs == sorted(seqs) and seqs[-1] == 300_000
        assert sum(c[2] for c in acks if c[1] == f) == 300_000     # acked bytes add up
    assert all(c[4] >= 4_000_000 for c in acks)                   # RTT >= the base ~4.3 us
    assert all(c[6] == 1 for c in acks)                           # one switch stamped INT
    assert any(c[5] for c in acks) and "cnp" in kinds              # ECN echoes and CNPs reached it
    assert res.summary["cnps"] == kinds.count("cnp")
    # every echo and CNP it was handed is counted; its notifications are the CNPs it declared
    assert res.summary["ecn_echoes"] == sum(1 for c in acks if c[5])
    assert res.summary["notification_carrier"] == "cnp" and res.summary["congestion_notifications"] == kinds.count("cnp")
    timers = [c for c in calls if c[0] == "timer"]
    assert sorted(c[1] for c in timers) == [0, 1, 2, 3]
    assert all(c[2] == 7 and c[3] == 5_000_000 for c in timers)


def test_python_scheme_exception_stops_the_run_and_surfaces():
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:Broken")
    sim.add_flow(1, 2, 100_000)
    with pytest.raises(ZeroDivisionError, match="on purpose"):
        sim.run()


def test_example_ecn_aimd_follows_its_own_rules(monkeypatch):
    """The shipped example, selected from YAML (from the repository root), on a 4-to-1 incast."""
    monkeypatch.chdir(ROOT)
    raw = {
        "topology": {"kind": "star", "hosts": 5, "link": {"rate": "100Gbps", "delay": "1us"}},
        "switch": {"ecn": {"kmin": "20KB", "kmax": "100KB", "pmax": 0.5}},
        "cc": {"scheme": "examples.ecn_aimd:EcnAimd", "params": {"ai": "20Mbps", "beta": 0.3}},
        "traffic": [{"kind": "incast", "senders": [1, 2, 3, 4], "receiver": 0, "size": "2MB"}],
    }
    scn = scenario.build(raw)
    res = scn.sim.run(sample_interval="5us")
    assert res.summary["flows_completed"] == 4 and res.summary["drops"] == 0
    rates = res.samples["rates"]["rate_bps"]
    assert rates.max() <= 100e9 and rates.min() >= 1e9
    # cut by 30% at most once per base RTT: no sample shows a drop below 0.7x of the last
    r = res.samples["rates"]
    for f in range(4):
        x = r["rate_bps"][r["flow_id"] == f].astype(float)
        assert (x[1:] >= 0.7 ** 3 * x[:-1] - 1).all()          # at most ~3 cuts in a 5 us sample
    # it kept the queue near its marking range instead of filling the buffer
    q = res.samples["queues"]["queue_bytes"]
    assert np.percentile(q, 90) < 400_000


def test_bad_python_scheme_names_are_refused():
    topo = topology.star(3, "100Gbps", "1us")
    with pytest.raises(ScenarioError) as e:
        Simulation(topo, cc="no_such_module_xyz:Scheme")
    assert e.value.key == "cc.scheme" and "cannot import" in e.value.reason
    with pytest.raises(ScenarioError) as e:
        Simulation(topo, cc="pyschemes:ser_ps")
    assert "PythonScheme" in e.value.reason
    with pytest.raises(ScenarioError) as e:
        Simulation(topo, cc="pyschemes:FixedRate", cc_params={"rate": 5})
    assert e.value.key == "cc.params.rate"


def test_a_finished_flows_handle_reads_its_final_state_and_touches_no_other_flow():
    """Flow 1 starts long after flow 0 finished, on an equal path: flow 0's handle reads its
    final values, and writes through it leave flow 1 at line rate (the same FCT)."""
    pyschemes.TouchesFinished.handles.clear()
    pyschemes.TouchesFinished.seen.clear()
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:TouchesFinished")
    a = sim.add_flow(1, 2, 50_000)
    b = sim.add_flow(0, 2, 50_000, start="200us")
    res = sim.run()
    assert res.flows["fct_ns"][a] < 200_000                     # done before b starts
    assert pyschemes.TouchesFinished.seen == [(50_000, 50_000, 50_000, 100 * 10**9)]
    assert res.flows["fct_ns"][b] == res.flows["fct_ns"][a]


def test_adding_a_flow_from_a_callback_is_refused_and_the_run_is_kept():
    """A scheme calling sim.add_flow during run(): refused at the call (the run took its flows
    when it began), the error surfaces from run() with the results so far, and the
    simulation is unchanged, so it runs again."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:AddsFlows")
    sim.add_flow(1, 2, 100_000)
    sim.add_flow(2, 0, 100_000, start="1ms")
    pyschemes.AddsFlows.sim, pyschemes.AddsFlows.adding = sim, True
    with pytest.raises(ScenarioError) as e:
        sim.run()
    assert e.value.key == "add_flow" and "while run() is going" in e.value.reason
    partial = e.value.results
    assert partial.summary["interrupted"] and partial.summary["flows_total"] == 2
    assert partial.summary["flows_completed"] == 0 and partial.flows["delivered_bytes"][0] > 0
    assert sim.n_nodes == 2
    pyschemes.AddsFlows.adding = False
    res = sim.run()
    assert res.summary["flows_completed"] == 2 and not res.summary["interrupted"]


def test_an_exception_in_a_callback_keeps_the_results_so_far():
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:Broken")
    sim.add_flow(1, 2, 100_000)
    with pytest.raises(ZeroDivisionError) as e:
        sim.run()
    assert e.value.results.summary["interrupted"]
    assert e.value.results.flows["delivered_bytes"][0] >= 3_000        # three ACKs came back


def test_a_timer_past_the_horizon_leaves_simulated_time_at_the_flows_end():
    """Timers at 2**62 ps (past the horizon) and past the int64 clock never fire: simulated
    time is the last event that did something, the flow's last ACK."""
    sim = Simulation(topology.star(2, "100Gbps", "1us"), cc="pyschemes:FarTimers")
    f = sim.add_flow(0, 1, 100_000)
    res = sim.run()
    assert res.summary["flows_completed"] == 1
    assert res.summary["sim_time_ns"] == res.flows["fct_ns"][f] < 13_000
    assert not res.summary["stopped_at_limit"] and res.summary["time_errors"] == 0


def test_a_zero_delay_timer_storm_stops_with_the_results_so_far(tmp_path):
    """Simulated time that stands still over the events bound ends the run as a stall that
    says so (a subprocess: a run that never ends fails the test at its timeout)."""
    raw = {"topology": {"kind": "star", "hosts": 2, "link": {"rate": "100Gbps", "delay": "1us"}},
           "cc": {"scheme": "pyschemes:ZeroDelayStorm"}, "output": {"plot": False},
           "traffic": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "100KB"}]}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(raw))
    env = same_rocesim_env()
    env["PYTHONPATH"] += os.pathsep + str(TESTS)
    res = subprocess.run([sys.executable, "-m", "rocesim", "run", "s.yaml", "-o", "out", "-q"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 4, res.stderr                     # EXIT_STALLED
    assert "simulated time stood still at 0.000 us" in res.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["stalled"] and s["flows_completed"] == 0 and s["sim_time_ns"] == 0
    assert s["frozen_clock"]["at_ns"] == 0 and s["frozen_clock"]["events"] >= 10**7
