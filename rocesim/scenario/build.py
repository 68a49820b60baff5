"""A whole scenario: its top-level keys declared (`SCENARIO`), checked, and built into a
`Simulation` and the run's settings (stop time, outputs) before anything runs."""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field

from rocesim import config
from rocesim.errors import ScenarioError
from rocesim.memory import MemoryLimit
from rocesim.network.faults import FAULTS
from rocesim.settings import (REQUIRED, Boolean, Choice, Custom, Section, Setting, Size, Text, Time, keys_of, show)
from rocesim.simulation import Simulation
from rocesim.scenario.topology_kinds import TOPOLOGY, build_platform
from rocesim.scenario.traffic_kinds import TRAFFIC, add_traffic
from rocesim.scenario.yaml_file import apply_overrides, check_depth, read

OUTPUT = Section(
    "what a run writes besides flows.csv, ports.csv and summary.json (OUTPUTS.md)",
    flows_format=Setting(Choice("csv", "parquet"), "csv", "flows.csv, or flows.parquet (needs pyarrow)"),
    hpcc_fct=Setting(Boolean(), False, "also write fct.txt in the HPCC ns-3 fork's format"),
    plot=Setting(Boolean(), True, "draw the figures"),
    sample_interval=Setting(Time(positive=True), None, "write rates.csv and queues.csv sampled at this interval"),
    queue_ports=Setting(Custom("'all' or a list of port ids (ports.csv lists them)"), "all",
                        "the ports whose queues are sampled"),
)
SCENARIO = Section(
    "a scenario file (YAML)",
    name=Setting(Text(), "", "a name for the run (default: the file's)"),
    seed=config.SEED,
    transport=config.TRANSPORT,
    mode=config.MODE,
    partition=config.PARTITION,
    threads=config.THREADS,
    flow=Setting(config.FLOW, None, "the flow mode's calibration (below; ignored in packet mode)"),
    stop=Setting(Time(), None, "simulated-time limit (default: until every flow is done)"),
    topology=Setting(Custom("a mapping with a kind (topology kinds below)"), REQUIRED, "the network"),
    switch=Setting(config.SWITCH, None, "switch settings (below)"),
    nic=Setting(config.NIC, None, "NIC settings (below)"),
    cc=Setting(config.CC, None, "congestion control (default: {scheme: none})"),
    routes=Setting(Custom("a list of {switch, dst, next}"), None,
                   "per-switch next-hop overrides (loops and cyclic buffer dependencies on purpose)"),
    traffic=Setting(Custom("a non-empty list of entries with a kind (traffic kinds below)"), REQUIRED, "the traffic"),
    output=Setting(OUTPUT, None, "outputs"),
    limits=Setting(config.LIMITS, None, "limits"),
    deadlock=Setting(Custom("true, false, or a mapping of deadlock settings (below)"), None,
                     "PFC deadlock detection"),
    nccl=Setting(config.NCCL, None, "how NCCL runs collectives (the nccl_ring algorithm; below)"),
    faults=Setting(Custom("a list of entries with a kind (fault kinds below)"), None, "scheduled faults"),
)
"""The top-level keys; `rocesim keys` lists them, then the nested declarations: TOPOLOGY,
TRAFFIC, config.SWITCH, config.NIC, config.DEADLOCK, config.CC, OUTPUT, config.LIMITS, FAULTS, config.NCCL,
config.FLOW."""

NESTED = {"topology": TOPOLOGY, "traffic": TRAFFIC, "faults": FAULTS}


@dataclass
class Scenario:
    """A checked scenario: the simulation to run, the threads to run it on ('auto' or a
    number: `Simulation.run(threads=...)`) and how to write its output."""

    sim: Simulation
    stop: int | None
    output: dict
    name: str = ""
    raw: dict = field(default_factory=dict)
    threads: int | str = "auto"


def build(raw: dict, base_dir=".", estimate_workloads=False) -> Scenario:
    """Check a scenario mapping and build its Simulation (nothing runs yet); with
    `estimate_workloads` (`rocesim check`) a large workload is sized from its first part
    and not built (`rocesim.memory.WorkloadGuard`)."""
    check_depth(raw)
    keys_of(raw, "", tuple(SCENARIO), SCENARIO.required())
    top = {k: SCENARIO[k].parse(raw.get(k, SCENARIO[k].default), k)
           for k in ("name", "seed", "stop", "mode", "partition", "threads")}
    memory = MemoryLimit.of(config.LIMITS.resolve(raw.get("limits"), "limits")["memory"])
    platform = build_platform(raw["topology"], base_dir, memory=memory)
    sections = config.transport_sections(raw.get("transport", config.TRANSPORT.default),
                                         {k: raw.get(k) for k in config.TRANSPORT_SECTIONS})
    cc = config.CC.resolve({"scheme": "none"} if sections["cc"] is None else sections["cc"], "cc")
    sim = Simulation(platform, switch=sections["switch"], nic=sections["nic"], cc=cc["scheme"],
                     cc_params=cc["params"], routes=raw.get("routes"), seed=top["seed"],
                     deadlock=raw.get("deadlock"), memory_limit=memory, nccl=raw.get("nccl"), mode=top["mode"],
                     flow=raw.get("flow"), partition=top["partition"])
    sim.workload_guard.estimate = estimate_workloads
    # faults and outputs before the traffic: what the mode refuses is refused before a workload is built
    faults = raw.get("faults") or []
    if not isinstance(faults, list):
        raise ScenarioError("faults", f"expected a list of {{kind, at, ...}}, got {show(faults)}")
    for i, f in enumerate(faults):
        if not isinstance(f, dict):
            raise ScenarioError(f"faults[{i}]", f"expected a mapping with kind and at, got {show(f)}")
        sim.add_fault(**{str(k): v for k, v in f.items()})
    output = _output(raw.get("output"))
    if output["sample_interval"] is not None:
        config.refuse_in_flow_mode(sim.mode, "output.sample_interval", "sampling is on")
    add_traffic(sim, raw["traffic"], top["seed"], base_dir)
    sim.sampling(output["sample_interval"], output["queue_ports"], top["stop"])    # what `run` would refuse
    return Scenario(sim=sim, stop=top["stop"], output=output, name=top["name"], raw=raw, threads=top["threads"])


def load(path, overrides=(), estimate_workloads=False) -> Scenario:
    """Read, override (`key.path=value` strings, values in YAML syntax), check and build
    (`estimate_workloads`: see `build`)."""
    raw = apply_overrides(read(path), overrides)
    return build(raw, os.path.dirname(os.path.abspath(path)), estimate_workloads)


def _output(d, key="output") -> dict:
    """The `output:` section resolved (`queue_ports: all` as None; the sampling is checked
    against the simulation by `Simulation.sampling`)."""
    out = OUTPUT.resolve(d, key)
    if out["queue_ports"] == "all":
        out["queue_ports"] = None
    if out["flows_format"] == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ScenarioError(f"{key}.flows_format", "'parquet' needs pyarrow (pip install 'rocesim[parquet]'); "
                                                   "or use csv")
    return out
