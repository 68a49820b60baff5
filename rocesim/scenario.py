"""YAML scenarios: load, check every key, and build a `Simulation` before anything runs.

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

Every mistake raises one `ScenarioError` naming the key path (`traffic[1].load`) and
the reason.  Sizes, rates and times need explicit units.  Relative file paths are
read from the scenario file's folder.  Nesting deeper than `MAX_DEPTH` levels, text
that is not UTF-8, and a topology or traffic whose estimated memory
(`rocesim.memory.memory_estimate`) exceeds `limits.memory` are refused up front.
"""
from __future__ import annotations

import copy
import importlib.util
import os
import re
from dataclasses import dataclass, field

import numpy as np
import yaml

from rocesim.network import topology as topo_mod
from rocesim import traffic as tr
from rocesim._textfile import decode_utf8, read_text
from rocesim.memory import MemoryLimit
from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.simulation import Simulation
from rocesim.units import parse_rate, parse_size, parse_time

TOP_KEYS = ("name", "seed", "stop", "topology", "switch", "nic", "cc", "routes", "traffic", "output",
            "limits", "deadlock", "faults")

MAX_DEPTH = 64
"""The deepest nesting of mappings and lists a scenario may have (the top mapping is
level 1; real scenarios need about 5)."""


@dataclass
class Scenario:
    """A checked scenario: the simulation to run and how to write its output."""

    sim: Simulation
    stop: int | None
    output: dict
    name: str = ""
    raw: dict = field(default_factory=dict)


# --- small checked readers ---------------------------------------------------------------

def _show(v, limit=60) -> str:
    """A short repr of a user value for messages (huge lists and strings are cut)."""
    if isinstance(v, (dict, list)):
        text = f"{type(v).__name__} {v!r}" if len(v) <= 8 else f"{type(v).__name__} of {len(v)} items"
    else:
        try:
            text = repr(v)
        except ValueError:                 # an int too long to print
            text = f"{type(v).__name__} too long to show"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _choice(v, key, choices, what) -> str:
    """A name from `choices` (a string; never used as a dict key before this check)."""
    if isinstance(v, str) and v in choices:
        return v
    if v is None:
        got = "missing (required)"
    elif isinstance(v, str):
        got = f"unknown {what} {v!r}"
    else:
        got = f"expected a {what} name, got {_show(v)}"
    raise ScenarioError(key, f"{got}; valid: {', '.join(choices)}")


def _label(k) -> str:
    return f"[{k}]" if isinstance(k, int) and not isinstance(k, bool) else f".{k}"


def check_depth(raw, where="", limit=MAX_DEPTH) -> None:
    """Refuse nesting deeper than `limit` levels and structures that contain themselves
    (YAML anchors can build both).  Iterative, and each shared node is visited once."""
    height: dict[int, int] = {}          # id -> levels from this node down
    chain: list[str] = []                # labels of the nodes on the current path
    open_ids: set[int] = set()
    stack = [(raw, where, False)]

    def where_now(extra=""):
        parts = chain + [extra] if extra else list(chain)
        if len(parts) > 8:                   # keep the key readable: the start and the end
            parts = parts[:5] + [f"...({len(parts) - 7} more levels)..."] + parts[-2:]
        return "".join(parts).lstrip(".") or "scenario"

    while stack:
        node, label, done = stack.pop()
        i = id(node)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        if done:
            open_ids.discard(i)
            chain.pop()
            height[i] = 1 + max((height[id(c)] for _, c in items if isinstance(c, (dict, list))), default=0)
            continue
        if i in height:
            if len(chain) + height[i] > limit:
                raise ScenarioError(where_now(label), f"nested more than {limit} levels deep")
            continue
        if i in open_ids:
            raise ScenarioError(where_now(label), "refers to itself (a YAML alias inside its own anchor)")
        chain.append(label)
        if len(chain) > limit:
            raise ScenarioError(where_now(), f"nested more than {limit} levels deep")
        open_ids.add(i)
        stack.append((node, label, True))
        for k, c in items:
            if isinstance(c, (dict, list)):
                stack.append((c, _label(k), False))


def _mapping(v, key) -> dict:
    if not isinstance(v, dict):
        raise ScenarioError(key, f"expected a mapping (key: value, ...), got {_show(v)}")
    return v


def _keys(d: dict, key: str, required=(), optional=()) -> dict:
    """Check that `d` has every required key and nothing unknown."""
    _mapping(d, key or "scenario")
    allowed = set(required) | set(optional)
    for k in d:
        if k not in allowed:
            raise ScenarioError(f"{key}.{k}" if key else str(k),
                                f"unknown key; valid keys here: {', '.join(sorted(allowed))}")
    for k in required:
        if k not in d:
            raise ScenarioError(f"{key}.{k}" if key else k, "missing (required)")
    return d


