"""YAML scenarios: load, check every key against its declaration, and build a `Simulation`
before anything runs.

A scenario is one mapping:

    seed: 1
    stop: 10ms                     # optional; default: until every flow is done
    topology: {kind: star, hosts: 9, link: {rate: 100Gbps, delay: 1us}}
    switch: {buffer: 32MB, pfc: {enabled: true}, ecn: {enabled: true}}
    nic: {payload: 1000B, ack_every: 1}
    cc: {scheme: none}
    routes: [{switch: 9, dst: 0, next: 10}]          # optional next-hop overrides
    deadlock: {interval: 100us, threshold: 1ms}      # optional PFC deadlock detection
    traffic:
      - {kind: incast, senders: [1, 2, 3], receiver: 0, size: 1MB, start: 0us}
    output: {flows_format: csv, hpcc_fct: false, plot: true}
    limits: {memory: 32GB}         # optional; default: 75% of the machine's memory

Every mistake raises one `ScenarioError` naming the key path (`traffic[1].load`) and the
reason.  Sizes, rates and times need explicit units.  Relative file paths are read from
the scenario file's folder.  The parts, each one concern:

* `yaml_file`: reading the file (UTF-8, nesting bounded) and `--set` overrides;
* `build`: the top-level keys (`SCENARIO`) and outputs, and `build`/`load`;
* `topology_kinds`: `topology:` kinds (`TOPOLOGY`) and their builders;
* `traffic_kinds`: `traffic:` kinds (`TRAFFIC`) and their generators;
* `workload_entry`: the `workload` traffic kind.
"""
from rocesim.scenario.build import OUTPUT, SCENARIO, Scenario, build, load
from rocesim.scenario.topology_kinds import TOPOLOGY, build_platform, build_topology
from rocesim.scenario.traffic_kinds import TRAFFIC, add_traffic
from rocesim.scenario.yaml_file import MAX_DEPTH, apply_overrides, check_depth, parse_yaml, read

__all__ = ["Scenario", "build", "load", "apply_overrides", "parse_yaml", "read", "check_depth", "MAX_DEPTH",
           "build_platform", "build_topology", "add_traffic", "SCENARIO", "TOPOLOGY", "TRAFFIC", "OUTPUT"]
