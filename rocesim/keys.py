"""`rocesim keys`: every scenario setting, printed from its declaration and nothing else.

Each setting is a line `key = default` (`key (required)`, or `key (optional)` when it has
no default), then its meaning and what it accepts.  Kinds (topology, traffic, faults) list
their own keys under `kind = NAME`; workload presets list their parameters.
"""
from __future__ import annotations

from rocesim import config, lb
from rocesim.network.faults import FAULTS
from rocesim.scenario import OUTPUT, SCENARIO, TOPOLOGY, TRAFFIC
from rocesim.scenario.traffic_kinds import FLOW
from rocesim.settings import REQUIRED, Kinds, Section
from rocesim.scenario.workload_formats import FORMATS

# (section name, its declaration, the key prefix it is written under)
SECTIONS = {
    "scenario": (SCENARIO, ""),
    "topology": (TOPOLOGY, "topology."),
    "traffic": (TRAFFIC, "traffic[]."),
    "switch": (config.SWITCH, "switch."),
    "nic": (config.NIC, "nic."),
    "deadlock": (config.DEADLOCK, "deadlock."),
    "cc": (config.CC, "cc."),
    "faults": (FAULTS, "faults[]."),
    "output": (OUTPUT, "output."),
    "limits": (config.LIMITS, "limits."),
    "nccl": (config.NCCL, "nccl."),
    "flow": (config.FLOW, "flow."),
}


def _default(default) -> str:
    if default is REQUIRED:
        return " (required)"
    if default is None:
        return " (optional)"
    if isinstance(default, tuple):
        default = list(default)
    if default == "":
        return " = (empty)"
    return f" = {default}"


def _settings(section: Section, prefix: str, top: bool = False):
    for key, accepts, default, doc in _rows(section, prefix, top):
        yield f"{key}{_default(default)}"
        yield f"    {doc}{'; ' if doc else ''}{accepts}"


def _rows(section: Section, prefix: str, top: bool):
    """Rows of a section; at the top level, nested sections stay one row (their own
    section lists them)."""
    if not top:
        return section.describe(prefix)
    return [(prefix + name, e.type.text, e.default, e.doc) for name, e in section.items()]


def _kinds(kinds: Kinds, prefix: str):
    for kind, section in kinds.kinds.items():
        yield f"{prefix}kind = {kind}"
        yield f"    {section.doc}"
        yield from ("  " + line for line in _settings(section, prefix))


def lines(section: str | None = None):
    """Yield the lines of `rocesim keys [SECTION]`."""
    for name, (decl, prefix) in SECTIONS.items():
        if section not in (None, name):
            continue
        if isinstance(decl, Kinds):
            yield from _kinds(decl, prefix)
        else:
            yield from _settings(decl, prefix, top=name == "scenario")
        if name == "switch":                            # the load-balancing schemes' keys
            yield from _settings(Section("", **lb.registry.COMMON), "switch.load_balancing.")
            for scheme in lb.builtin_balancers().values():
                yield f"switch.load_balancing.scheme = {scheme.name}"
                yield f"    {scheme.doc}"
                yield from ("  " + line for line in _settings(Section(scheme.doc, **scheme.params),
                                                              "switch.load_balancing."))
        if name == "traffic":
            yield from _settings(FLOW, "traffic[].flows[].")
            for fmt in FORMATS.values():                # the workload formats' presets
                for model, preset in (fmt.presets or {}).items():
                    yield f"traffic[].model (workload) = {model}"
                    yield f"    {preset.params.doc}"
                    yield from ("  " + line for line in _settings(preset.params, "traffic[].params."))