def _count(v, key, lo=1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ScenarioError(key, f"expected an integer >= {lo}, got {_show(v)}")
    return v


def _number(v, key, lo=0.0, hi=float("inf")) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v <= hi:
        raise ScenarioError(key, f"expected a number in ({lo}, {hi}], got {_show(v)}")
    return float(v)


def _link(v, key) -> tuple[int, int]:
    _keys(v, key, required=("rate", "delay"))
    return parse_rate(v["rate"], f"{key}.rate"), parse_time(v["delay"], f"{key}.delay")


def _rekey(prefix: str, e: ScenarioError) -> ScenarioError:
    """Put an error from a library call under the scenario's key path."""
    if e.key.startswith(prefix) or ":" in e.key or os.sep in e.key:   # already a path or file:line
        return e
    return ScenarioError(f"{prefix}.{e.key}" if e.key else prefix, e.reason)


def _path(base_dir, v, key) -> str:
    if not isinstance(v, str) or not v:
        raise ScenarioError(key, f"expected a file path, got {_show(v)}")
    if "\0" in v:
        raise ScenarioError(key, f"a file path cannot contain a NUL character, got {_show(v)}")
    p = v if os.path.isabs(v) else os.path.join(base_dir, v)
    if not os.path.isfile(p):
        raise ScenarioError(key, f"no such file: {p}")
    return p


# --- topology ------------------------------------------------------------------------------

def _host_fabric(d, key):
    """`link` for every link, or `host_link` and `fabric_link` (each overrides `link`)."""
    base = _link(d["link"], f"{key}.link") if "link" in d else None
    host = _link(d["host_link"], f"{key}.host_link") if "host_link" in d else base
    fabric = _link(d["fabric_link"], f"{key}.fabric_link") if "fabric_link" in d else (base or host)
    if host is None:
        raise ScenarioError(f"{key}.link", "missing: give link, or host_link and fabric_link")
    return host, fabric


LINKS = ("link", "host_link", "fabric_link")
CLOS3_COUNTS = ("tors", "aggs_per_pod", "tors_per_pod", "cores", "hosts_per_tor")
SERVERS = ("servers", "gpus_per_server", "nic_link", "scale_up")

# The keys of each topology and traffic kind besides `kind`: (required, optional).
# The builders check entries against these tables, and `rocesim keys` lists them.
TOPOLOGY_KEYS = {
    "star": (("hosts", "link"), ()),
    "dumbbell": (("hosts_left", "hosts_right", "link"), ("bottleneck",)),
    "leaf_spine": (("leaves", "spines", "hosts_per_leaf"), LINKS + ("links_per_spine",)),
    "fat_tree": (("k",), LINKS),
    "clos3": (CLOS3_COUNTS, LINKS),
    "hpcc_320": ((), ()),
    "hpcc_file": (("path",), ()),
    "custom": (("hosts", "switches", "links"), ("link",)),
    "rail_optimized": (SERVERS, ("nics_per_server", "servers_per_pod", "spines", "oversubscription",
                                 "fabric_link")),
    "rail_only": (SERVERS, ("nics_per_server",)),
    "astra_sim": (("path",), ("scale_up_dims",)),
}
TRAFFIC_KEYS = {
    "flows": (("flows",), ()),
    "flows[]": (("src", "dst", "size"), ("start", "prio", "path", "rate")),       # one explicit flow
    "incast": (("senders", "receiver", "size"), ("start", "prio")),
    "incast with load": (("senders", "size", "load", "duration"), ("receiver", "start", "hosts", "prio")),
    "permutation": (("size",), ("start", "hosts", "prio")),
    "cdf": (("distribution", "load", "duration"), ("start", "hosts", "prio")),
    "hpcc_flow_file": (("path",), ()),
    "collective": (("op", "size"), ("algorithm", "ranks", "chunks", "start", "prio", "group_size", "pxn")),
    "workload": (("model",), ("ranks", "iterations", "algorithms", "chunks", "prio", "start", "params", "clock",
                              "job", "gpus", "placement", "parallelism", "pipeline", "pxn")),
}


def _kind_keys(d, key, table, kind) -> dict:
    """Check an entry's keys against its kind's row of TOPOLOGY_KEYS or TRAFFIC_KEYS."""
    required, optional = table[kind]
    return _keys(d, key, ("kind",) + required, optional)


def _kind(d, key, table, what):
    """The `kind:` of a topology or traffic entry: a name from `table`."""
    kind = d.get("kind")
    if isinstance(kind, str) and kind in table:
        return kind
    if kind is None:
        got = "missing (required)"
    elif isinstance(kind, str):
        got = f"unknown {what} {kind!r}"
    else:
        got = f"expected a {what} name, got {_show(kind)}"
    raise ScenarioError(f"{key}.kind", f"{got}; valid kinds: {', '.join(table)}")


def build_topology(d, base_dir=".", key="topology", memory=None):
    """A `Topology` from the scenario's `topology:` mapping (the NICs of a platform's servers
    are its hosts).

    `memory` (a `MemoryLimit`, default: 75% of the machine's memory) refuses sizes whose
    estimate exceeds it, before building."""
    return build_platform(d, base_dir, key, memory).topology


def build_platform(d, base_dir=".", key="topology", memory=None):
    """A `rocesim.network.platform.Platform` from the scenario's `topology:` mapping: multi-GPU
    servers for `rail_optimized`, `rail_only`, and `leaf_spine`/`fat_tree`/`clos3` with
    `gpus_per_server`; otherwise one rank per host.  `memory` as for `build_topology`."""
    from rocesim.network import platform as pf
    _mapping(d, key)
    kind = _kind(d, key, _TOPOLOGIES, "topology")
    memory = MemoryLimit() if memory is None else memory
    try:
        if kind == "astra_sim":
            return _astra_sim(d, key, memory, base_dir)
        if kind in _PLATFORMS:
            return _PLATFORMS[kind](d, key, memory)
        server = {k: d[k] for k in SERVER_KEYS if k in d}
        d = {k: v for k, v in d.items() if k not in SERVER_KEYS}
        topo = _TOPOLOGIES[kind](d, base_dir, key, memory)
        if memory.shape == (0, 0, 0):        # read from a file: checked once it is known
            memory.topology(f"{key}.path" if "path" in d else key, f"{kind} topology",
                            topo.n_hosts, topo.n_switches, topo.n_links)
        if not server:
            return pf.Platform.hosts(topo)
        if kind not in ("leaf_spine", "fat_tree", "clos3"):
            raise ScenarioError(f"{key}.{next(iter(server))}", f"multi-GPU servers go on leaf_spine, fat_tree, "
                                f"clos3, rail_optimized or rail_only, not {kind}")
        if "gpus_per_server" not in server:
            raise ScenarioError(f"{key}.gpus_per_server", "missing: servers with nics_per_server or scale_up "
                                                          "need gpus_per_server")
        return pf.on_topology(topo, server["gpus_per_server"], _scale_up(server.get("scale_up"), f"{key}.scale_up"),
                              nics_per_server=server.get("nics_per_server"), kind=kind)
    except ScenarioError as e:
        raise _rekey(key, e) from None


SERVER_KEYS = ("gpus_per_server", "nics_per_server", "scale_up")


def _scale_up(v, key):
    """`scale_up: {rate, delay, kind}`: each GPU's rate per direction and a hop's latency."""
    from rocesim.network.platform import SCALE_UP_KINDS, ScaleUp
    if v is None:
        return None
    _keys(v, key, ("rate", "delay"), ("kind",))
    kind = _choice(v.get("kind", "switch"), f"{key}.kind", SCALE_UP_KINDS, "scale-up kind")
    return ScaleUp(parse_rate(v["rate"], f"{key}.rate"), parse_time(v["delay"], f"{key}.delay"), kind)


def _server_shape(d, key, memory, what):
    """Check the memory of `servers` x NICs hosts (about one switch port per NIC above them)."""
    servers = _count(d["servers"], f"{key}.servers")
    nics = _count(d.get("nics_per_server", d["gpus_per_server"]), f"{key}.nics_per_server")
    memory.topology(f"{key}.servers", what, servers * nics, nics, 2 * servers * nics)
    return servers


def _rail_optimized(d, key, memory):
    from rocesim.network import platform as pf
    _kind_keys(d, key, TOPOLOGY_KEYS, "rail_optimized")
    servers = _server_shape(d, key, memory, "rail_optimized")
    rate, delay = _link(d["nic_link"], f"{key}.nic_link")
    frate, fdelay = _link(d["fabric_link"], f"{key}.fabric_link") if "fabric_link" in d else (None, None)
    if "spines" in d and "oversubscription" in d:
        raise ScenarioError(f"{key}.spines", "give spines or oversubscription, not both")
    return pf.rail_optimized(servers, d["gpus_per_server"], rate, delay,
                             _scale_up(d["scale_up"], f"{key}.scale_up"), nics_per_server=d.get("nics_per_server"),
                             servers_per_pod=d.get("servers_per_pod"), spines=d.get("spines"),
                             oversubscription=d.get("oversubscription", 1.0), fabric_rate=frate, fabric_delay=fdelay)


def _rail_only(d, key, memory):
    from rocesim.network import platform as pf
    _kind_keys(d, key, TOPOLOGY_KEYS, "rail_only")
    servers = _server_shape(d, key, memory, "rail_only")
    rate, delay = _link(d["nic_link"], f"{key}.nic_link")
    return pf.rail_only(servers, d["gpus_per_server"], rate, delay,
                        _scale_up(d["scale_up"], f"{key}.scale_up"), nics_per_server=d.get("nics_per_server"))


def _astra_sim(d, key, memory, base_dir):
    """`{kind: astra_sim, path: network.yml, scale_up_dims: 1}`: an ASTRA-sim 2.0 network
    file as the equivalent rail_only / rail_optimized platform (rocesim/astra_network.py)."""
    from rocesim.network.astra_network import to_topology
    _kind_keys(d, key, TOPOLOGY_KEYS, "astra_sim")
    path = _path(base_dir, d["path"], f"{key}.path")
    network = parse_yaml(read_text(path), path)
    try:
        mapping = to_topology(network, path, d.get("scale_up_dims"))
    except ScenarioError as e:
        raise _rekey(key, e) from None
    return _PLATFORMS[mapping["kind"]](mapping, f"{key}({os.path.basename(path)})", memory)


_PLATFORMS = {"rail_optimized": _rail_optimized, "rail_only": _rail_only}


def _star(d, base_dir, key, memory):
    _kind_keys(d, key, TOPOLOGY_KEYS, "star")
    rate, delay = _link(d["link"], f"{key}.link")
    hosts = _count(d["hosts"], f"{key}.hosts", 2)
    memory.topology(f"{key}.hosts", "star", *topo_mod.shape("star", hosts=hosts))
    return topo_mod.star(hosts, rate, delay)


def _dumbbell(d, base_dir, key, memory):
    _kind_keys(d, key, TOPOLOGY_KEYS, "dumbbell")
    rate, delay = _link(d["link"], f"{key}.link")
    b_rate, b_delay = _link(d["bottleneck"], f"{key}.bottleneck") if "bottleneck" in d else (rate, delay)
    left, right = _count(d["hosts_left"], f"{key}.hosts_left"), _count(d["hosts_right"], f"{key}.hosts_right")
    memory.topology(key, "dumbbell", *topo_mod.shape("dumbbell", hosts_left=left, hosts_right=right))
    return topo_mod.dumbbell(left, right, rate, delay, b_rate, b_delay)


def _leaf_spine(d, base_dir, key, memory):
    _kind_keys(d, key, TOPOLOGY_KEYS, "leaf_spine")
    (hr, hd), (fr, fd) = _host_fabric(d, key)
    n = dict(leaves=_count(d["leaves"], f"{key}.leaves"), spines=_count(d["spines"], f"{key}.spines"),
             hosts_per_leaf=_count(d["hosts_per_leaf"], f"{key}.hosts_per_leaf"),
             links_per_spine=_count(d.get("links_per_spine", 1), f"{key}.links_per_spine"))
    memory.topology(key, "leaf_spine", *topo_mod.shape("leaf_spine", **n))
    return topo_mod.leaf_spine(n["leaves"], n["spines"], n["hosts_per_leaf"], hr, hd, fr, fd,
                               n["links_per_spine"])


def _fat_tree(d, base_dir, key, memory):
    _kind_keys(d, key, TOPOLOGY_KEYS, "fat_tree")
    k = _count(d["k"], f"{key}.k", 2)
    if k % 2:
        raise ScenarioError(f"{key}.k", f"a k-ary fat tree needs an even k, got {k}")
    (hr, hd), (fr, fd) = _host_fabric(d, key)
    memory.topology(f"{key}.k", f"fat_tree with k={k}", *topo_mod.shape("fat_tree", k=k))
    return topo_mod.fat_tree(k, hr, hd, fr, fd)


def _clos3(d, base_dir, key, memory):
    names = CLOS3_COUNTS
    _kind_keys(d, key, TOPOLOGY_KEYS, "clos3")
    (hr, hd), (fr, fd) = _host_fabric(d, key)
    n = {name: _count(d[name], f"{key}.{name}") for name in names}
    memory.topology(key, "clos3", *topo_mod.shape("clos3", **n))
    return topo_mod.clos3(*(n[name] for name in names), hr, hd, fr, fd)


def _hpcc_320(d, base_dir, key, memory):
    _kind_keys(d, key, TOPOLOGY_KEYS, "hpcc_320")
    return topo_mod.hpcc_320()


def _hpcc_file(d, base_dir, key, memory):
    _kind_keys(d, key, TOPOLOGY_KEYS, "hpcc_file")
    return topo_mod.from_hpcc_file(_path(base_dir, d["path"], f"{key}.path"))


def _custom(d, base_dir, key, memory):
    """Any graph: `hosts` (0..H-1), `switches` (H..H+S-1), a default `link`, and `links`,
    each [a, b] or {a, b, rate, delay} (a link of its own)."""
    _kind_keys(d, key, TOPOLOGY_KEYS, "custom")
    hosts, switches = _count(d["hosts"], f"{key}.hosts"), _count(d["switches"], f"{key}.switches")
    if not isinstance(d["links"], list) or not d["links"]:
        raise ScenarioError(f"{key}.links", "expected a non-empty list of [a, b] or {a, b, rate, delay}")
    memory.topology(key, "custom topology", hosts, switches, len(d["links"]))
    t = topo_mod.Topology(hosts)
    t.add_switches(switches)
    default = _link(d["link"], f"{key}.link") if "link" in d else None
    for j, ln in enumerate(d["links"]):
        lk = f"{key}.links[{j}]"
        if isinstance(ln, dict):
            _keys(ln, lk, ("a", "b"), ("rate", "delay"))
            a, b = ln["a"], ln["b"]
            for name in ("rate", "delay"):
                if name not in ln and default is None:
                    raise ScenarioError(f"{lk}.{name}", "missing: give it here or a default `link`")
            rate = parse_rate(ln["rate"], f"{lk}.rate") if "rate" in ln else default[0]
            delay = parse_time(ln["delay"], f"{lk}.delay") if "delay" in ln else default[1]
        elif isinstance(ln, list) and len(ln) == 2:
            if default is None:
                raise ScenarioError(f"{key}.link", "missing: links given as [a, b] take this rate and delay")
            (a, b), (rate, delay) = ln, default
        else:
            raise ScenarioError(lk, f"expected [a, b] or {{a, b, rate, delay}}, got {ln!r}")
        for name, v in (("a", a), ("b", b)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ScenarioError(f"{lk}.{name}" if isinstance(ln, dict) else lk, f"expected a node id, got {v!r}")
        try:
            t.add_link(a, b, rate, delay)
        except ScenarioError as e:
            raise ScenarioError(lk, e.reason) from None
    t.validate()
    return t


_TOPOLOGIES = {"star": _star, "dumbbell": _dumbbell, "leaf_spine": _leaf_spine, "fat_tree": _fat_tree,
               "clos3": _clos3, "hpcc_320": _hpcc_320, "hpcc_file": _hpcc_file,
               "custom": _custom,
               "rail_optimized": None, "rail_only": None, "astra_sim": None}


# --- traffic ---------------------------------------------------------------------------------

def _ids(v, key, n, what) -> np.ndarray:
    """`all` or a list of ids in 0..n-1 (`what`: host or rank)."""
    if isinstance(v, str) and v == "all":
        return np.arange(n)
    if not isinstance(v, list) or not v or not all(isinstance(h, int) and not isinstance(h, bool) for h in v):
        raise ScenarioError(key, f"expected 'all' or a list of {what} ids, got {_show(v)}")
    bad = [h for h in v if not 0 <= h < n]
    if bad:
        raise ScenarioError(key, f"{what} {bad[0]} does not exist; {what}s are 0..{n - 1}")
    return np.asarray(v)


def _hosts(v, key, topo) -> np.ndarray:
    """`all` or a list of host ids."""
    return _ids(v, key, topo.n_hosts, "host")


def _ranks(v, key, sim) -> np.ndarray:
    """`all` or a list of ranks (GPUs of the platform; on a plain topology, hosts)."""
    return _ids(v, key, sim.platform.n_ranks, "rank")


def _prio(d, key) -> int:
    p = d.get("prio", DEFAULT_FLOW_PRIORITY)
    if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 7:
        raise ScenarioError(f"{key}.prio", f"data flows use priorities 1..7, got {_show(p)}")
    return p


def _t_flows(sim, d, key, rng, base_dir, index, memory):
    _kind_keys(d, key, TRAFFIC_KEYS, "flows")
    if not isinstance(d["flows"], list) or not d["flows"]:
        raise ScenarioError(f"{key}.flows", "expected a non-empty list of {src, dst, size, start}")
    memory.flows(f"{key}.flows", "flows", sim.n_flows, len(d["flows"]))
    for j, f in enumerate(d["flows"]):
        fk = f"{key}.flows[{j}]"
        _keys(f, fk, *TRAFFIC_KEYS["flows[]"])
        path = f.get("path")
        if path is not None and (not isinstance(path, list)
                                 or not all(isinstance(n, int) and not isinstance(n, bool) for n in path)):
            raise ScenarioError(f"{fk}.path", f"expected a list of node ids [src, switch, ..., dst], "
                                              f"got {_show(path)}")
        try:
            sim.add_flow(_host_id(f["src"], f"{fk}.src", sim), _host_id(f["dst"], f"{fk}.dst", sim),
                         parse_size(f["size"], f"{fk}.size"), parse_time(f.get("start", "0us"), f"{fk}.start"),
                         prio=_prio(f, fk), path=path, tag=index,
                         rate=parse_rate(f["rate"], f"{fk}.rate") if "rate" in f else None)
        except ScenarioError as e:
            # add_flow names the flow by its global id (flows[N]); name it by its place in this entry
            raise ScenarioError(re.sub(r"^flows\[\d+\]", lambda m: fk, e.key), e.reason) from None


def _flow_size(v, key) -> int:
    size = parse_size(v, key)
    if size <= 0:
        raise ScenarioError(key, f"must be positive, got {v!r}")
    return size


def _host_id(v, key, sim) -> int:
    H = sim.topology.n_hosts
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < H:
        raise ScenarioError(key, f"{_show(v)} is not a host; hosts are 0..{H - 1}")
    return v


def _t_incast(sim, d, key, rng, base_dir, index, memory):
    """One incast (senders list or `all`, receiver), or with `load` and `duration`, incasts
    of `senders` random hosts to a random receiver at Poisson times."""
    if "load" in d:
        return _t_repeated_incast(sim, d, key, rng, index, memory)
    _kind_keys(d, key, TRAFFIC_KEYS, "incast")
    receiver = _host_id(d["receiver"], f"{key}.receiver", sim)
    if isinstance(d["senders"], str) and d["senders"] == "all":
        senders = np.array([h for h in range(sim.topology.n_hosts) if h != receiver])
    else:
        senders = _hosts(d["senders"], f"{key}.senders", sim.topology)
    table = tr.incast(senders, receiver, _flow_size(d["size"], f"{key}.size"),
                      parse_time(d.get("start", "0us"), f"{key}.start"), _prio(d, key))
    sim.add_flows(table, tag=index)


def _t_repeated_incast(sim, d, key, rng, index, memory):
    if not (isinstance(d.get("receiver", "random"), str) and d.get("receiver", "random") == "random"):
        raise ScenarioError(f"{key}.load", "with a load, incasts repeat at random times to random "
                                           "receivers: remove receiver (or load for a single incast)")
    _kind_keys(d, key, TRAFFIC_KEYS, "incast with load")
    topo = sim.topology
    hosts = _hosts(d.get("hosts", "all"), f"{key}.hosts", topo)
    n = _count(d["senders"], f"{key}.senders")
    if n >= len(hosts):
        raise ScenarioError(f"{key}.senders", f"needs fewer senders than hosts ({len(hosts)})")
    rate = max(topo.host_rate(int(h)) for h in hosts)
    size = _flow_size(d["size"], f"{key}.size")
    load = _number(d["load"], f"{key}.load", 0.0, 1.0)
    duration = parse_time(d["duration"], f"{key}.duration")
    # incasts of n senders x size bytes carry load x len(hosts) x rate
    memory.flows(f"{key}.duration", "repeated incast",
                 sim.n_flows, load * len(hosts) * rate * duration / (8 * size * 1e12))
    table = tr.repeated_incast(hosts, n, size, load, rate, duration, rng,
                               parse_time(d.get("start", "0us"), f"{key}.start"), _prio(d, key))
    sim.add_flows(table, tag=index)


def _t_permutation(sim, d, key, rng, base_dir, index, memory):
    _kind_keys(d, key, TRAFFIC_KEYS, "permutation")
    hosts = _hosts(d.get("hosts", "all"), f"{key}.hosts", sim.topology)
    memory.flows(key, "permutation", sim.n_flows, len(hosts))
    table = tr.permutation(hosts, _flow_size(d["size"], f"{key}.size"),
                           parse_time(d.get("start", "0us"), f"{key}.start"), rng, _prio(d, key))
    sim.add_flows(table, tag=index)


def _distribution(v, key, base_dir):
    if isinstance(v, dict):
        _keys(v, key, ("file",))
        return tr.FlowSizeCDF.from_file(_path(base_dir, v["file"], f"{key}.file"))
    if not isinstance(v, str):
        raise ScenarioError(key, f"expected websearch, fb_hadoop or {{file: sizes.txt}}, got {_show(v)}")
    if "/" in v or v.endswith((".txt", ".csv", ".cdf")):
        return tr.FlowSizeCDF.from_file(_path(base_dir, v, key))
    return tr.builtin(v, key)


def _t_cdf(sim, d, key, rng, base_dir, index, memory):
    _kind_keys(d, key, TRAFFIC_KEYS, "cdf")
    topo = sim.topology
    hosts = _hosts(d.get("hosts", "all"), f"{key}.hosts", topo)
    if len(hosts) < 2:
        raise ScenarioError(f"{key}.hosts", "needs at least two hosts")
    rates = np.array([topo.host_rate(int(h)) for h in hosts])
    load = _number(d["load"], f"{key}.load", 0.0, 1.0)
    duration = parse_time(d["duration"], f"{key}.duration")
    cdf = _distribution(d["distribution"], f"{key}.distribution", base_dir)
    # each host offers load x its rate in flows of the distribution's mean size
    memory.flows(f"{key}.duration", "cdf traffic", sim.n_flows,
                 load * float(rates.sum()) * duration / (8 * cdf.mean() * 1e12))
    table = tr.poisson_cdf(hosts, rates, load, duration, cdf, rng,
                           parse_time(d.get("start", "0us"), f"{key}.start"), _prio(d, key))
    sim.add_flows(table, tag=index)


def _t_hpcc_flow_file(sim, d, key, rng, base_dir, index, memory):
    _kind_keys(d, key, TRAFFIC_KEYS, "hpcc_flow_file")
    table = tr.hpcc_flow_file(_path(base_dir, d["path"], f"{key}.path"), sim.topology)
    bad = (table.prio < 1) | (table.prio > 7)
    if bad.any():
        raise ScenarioError(f"{key}.path", f"flow {int(np.flatnonzero(bad)[0])} has priority "
                            f"{int(table.prio[bad][0])}; data flows use priorities 1..7")
    memory.flows(f"{key}.path", "hpcc_flow_file", sim.n_flows, len(table))
    sim.add_flows(table, tag=index)


def _rank_groups(v, key, sim) -> list[np.ndarray]:
    """`all`, a list of ranks, or a list of lists (one communicator each)."""
    if isinstance(v, list) and v and all(isinstance(x, list) for x in v):
        return [_ranks(x, f"{key}[{i}]", sim) for i, x in enumerate(v)]
    return [_ranks(v, key, sim)]


def _bool(d, name, key, default=False) -> bool:
    v = d.get(name, default)
    if not isinstance(v, bool):
        raise ScenarioError(f"{key}.{name}", f"expected true or false, got {_show(v)}")
    return v


def _t_collective(sim, d, key, rng, base_dir, index, memory):
    from rocesim.training.collectives import ALGORITHMS, DEFAULT_ALGORITHM
    _kind_keys(d, key, TRAFFIC_KEYS, "collective")
    op = _choice(d["op"], f"{key}.op", ALGORITHMS, "collective")
    algorithm = d.get("algorithm", DEFAULT_ALGORITHM[op])
    if not (isinstance(algorithm, str) and algorithm in ALGORITHMS[op]):
        raise ScenarioError(f"{key}.algorithm", f"{op} has no algorithm {_show(algorithm)}; "
                                                f"valid: {', '.join(ALGORITHMS[op])}")
    size = _flow_size(d["size"], f"{key}.size")
    chunks = _count(d.get("chunks", 1), f"{key}.chunks")
    group_size = _count(d["group_size"], f"{key}.group_size") if "group_size" in d else None
    if algorithm.startswith("hierarchical") and group_size is None and sim.platform.gpus_per_server == 1:
        raise ScenarioError(f"{key}.group_size", "hierarchical all-reduce needs group_size (ranks per group) "
                                                 "unless the platform has multi-GPU servers")
    pxn = _bool(d, "pxn", key)
    groups = _rank_groups(d.get("ranks", "all"), f"{key}.ranks", sim)
    memory.flows(key, f"{op} ({algorithm})", sim.n_flows,
                 sum(collective_flows(op, algorithm, len(m), chunks) for m in groups))
    for members in groups:
        if len(members) < 2:
            raise ScenarioError(f"{key}.ranks", "a collective needs at least two ranks")
        try:
            sim.add_collective(op, algorithm, members.tolist(), size, chunks=chunks, prio=_prio(d, key),
                               start=parse_time(d.get("start", "0us"), f"{key}.start"), group_size=group_size,
                               pxn=pxn)
        except ScenarioError as e:
            raise _rekey(key, e) from None


def collective_flows(op, algorithm, ranks, chunks) -> int:
    """About how many flows and compute steps a collective adds, an upper end (for the
    memory check): chunks x ranks x (steps + 4), where steps is ranks - 1 for ring-like and
    direct algorithms (twice that for all-reduce, and twice again for ring_bidir),
    2 log2(ranks) for halving-doubling, 4 for trees, and 1 for broadcast and reduce."""
    p = max(int(ranks), 2)
    if op in ("broadcast", "reduce"):
        steps = 1
    elif algorithm == "halving_doubling":
        steps = 2 * max(1, (p - 1).bit_length())
    elif algorithm == "double_binary_tree":
        steps = 4
    else:
        steps = (p - 1) * (2 if op == "allreduce" else 1) * (2 if algorithm == "ring_bidir" else 1)
    return chunks * p * (steps + 4)


def _parse_hz(v, key) -> float:
    if isinstance(v, str):
        for unit, f in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3), ("Hz", 1.0)):
            if v.strip().endswith(unit):
                try:
                    hz = float(v.strip()[:-len(unit)]) * f
                except ValueError:
                    break
                if hz > 0:
                    return hz
    raise ScenarioError(key, f"expected a clock frequency such as 1GHz, got {v!r}")


