"""Discovery of the built-in load-balancing schemes, and the `switch.load_balancing` setting.

Every core module named `lb_<name>` with a module-level `DECLARATION` is a scheme: adding one
is adding its file (rocesim/_core/lb.pxd says what it must do), with no table to edit here.
The declaration is in the vocabulary of the congestion-control schemes'
(`rocesim._core.declare`); its parameters become Settings with the same parsers.  It also
says how flow mode approximates it, `fluid=(way, what that means)`: way `ecmp` (a queue pair
on the path its 5-tuple hashes to, exactly as its packets go under ECMP) or `split` (the
fluid splits each flow evenly over the equal-cost ports of the switches that run it:
rocesim/_core/fluid.pyx).

    switch:
      load_balancing:
        scheme: adaptive          # ecmp (default) | flowlet | spray | adaptive
        gap: 0us                  # the scheme's parameters, beside it
        hash_seed: per_switch     # or shared: every switch hashes alike (polarization)
        hash_qp: false            # true: E-ECMP, the destination queue pair number hashed too
        tiers:                    # optional: another scheme at a tier of switches
          2: {scheme: spray}      #   (1: the switches next to hosts, 2: the next, ...)
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import lru_cache

from rocesim import _core
from rocesim._core import declare
from rocesim.cc.registry import setting_type
from rocesim.errors import ScenarioError
from rocesim.settings import Boolean, Choice, Integer, Section, Setting, show

DEFAULT = "ecmp"
FLUID_WAYS = ("ecmp", "split")      # how flow mode may approximate a scheme (its DECLARATION's `fluid`)
ENTROPY_IN_FLUID = ("each window of entropy_every packets on the path of its own entropy value, ECMP's "
                    "choice for it (past 16 windows a flow is split evenly at every switch)")

# what every scheme's mapping may hold besides the scheme's own parameters
COMMON = {
    "hash_seed": Setting(Choice("per_switch", "shared"), "per_switch",
                         "per_switch: each switch mixes a seed of its own into ECMP's hash (the HPCC fork's, "
                         "as most deployed switches can); shared: every switch hashes alike, so a flow's "
                         "choice at one tier repeats at the next (hash polarization)"),
    "hash_qp": Setting(Boolean(), False,
                       "E-ECMP (Meta, SIGCOMM'24): the hash also covers the destination queue pair number, "
                       "so the queue pairs of a connection spread even when they share a UDP source port "
                       "(nic.udp_source_port: fixed); applies to flows on a connection (a flow without one "
                       "keeps its own hash)"),
}


@dataclass(frozen=True)
class Balancer:
    """One load-balancing scheme: its name, the core module that installs it, its parameters."""

    name: str
    module: str
    doc: str
    params: dict = field(default_factory=dict)     # name -> rocesim.settings.Setting
    fluid: str = DEFAULT                           # how flow mode approximates it (FLUID_WAYS)
    fluid_note: str = ""                           # what that approximation means, for the user

    def load_module(self):
        """The core module with `install(core, switches, params)`."""
        return importlib.import_module(self.module)


@lru_cache(maxsize=1)
def builtin_balancers() -> dict[str, Balancer]:
    """The built-in schemes by name, `ecmp` first, then alphabetical."""
    found = {}
    for info in pkgutil.iter_modules(_core.__path__):
        if info.name.startswith("lb_"):
            module = importlib.import_module(f"rocesim._core.{info.name}")
            d = getattr(module, "DECLARATION", None)
            if d is not None:
                declare.check(d)
                way, note = _fluid_way(d)
                found[d["name"]] = Balancer(d["name"], module.__name__, d["doc"], {
                    name: Setting(setting_type(kind), default, doc) for name, kind, default, doc in d["params"]},
                    fluid=way, fluid_note=note)
    return dict(sorted(found.items(), key=lambda kv: (kv[0] != DEFAULT, kv[0])))


def _fluid_way(declaration: dict) -> tuple[str, str]:
    """A scheme's declared `fluid` (way, note), checked: every scheme says how flow mode runs it."""
    way = declaration.get("fluid")
    if not (isinstance(way, tuple) and len(way) == 2 and way[0] in FLUID_WAYS and isinstance(way[1], str)):
        raise ValueError(f"load-balancing scheme {declaration['name']!r}: `fluid` must be (way, note) with way "
                         f"one of {', '.join(FLUID_WAYS)}, got {way!r}")
    return way


