"""`mode: flow` (network flows as fluids) above the core: the setting, what it refuses,
its outputs, and sweeps over both modes.

The fluid engine itself is the core's (rocesim/_core/fluid.pyx, tests/core/test_fluid.py);
these tests hold the plumbing to its contract: `params["fluid"]` reaches the core, the
packet-only outputs are empty, and the engine's figures (max-min shares, bytes on the
ports) come out through Simulation(mode="flow") and its Results."""
import csv
import json
import math
import os

import numpy as np
import pytest
import yaml

from helpers import ACK, HDR, LINK, MTU, cli_error, scenario_error, small_scenario, write_scenario
from rocesim import ScenarioError, Simulation, config, sweep, topology
from rocesim import scenario as sc
from rocesim.cli import main
from rocesim.results import run as results_run



def _flow_sim(**kw) -> Simulation:
    return Simulation(topology.star(4, "100Gbps", "1us"), mode="flow", **kw)


# --- the setting -------------------------------------------------------------------------------

def test_mode_defaults_to_packet_and_reaches_the_core_as_fluid():
    packet = Simulation(topology.star(4, "100Gbps", "1us"))
    assert packet.mode == "packet" and packet.network.params["fluid"] is False
    flow = _flow_sim()
    assert flow.mode == "flow" and flow.network.params["fluid"] is True


def test_the_mode_chooses_nccls_auto_pipeline_and_a_given_one_stays():
    assert Simulation(topology.star(4, "100Gbps", "1us")).nccl.pipeline == "slices"
    assert _flow_sim().nccl.pipeline == "stream"
    assert _flow_sim(nccl={"pipeline": "slices"}).nccl.pipeline == "slices"
    assert sc.build(small_scenario(mode="flow")).sim.nccl.pipeline == "stream"


@pytest.mark.parametrize("bad", ["fluid", "Flow", True, 1, None, ""])
def test_mode_is_packet_or_flow_and_nothing_else(bad):
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(4, "100Gbps", "1us"), mode=bad)
    assert e.value.key == "mode" and "one of packet, flow" in e.value.reason
    assert scenario_error(small_scenario(mode=bad)).key == "mode"


def test_yaml_set_and_mode_option_are_one_setting(tmp_path, capsys):
    path = write_scenario(tmp_path, small_scenario())
    assert sc.load(path).sim.mode == "packet"
    assert sc.load(path, ["mode=flow"]).sim.mode == "flow"
    assert sc.build(small_scenario(mode="flow")).sim.mode == "flow"
    for argv in (["--set", "mode=flow"], ["--mode", "flow"]):
        assert main(["check", path, *argv]) == 0
        assert capsys.readouterr().out.startswith("ok: 4 hosts, 1 switches, 2 flows, flow mode")
    # --mode is applied after the --set overrides: the option wins
    assert main(["check", path, "--mode", "packet", "--set", "mode=flow"]) == 0
    assert "scheme none" in capsys.readouterr().out
    assert "--mode: invalid choice: 'fluid'" in _usage_error(capsys, "check", path, "--mode", "fluid")