def _job_ranks(sim, d, key, index):
    """A workload's ranks (`ranks`, or `gpus` and `placement`) and job name, disjoint from
    every other workload's."""
    from rocesim.training.jobs import place
    taken = np.zeros(sim.platform.n_ranks, bool)
    for r in sim.job_ranks.values():
        taken[r] = True
    if "gpus" in d:
        if "ranks" in d:
            raise ScenarioError(f"{key}.gpus", "give ranks or gpus (with placement), not both")
        ranks = place(sim.platform, _count(d["gpus"], f"{key}.gpus"), d.get("placement", "packed"), taken,
                      f"{key}.gpus")
    else:
        if "placement" in d:
            raise ScenarioError(f"{key}.placement", "placement chooses the ranks of `gpus`; it needs gpus")
        ranks = _ranks(d.get("ranks", "all"), f"{key}.ranks", sim)
        if taken[ranks].any():
            raise ScenarioError(f"{key}.ranks", f"rank {int(ranks[taken[ranks]][0])} already runs another job; "
                                                "jobs need disjoint ranks")
    job = d.get("job", f"job{index}")
    if not isinstance(job, str) or not job or job in sim.job_ranks:
        raise ScenarioError(f"{key}.job", f"expected a name no other workload uses, got {job!r}")
    sim.job_ranks[job] = ranks
    return ranks, job