def get_balancer(name, key: str = "switch.load_balancing.scheme") -> Balancer:
    """The scheme called `name`."""
    schemes = builtin_balancers()
    if not isinstance(name, str) or name not in schemes:
        raise ScenarioError(key, f"unknown load-balancing scheme {show(name)}; available: {', '.join(schemes)}")
    return schemes[name]


def _one(given, key: str, common: bool) -> dict:
    """{scheme, params} of one scheme's mapping (with `common`: the COMMON keys too)."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ScenarioError(key, f"expected a mapping with a scheme ({', '.join(builtin_balancers())}), "
                                 f"got {show(given)}")
    scheme = get_balancer(given.get("scheme", DEFAULT), f"{key}.scheme")
    extra = ("scheme", "tiers", *COMMON) if common else ("scheme",)
    params = Section("", **scheme.params).resolve({k: v for k, v in given.items() if k not in extra}, key,
                                                  extra=())
    return {"scheme": scheme.name, "params": params}


def resolve(given, key: str = "switch.load_balancing") -> dict:
    """The `switch.load_balancing` mapping resolved: {scheme, params, hash_seed, tiers: {tier:
    {scheme, params}}}, every key checked (an unknown one, a parameter another scheme has,
    a tier that is not a whole number >= 1 are refused, naming it)."""
    out = _one(given, key, common=True)
    given = given or {}
    out.update(Section("", **COMMON).resolve({k: given[k] for k in COMMON if k in given}, key))
    tiers = given.get("tiers") or {}
    if not isinstance(tiers, dict):
        raise ScenarioError(f"{key}.tiers", f"expected a mapping of tier (1, 2, ...) to a scheme's mapping, "
                                            f"got {show(tiers)}")
    out["tiers"] = {}
    for tier, entry in tiers.items():
        where = f"{key}.tiers.{tier}"
        level = Integer(1, 64).parse(tier, where)
        out["tiers"][level] = _one(entry, where, common=False)
    return out


def switch_schemes(resolved: dict, levels) -> list[tuple[str, dict, list]]:
    """For switches at `levels` (each switch's tier: 1 next to the hosts), the schemes their
    tiers take: [(scheme name, its params, [switch indices])], ECMP's left out (it needs no
    install: the core's default)."""
    groups: dict[tuple, tuple[str, dict, list]] = {}
    for k, level in enumerate(levels):
        entry = resolved["tiers"].get(int(level), resolved)
        key = (entry["scheme"], tuple(sorted(entry["params"].items())))
        groups.setdefault(key, (entry["scheme"], entry["params"], []))[2].append(k)
    return [group for group in groups.values() if group[0] != DEFAULT]


def fluid_approximation(resolved: dict, entropy_every) -> str | None:
    """How flow mode approximates the resolved `switch.load_balancing` and the sender's entropy
    (`nic.entropy_every`), in one line for summary.json and `rocesim check`; None when every
    switch runs ECMP without entropy (then the fluid routes each queue pair as its packets go)."""
    tiers = resolved["tiers"]
    entries = [("" if not tiers else " (other tiers)", resolved)]
    entries += [(f" at tier {tier}", entry) for tier, entry in sorted(tiers.items())]
    if all(entry["scheme"] == DEFAULT for _, entry in entries) and entropy_every == "none":
        return None
    notes = [f"{entry['scheme']}{where}: {get_balancer(entry['scheme']).fluid_note}" for where, entry in entries]
    if entropy_every != "none":
        notes.append(f"nic.entropy_every {entropy_every}: {ENTROPY_IN_FLUID}")
    return "; ".join(notes)


def fluid_split_switches(balancers: list) -> list[int]:
    """Of `balancers` (`switch_schemes`' groups), the switches where the fluid splits flows evenly."""
    return sorted(k for name, _, switches in balancers if get_balancer(name).fluid == "split" for k in switches)