def _usage_error(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    assert e.value.code == 2
    return capsys.readouterr().err


def test_rocesim_keys_lists_mode_with_what_flow_mode_refuses(capsys):
    assert main(["keys", "scenario"]) == 0
    out = capsys.readouterr().out.splitlines()
    i = out.index("mode = packet")
    assert all(key in out[i + 1] for key in config.FLOW_MODE_REFUSES)
    assert out[i + 1].endswith("one of packet, flow")


# --- what flow mode refuses, at check and at the API, before anything runs ----------------------

# each refused feature as a scenario's top-level keys, and the key the refusal names
REFUSED = {
    "cc.scheme": {"cc": {"scheme": "pyschemes:FixedRate"}},
    "deadlock": {"deadlock": True},
    "switch.pfc.watchdog.enabled": {"switch": {"pfc": {"watchdog": {"enabled": True}}}},
    "faults[0]": {"faults": [{"kind": "link_rate", "link": [0, 4], "at": "1us", "rate": "50Gbps"}]},
    "output.sample_interval": {"output": {"sample_interval": "1us"}},
    "switch.trimming.enabled": {"switch": {"pfc": {"enabled": False}, "trimming": {"enabled": True}}},
}


def test_every_refusal_is_declared_and_tested():
    assert {k.split("[")[0] for k in REFUSED} == set(config.FLOW_MODE_REFUSES)


@pytest.mark.parametrize("key", REFUSED)
def test_flow_mode_refuses_what_acts_on_packets_naming_the_key(key, tmp_path, capsys):
    raw = small_scenario(**REFUSED[key])
    sc.build(raw)                                                   # packet mode runs it
    e = scenario_error({**raw, "mode": "flow"})
    assert e.key == key
    assert e.reason.endswith(f"which mode: flow refuses: {config.FLOW_MODE_REFUSES[key.split('[')[0]]}; "
                             f"use mode: packet")
    path = write_scenario(tmp_path, raw)
    assert cli_error(capsys, "check", path, "--mode", "flow").startswith(f"rocesim: error: {key}: ")
    assert main(["check", path]) == 0


def test_refusals_come_before_the_traffic_is_built():
    """A refused feature is named before a workload is generated (and before its mistakes)."""
    raw = small_scenario(mode="flow", traffic=[{"kind": "nosuch"}], **REFUSED["faults[0]"])
    assert scenario_error(raw).key == "faults[0]"
    raw = small_scenario(mode="flow", traffic=[{"kind": "nosuch"}], **REFUSED["output.sample_interval"])
    assert scenario_error(raw).key == "output.sample_interval"


def test_the_api_refuses_the_same_at_its_boundary():
    for kw, key in ((dict(cc="pyschemes:FixedRate"), "cc.scheme"), (dict(deadlock=True), "deadlock"),
                    (dict(switch={"pfc": {"watchdog": {"enabled": True}}}), "switch.pfc.watchdog.enabled")):
        with pytest.raises(ScenarioError) as e:
            _flow_sim(**kw)
        assert e.value.key == key and "mode: flow refuses" in e.value.reason
    sim = _flow_sim()
    sim.add_flow(1, 0, "10KB")
    with pytest.raises(ScenarioError) as e:
        sim.add_fault("link_down", "1us", link=[0, 4])
    assert e.value.key == "faults[0]" and e.value.reason.startswith("a link_down fault, which mode: flow refuses")
    assert sim.faults == []
    with pytest.raises(ScenarioError) as e:
        sim.run(sample_interval="1us")
    assert e.value.key == "output.sample_interval"
    assert sim.run().summary["flows_completed"] == 1              # nothing half-done by the refusals


def test_packet_settings_without_effect_are_accepted_so_one_base_runs_in_both_modes():
    """Switch, NIC and built-in scheme settings have nothing to act on in flow mode: accepted."""
    raw = small_scenario(mode="flow", cc={"scheme": "hpcc"}, nic={"ack_every": 4, "payload": "4000B", "entropy": "reps"},
                         switch={"buffer": "1MB", "pfc": {"enabled": False}, "ecn": {"kmin": "10KB", "kmax": "20KB"}},
                         deadlock=False)
    assert sc.build(raw).sim.mode == "flow"


# --- outputs -----------------------------------------------------------------------------------

def _incast(mode: str):
    sim = Simulation(topology.star(4, "100Gbps", "1us"), mode=mode)
    sim.add_flow(1, 0, "100KB")
    sim.add_flow(2, 0, "100KB")
    sim.add_flow(0, 3, "100KB")
    return sim.run()


def test_flow_mode_summary_has_no_packet_counters_and_the_terminal_shows_none():
    res = _incast("flow")
    s = res.summary
    assert s["mode"] == "flow" and s["flows_completed"] == 3 and s["data_bytes_delivered"] == 300_000
    assert all(s[k] is None for k in results_run.FLOW_MODE_EMPTY_SUMMARY)
    assert s["deadlock"] is False and s["deadlock_cycles"] == [] and s["faults"] == []
    assert s["slowdown_p50"] is not None
    text = res.describe()
    assert "flow mode" in text and "rate solves" in text
    assert not any(w in text for w in ("link crossings", "PFC pauses", "CNPs", "NACKs", "drops"))
    packet = _incast("packet").summary
    assert packet["mode"] == "packet" and packet["fluid_solves"] is None
    assert all(packet[k] is not None for k in results_run.FLOW_MODE_EMPTY_SUMMARY)


def test_flow_mode_leaves_packet_columns_empty_and_keeps_the_rest(tmp_path):
    res = _incast("flow")
    for name in results_run.FLOW_MODE_EMPTY_FLOWS:
        assert np.isnan(res.flows[name]).all()
    for name in results_run.FLOW_MODE_EMPTY_PORTS:
        assert np.isnan(res.ports[name]).all()
    assert res.ports["tx_bytes"].sum() > 0
    done = res.flows["fct_ns"]
    assert np.isfinite(done).all() and (res.flows["slowdown"] == done / res.flows["ideal_fct_ns"]).all()
    # the ideal FCT is the same closed form in both modes
    assert (res.flows["ideal_fct_ns"] == _incast("packet").flows["ideal_fct_ns"]).all()
    res.write(str(tmp_path))
    with open(tmp_path / "pfc.csv", newline="") as f:
        assert list(csv.reader(f)) == [["port", "node", "peer_node", "prio", "paused_ns", "pauses_sent_by_peer"]]
    with open(tmp_path / "summary.json") as f:
        assert json.load(f)["pfc_pauses"] is None


def test_flow_mode_runs_are_deterministic():
    a, b = _incast("flow"), _incast("flow")
    for name in ("start_ns", "fct_ns", "rx_fct_ns"):
        assert np.array_equal(a.flows[name], b.flows[name])
    assert np.array_equal(a.ports["tx_bytes"], b.ports["tx_bytes"])


def _wire_bytes(size: int) -> int:
    """A flow's payload plus the headers of its packets (nic.payload 1000B, nic.header 48B)."""
    return size + math.ceil(size / MTU) * HDR


def _shared_and_alone():
    """Star of 5 hosts (switch 5): 1 -> 0 and 2 -> 0 share host 0's link, 3 -> 4 is alone."""
    sim = Simulation(topology.star(5, "100Gbps", "1us"), mode="flow")
    for src, dst in ((1, 0), (2, 0), (3, 4)):
        sim.add_flow(src, dst, "100KB")
    return sim.run()


def test_flow_mode_ports_carry_each_flows_bytes_and_its_acks():
    """Each port carries the wire bytes of the flows whose path crosses it and the ACKs of
    those whose reverse path does (one 60 B ACK per 1000 B packet), nothing else."""
    res = _shared_and_alone()
    tx, node, peer = res.ports["tx_bytes"], res.ports["node"], res.ports["peer_node"]
    wire, acks = _wire_bytes(100_000), 100 * ACK
    expected = {(1, 5): wire, (2, 5): wire, (3, 5): wire, (5, 0): 2 * wire, (5, 4): wire,
                (0, 5): 2 * acks, (4, 5): acks, (5, 1): acks, (5, 2): acks, (5, 3): acks}
    assert {(int(a), int(b)): int(t) for a, b, t in zip(node, peer, tx) if t} == expected
    assert res.summary["fluid_solves"] > 0 and res.summary["no_route_drops"] == 0


def test_flow_mode_shares_a_bottleneck_max_min():
    """The two flows into host 0 get half its link each, the third the whole of its own:
    alone it takes its ideal time, and sharing costs each of the two exactly one more
    transfer of its bytes at line rate (the ACKs load only the reverse links)."""
    fl = _shared_and_alone().flows
    transfer_ns = _wire_bytes(100_000) * 8 / 100e9 * 1e9
    assert fl["fct_ns"][2] == pytest.approx(fl["ideal_fct_ns"][2], abs=0.01)
    assert fl["fct_ns"][0] == fl["fct_ns"][1] == pytest.approx(fl["ideal_fct_ns"][0] + transfer_ns, abs=0.01)
    assert fl["slowdown"][2] == pytest.approx(1.0)
    assert fl["slowdown"][0] == pytest.approx(1 + transfer_ns / fl["ideal_fct_ns"][0])


# --- sweeps over both modes ---------------------------------------------------------------------

BASE = small_scenario(traffic=[{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "100KB"}])


def _index(root):
    with open(os.path.join(root, "index.csv"), newline="") as f:
        return {r["run"]: r for r in csv.DictReader(f)}


def test_a_sweep_over_both_modes_runs_each_and_the_index_tells_them_apart(tmp_path):
    sw = sweep.expand({"base": BASE, "grid": {"mode": ["packet", "flow"]}})
    assert [r.name for r in sw.runs] == ["mode=packet", "mode=flow"]
    out = str(tmp_path / "out")
    rep = sweep.run_runs(sw, out, processes=2, progress=False)
    assert (rep.done, rep.failed) == (2, 0)
    rows = _index(out)
    assert {n: r["mode"] for n, r in rows.items()} == {"mode=packet": "packet", "mode=flow": "flow"}
    assert rows["mode=packet"]["pfc_pauses"] != "" and rows["mode=flow"]["pfc_pauses"] == ""
    assert rows["mode=packet"]["flows_completed"] == rows["mode=flow"]["flows_completed"] == "3"
    for name in rows:
        with open(os.path.join(out, name, "summary.json")) as f:
            summary = json.load(f)
        assert summary["mode"] == name.split("=")[1]
        assert (summary["fluid_solves"] or 0) > 0 if name == "mode=flow" else summary["fluid_solves"] is None


def test_a_sweep_resumed_in_the_other_mode_reuses_no_run(tmp_path, capsys):
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"base": BASE, "grid": {"cc.scheme": ["none", "dcqcn"]}}))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "-q", "-j", "2", "--mode", "flow"]) == 0
    capsys.readouterr()
    for name in ("cc.scheme=none", "cc.scheme=dcqcn"):
        with open(out / name / "summary.json") as f:
            assert json.load(f)["mode"] == "flow"
    # the same folders in packet mode: made from another scenario, so stale, never shown as done
    assert main(["sweep", str(spec), "-o", str(out), "--dry-run"]) == 0
    assert sorted(capsys.readouterr().out.split()) == sorted(["stale", "stale", "cc.scheme=none", "cc.scheme=dcqcn"])
    err = cli_error(capsys, "sweep", str(spec), "-o", str(out), "-q")
    assert "2 finished run(s) were made from another scenario" in err
    assert main(["sweep", str(spec), "-o", str(out), "-q", "--rerun-stale"]) == 0
    capsys.readouterr()
    with open(out / "cc.scheme=none" / "summary.json") as f:
        assert json.load(f)["mode"] == "packet"
    # and back: --mode flow is `set: {mode: flow}`, the same runs as the first sweep's
    assert main(["sweep", str(spec), "-o", str(out), "--dry-run", "--mode", "flow"]) == 0
    assert capsys.readouterr().out.split().count("stale") == 2