def _t_workload(sim, d, key, rng, base_dir, index, memory):
    from rocesim.training.collectives import ALGORITHMS
    from rocesim.training import workloads
    from rocesim.training.workloads.llm import LLM_PRESETS
    _kind_keys(d, key, TRAFFIC_KEYS, "workload")
    ranks, job = _job_ranks(sim, d, key, index)
    iterations = _count(d.get("iterations", 1), f"{key}.iterations")
    algos = d.get("algorithms", {})
    _mapping(algos, f"{key}.algorithms")
    extra = {"moe_alltoall": "alltoall", "gradients": "allreduce"}
    for op, alg in algos.items():
        valid = ALGORITHMS.get(extra.get(op, op)) if isinstance(op, str) else None
        if valid is None or not (isinstance(alg, str) and alg in valid):
            raise ScenarioError(f"{key}.algorithms.{op}", f"expected one of {', '.join(valid or ())} "
                                                          f"for an op in {', '.join(list(ALGORITHMS) + list(extra))}")
    common = dict(algorithms=algos, chunks=_count(d.get("chunks", 1), f"{key}.chunks"), prio=_prio(d, key),
                  start=parse_time(d.get("start", "0us"), f"{key}.start"), tag=index, job=job)
    model = d["model"]
    llm_only = [k for k in ("parallelism", "pipeline", "pxn") if k in d]
    if llm_only and not (isinstance(model, str) and model in LLM_PRESETS):
        raise ScenarioError(f"{key}.{llm_only[0]}", f"only the LLM presets ({', '.join(LLM_PRESETS)}) take it")
    if isinstance(model, str) and model in LLM_PRESETS:
        return _llm_workload(sim, d, key, model, ranks, iterations, common)
    if isinstance(model, str):
        params = _preset_params(model, d.get("params", {}), key)
        wl = workloads.preset(model, f"{key}.model", **params)
    elif isinstance(model, dict) and set(model) == {"astra_sim"}:
        from rocesim.training.workloads.astra import read_astra_sim
        clock = _parse_hz(d.get("clock", "1GHz"), f"{key}.clock")
        wl = read_astra_sim(_path(base_dir, model["astra_sim"], f"{key}.model.astra_sim"), clock)
    elif isinstance(model, dict) and set(model) == {"chakra"}:
        from rocesim.training.workloads.chakra import add_chakra, read_chakra
        if sim.platform.gpus_per_server > 1:
            raise ScenarioError(f"{key}.model.chakra", "Chakra traces run on one rank per host; use a topology "
                                                       "without gpus_per_server")
        prefix = model["chakra"]
        if not isinstance(prefix, str):
            raise ScenarioError(f"{key}.model.chakra", "expected a path prefix (files <prefix>.<rank>.et)")
        prefix = prefix if os.path.isabs(prefix) else os.path.join(base_dir, prefix)
        del common["job"]
        add_chakra(sim, read_chakra(prefix, len(ranks)), ranks, iterations, **common)
        return
    else:
        raise ScenarioError(f"{key}.model", "expected a preset name, {astra_sim: file} or {chakra: prefix}")
    try:
        workloads.add_training(sim, wl, ranks, iterations, **common)
    except ScenarioError as e:
        raise _rekey(key, e) from None


