"""Every scenario key, for `rocesim keys`: the top-level sections, topology and traffic
kinds with their keys, switch, NIC and deadlock settings with defaults, faults, output,
limits and the workload presets with their parameters.  Read from the tables the
scenario loader checks against, so the list cannot drift from what is accepted."""
from __future__ import annotations

import inspect


def _preset_params(fn) -> str:
    params = [f"{p.name}={p.default!r}" for p in inspect.signature(fn).parameters.values()
              if p.default is not inspect.Parameter.empty]
    return ", ".join(params) or "(none)"


def lines(section: str | None = None):
    """Yield `name = default` lines, each followed by an indented description."""
    from rocesim import config
    from rocesim import scenario as sc
    from rocesim.network.faults import DOCS
    from rocesim.training.workloads.llm import LLM_PRESETS
    from rocesim.training.workloads.presets import PRESETS

    def want(name):
        return section is None or name == section

    if want("scenario"):
        yield f"scenario keys: {', '.join(sc.TOP_KEYS)}"
        yield "    topology and traffic are required; the sections below list the rest"
    if want("topology"):
        for kind, (req, opt) in sc.TOPOLOGY_KEYS.items():
            yield f"topology.kind = {kind}"
            yield f"    required: {', '.join(req) or '(none)'}; optional: {', '.join(opt) or '(none)'}"
    if want("traffic"):
        for kind, (req, opt) in sc.TRAFFIC_KEYS.items():
            name = "traffic[].flows[]" if kind == "flows[]" else f"traffic[].kind = {kind}"
            yield name
            yield f"    required: {', '.join(req) or '(none)'}; optional: {', '.join(opt) or '(none)'}"
        yield "traffic[].distribution (cdf) = websearch | fb_hadoop | {file: sizes.txt}"
        yield "    flow sizes: a built-in distribution, or lines of 'bytes cumulative%'"
        for name, fn in {**PRESETS, **LLM_PRESETS}.items():
            yield f"traffic[].model (workload) = {name}"
            yield f"    params: {_preset_params(fn)}"
        yield "traffic[].model (workload) = {astra_sim: workload.txt} | {chakra: prefix}"
        yield "    imported: an ASTRA-sim 1.0 text file, or Chakra execution traces prefix.<rank>.et"
    for name, spec in (("switch", config.SWITCH), ("nic", config.NIC), ("deadlock", config.DEADLOCK)):
        if want(name):
            for key, default, doc in config.describe(spec, f"{name}."):
                if isinstance(default, tuple):
                    default = list(default)
                yield f"{key} = {default}"
                yield f"    {doc}"
    if want("cc"):
        yield "cc.scheme = none"
        yield "    the congestion-control scheme; `rocesim schemes` lists them and their cc.params"
    if want("faults"):
        for kind, rows in DOCS.items():
            for key, default, doc in rows:
                yield f"faults[].{kind}.{key} = {default}"
                yield f"    {doc}"
    if want("output"):
        for key, options in sc.OUTPUT.items():
            yield f"output.{key} = {options[0]}"
            yield f"    one of: {', '.join(map(str, options))}"
        yield "output.sample_interval = none"
        yield "    a time (e.g. 10us): write rates.csv and queues.csv sampled at this interval"
        yield "output.queue_ports = all"
        yield "    the port ids whose queues are sampled (ports.csv lists them)"
    if want("limits"):
        yield "limits.memory = 75% of this machine's memory"
        yield "    the most memory the topology and flows may need (estimated before building)"
    if want("routes"):
        yield "routes[] = {switch, dst, next}"
        yield "    a per-switch next-hop override"


SECTIONS = ("scenario", "topology", "traffic", "switch", "nic", "deadlock", "cc", "faults", "output",
            "limits", "routes")