def test_sweep_mode_option_and_a_swept_mode_are_one_or_the_other():
    with pytest.raises(ScenarioError) as e:
        sweep.expand({"base": BASE, "grid": {"mode": ["packet", "flow"]}}, command_line={"mode": "flow"})
    assert e.value.key == "grid.mode" and "the command line fixes it (mode=flow)" in e.value.reason
    runs = sweep.expand({"base": BASE, "set": {"mode": "packet"}}, command_line={"mode": "flow"}).runs
    assert runs[0].overrides == ('mode="flow"',)


def test_a_flow_without_a_route_stalls_the_run_and_says_so(tmp_path, capsys):
    """A routing loop (a `routes` override) leaves a flow no path: it never finishes, the
    run stalls (exit 4), and in flow mode the reason is the route, not PFC."""
    raw = {"mode": "flow", "topology": {"kind": "dumbbell", "hosts_left": 1, "hosts_right": 1, "link": LINK},
           "routes": [{"switch": 3, "dst": 1, "next": 2}],
           "traffic": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "10KB"}]}],
           "output": {"plot": False}}
    out = tmp_path / "out"
    assert main(["run", write_scenario(tmp_path, raw), "-o", str(out), "-q"]) == 4
    cap = capsys.readouterr()
    assert cap.err == ("rocesim: stalled: 1 flows unfinished and nothing can move them, 1 of them found no "
                       "route to their destination (a loop in `routes`?)\n")
    assert "PFC" not in cap.out
    with open(out / "summary.json") as f:
        s = json.load(f)
    assert (s["stalled"], s["no_route_drops"], s["flows_completed"]) == (True, 1, 0)