def _preset_params(model, params, key, presets=None) -> dict:
    """A preset's `params`: known names, positive numbers of a sane size (ints where the
    preset's default is an int), so that the preset cannot overflow or run away.
    `presets`: name -> function of the parameters (default: the layer-model presets)."""
    import inspect
    if presets is None:
        from rocesim.training.workloads.presets import PRESETS as presets
    _mapping(params, f"{key}.params")
    if not (isinstance(model, str) and model in presets):
        return params                           # preset() names the valid models
    defaults = {n: p.default for n, p in inspect.signature(presets[model]).parameters.items()}
    for name, v in params.items():
        k = f"{key}.params.{name}"
        if name not in defaults:
            continue                            # preset() names the unknown parameter
        want_int = isinstance(defaults[name], int)
        hi = 10**6 if want_int else 1e12
        ok_type = isinstance(v, int) if want_int else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok_type or not 0 < v <= hi:
            raise ScenarioError(k, f"expected {'an integer' if want_int else 'a number'} in (0, {hi:g}], "
                                   f"got {_show(v)}")
    return params


PARALLELISM_KEYS = ("tp", "pp", "cp", "ep", "order")


def _llm_workload(sim, d, key, name, ranks, iterations, common):
    """An LLM preset (`gpt`, `mixtral`) with `params`, `parallelism: {tp, pp, cp, ep, order}`
    (dp is what is left), `pipeline: 1f1b|gpipe` and `pxn`."""
    from rocesim.training.parallelism import Parallelism
    from rocesim.training.workloads.llm import LLM_PRESETS, SCHEDULES, add_llm_training
    params = _preset_params(name, d.get("params", {}), key, LLM_PRESETS)
    try:
        model, dims = LLM_PRESETS[name](**params)
    except TypeError as e:
        raise ScenarioError(f"{key}.params", f"bad preset parameters: {e}") from None
    par = d.get("parallelism", {})
    _keys(par, f"{key}.parallelism", (), PARALLELISM_KEYS)
    for k in ("tp", "pp", "cp", "ep"):
        if k in par:
            dims[k] = _count(par[k], f"{key}.parallelism.{k}")
    if "order" in par:
        dims["order"] = par["order"]
    pipeline = _choice(d.get("pipeline", "1f1b"), f"{key}.pipeline", SCHEDULES, "pipeline schedule")
    try:
        add_llm_training(sim, model, ranks, iterations, Parallelism.for_ranks(len(ranks), **dims),
                         pipeline=pipeline, pxn=_bool(d, "pxn", key), **common)
    except ScenarioError as e:
        raise _rekey(key, e) from None


TRAFFIC_KINDS = {"flows": _t_flows, "incast": _t_incast, "permutation": _t_permutation,
                 "cdf": _t_cdf, "hpcc_flow_file": _t_hpcc_flow_file, "collective": _t_collective,
                 "workload": _t_workload}


def add_traffic(sim, entries, seed, base_dir=".", key="traffic", memory=None):
    """Add every traffic entry of a scenario to `sim` (each seeded by (seed, index)).

    `memory` (a `MemoryLimit`) refuses an entry whose predicted flow count would not fit,
    before generating it (flow lists, incasts, permutations, cdf and repeated-incast
    traffic from load x rate x duration / mean size, collectives by `collective_flows`)."""
    if not isinstance(entries, list) or not entries:
        raise ScenarioError(key, "expected a non-empty list of traffic entries")
    if memory is None:
        memory = MemoryLimit()
        t = sim.topology
        memory.shape = (t.n_hosts, t.n_switches, t.n_links)
    for i, d in enumerate(entries):
        k = f"{key}[{i}]"
        _mapping(d, k)
        kind = _kind(d, k, TRAFFIC_KINDS, "traffic kind")
        rng = np.random.default_rng([seed, i])
        try:
            TRAFFIC_KINDS[kind](sim, d, k, rng, base_dir, i, memory)
        except ScenarioError as e:
            raise _rekey(k, e) from None


# --- the whole scenario ---------------------------------------------------------------------

OUTPUT = {"flows_format": ("csv", "parquet"), "hpcc_fct": (False, True), "plot": (True, False)}


def _output(d, key="output", n_ports=0) -> dict:
    d = {} if d is None else d
    _keys(d, key, (), tuple(OUTPUT) + ("sample_interval", "queue_ports"))
    out = {"sample_interval": None, "queue_ports": None}
    if d.get("sample_interval") is not None:
        out["sample_interval"] = parse_time(d["sample_interval"], f"{key}.sample_interval")
        if out["sample_interval"] <= 0:
            raise ScenarioError(f"{key}.sample_interval", "must be positive")
    qp = d.get("queue_ports", "all")
    if qp != "all":
        if (not isinstance(qp, list) or not qp
                or not all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < n_ports for p in qp)):
            raise ScenarioError(f"{key}.queue_ports", f"expected 'all' or a list of port ids 0..{n_ports - 1} "
                                                      "(ports.csv lists them)")
        out["queue_ports"] = qp
    for name, options in OUTPUT.items():
        v = d.get(name, options[0])
        if v not in options or type(v) is not type(options[0]):
            raise ScenarioError(f"{key}.{name}", f"must be one of {', '.join(map(str, options))}; got {v!r}")
        out[name] = v
    if out["flows_format"] == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ScenarioError(f"{key}.flows_format", "'parquet' needs pyarrow (pip install 'rocesim[parquet]'); "
                                                   "or use csv")
    return out


def _limits(d, key="limits") -> MemoryLimit:
    """`limits: {memory: 32GB}`: the most memory the topology and traffic may need
    (default: 75% of the machine's physical memory)."""
    if d is None:
        return MemoryLimit()
    _keys(d, key, (), ("memory",))
    if d.get("memory") is None:
        return MemoryLimit()
    limit = parse_size(d["memory"], f"{key}.memory")
    if limit <= 0:
        raise ScenarioError(f"{key}.memory", f"must be positive, got {_show(d['memory'])}")
    return MemoryLimit(limit, configured=True)


def build(raw: dict, base_dir=".") -> Scenario:
    """Check a scenario mapping and build its Simulation (nothing runs yet)."""
    _mapping(raw, "scenario")
    check_depth(raw)
    _keys(raw, "", ("topology", "traffic"), TOP_KEYS)
    seed = raw.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ScenarioError("seed", f"expected a non-negative integer, got {_show(seed)}")
    if seed >= 2**63:
        raise ScenarioError("seed", f"must be below 2**63, got {_show(seed)}")
    stop = parse_time(raw["stop"], "stop") if raw.get("stop") is not None else None
    memory = _limits(raw.get("limits"))
    topo = build_platform(raw["topology"], base_dir, memory=memory)
    cc = raw.get("cc", {"scheme": "none"})
    _keys(cc, "cc", ("scheme",), ("params",))
    if not isinstance(cc["scheme"], str):
        raise ScenarioError("cc.scheme", f"expected a scheme name, got {_show(cc['scheme'])}")
    sim = Simulation(topo, switch=raw.get("switch"), nic=raw.get("nic"), cc=cc["scheme"],
                     cc_params=cc.get("params"), routes=raw.get("routes"), seed=seed,
                     deadlock=raw.get("deadlock"), memory_limit=memory)
    add_traffic(sim, raw["traffic"], seed, base_dir, memory=memory)
    faults = raw.get("faults") or []
    if not isinstance(faults, list):
        raise ScenarioError("faults", "expected a list of {kind, at, ...}")
    for i, f in enumerate(faults):
        if not isinstance(f, dict):
            raise ScenarioError(f"faults[{i}]", f"expected a mapping with kind and at, got {f!r}")
        sim.add_fault(**{str(k): v for k, v in f.items()})
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise ScenarioError("name", f"expected a string, got {_show(name)}")
    output = _output(raw.get("output"), n_ports=len(sim.ports.node))
    return Scenario(sim=sim, stop=stop, output=output, name=name, raw=raw)


def parse_yaml(text: str, where: str):
    """`text` parsed as YAML (safe), with every parser failure as one ScenarioError keyed
    `where`: syntax errors, nesting too deep for the parser, impossible dates, integers
    too long to read."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ScenarioError(where, f"not valid YAML: {e}") from None
    except RecursionError:
        raise ScenarioError(where, f"nested too deeply to read (a scenario may nest at most "
                                   f"{MAX_DEPTH} levels)") from None
    except (ValueError, OverflowError) as e:      # e.g. a date 2024-13-45, a 5000-digit int
        raise ScenarioError(where, f"not valid YAML: {e}") from None


def load(path, overrides=()) -> Scenario:
    """Read, override (`key.path=value` strings, values in YAML syntax), check and build."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ScenarioError(str(path), "no such scenario file") from None
    except OSError as e:
        raise ScenarioError(str(path), f"cannot read the scenario file: {e.strerror or e}") from None
    raw = parse_yaml(decode_utf8(str(path), data), str(path))
    if not isinstance(raw, dict):
        raise ScenarioError(str(path), "a scenario file must hold a mapping (seed:, topology:, traffic:, ...)")
    check_depth(raw)
    raw = apply_overrides(raw, overrides)
    return build(raw, os.path.dirname(os.path.abspath(path)))


_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def apply_overrides(raw: dict, overrides) -> dict:
    """A copy of `raw` with each `a.b[2].c=value` applied (value parsed as YAML)."""
    check_depth(raw)
    raw = copy.deepcopy(raw)
    for item in overrides:
        if not isinstance(item, str):
            raise ScenarioError("--set", f"expected key.path=value, got {_show(item)}")
        if "=" not in item:
            raise ScenarioError(f"--set {item}", "expected key.path=value")
        path, text = item.split("=", 1)
        steps = []
        for part in path.split("."):
            m = _STEP.fullmatch(part)
            if not m:
                raise ScenarioError(f"--set {path}", f"cannot read key path part {part!r}")
            steps.append(m.group(1))
            steps += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
        node = raw
        for s in steps[:-1]:
            if isinstance(s, int):
                if not isinstance(node, list) or s >= len(node):
                    raise ScenarioError(f"--set {path}", f"index [{s}] does not exist")
                node = node[s]
            else:
                if not isinstance(node, dict):
                    raise ScenarioError(f"--set {path}", f"{s!r} is not inside a mapping")
                if node.get(s) is None:         # missing, or an empty `key:` in the file
                    node[s] = {}
                node = node[s]
        last = steps[-1]
        try:
            value = parse_yaml(text, f"--set {path}")
        except ScenarioError as e:
            raise ScenarioError(e.key, f"the value {_show(text)} is {e.reason}") from None
        if isinstance(last, int):
            if not isinstance(node, list) or last >= len(node):
                raise ScenarioError(f"--set {path}", f"index [{last}] does not exist")
        elif not isinstance(node, dict):
            raise ScenarioError(f"--set {path}", "the parent is not a mapping")
        node[last] = value
    return raw
