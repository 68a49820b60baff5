"""The scenario's `topology:`: each kind declared (its keys, their types, defaults and
meanings), then built into a `rocesim.network.platform.Platform` once its memory estimate
fits the limit.

A plain topology has one rank per host; `rail_optimized`, `rail_only`, `astra_sim`, `simai_file`, and
`leaf_spine`/`fat_tree`/`clos3` with `gpus_per_server` make multi-GPU servers.
"""
from __future__ import annotations

import os

from rocesim.errors import ScenarioError
from rocesim.memory import MemoryLimit
from rocesim.network import platform as pf
from rocesim.network import topology as topo_mod
from rocesim.network.astra_network import to_topology
from rocesim.network.simai_topology import read_simai_topology
from rocesim.settings import (REQUIRED, Boolean, Choice, Custom, Integer, Kinds, Number, Path, Rate, Section, Setting, Time,
                              keys_of, resolve_path, show)
from rocesim._textfile import read_text
from rocesim.scenario.yaml_file import parse_yaml

LINK = Section("{rate, delay}: a link's rate and one-way propagation delay",
               rate=Setting(Rate(), REQUIRED, "the link's rate"),
               delay=Setting(Time(), REQUIRED, "its one-way propagation delay"))
SCALE_UP = Section("{rate, delay, kind}: a server's scale-up domain (NVLink/NVSwitch)",
                   rate=Setting(Rate(), REQUIRED, "each GPU's rate per direction"),
                   delay=Setting(Time(), REQUIRED, "the latency of one hop"),
                   kind=Setting(Choice(*pf.SCALE_UP_KINDS), "switch",
                                "switch (NVSwitch), mesh (rate / (G-1) per pair) or ring (rate / 2 per link)"),
                   nvls=Setting(Boolean(), False, "the switch reduces and multicasts (NVLink SHARP, H100's "
                                                  "NVSwitch and later): NCCL's NVLS algorithms (nccl_nvls, "
                                                  "nccl_nvls_tree), which auto picks as NCCL does"))


def _links():
    return dict(link=Setting(LINK, None, "every link (or host_link and fabric_link, each overriding it)"),
                host_link=Setting(LINK, None, "links between hosts and their switch"),
                fabric_link=Setting(LINK, None, "links between switches (default: link, else host_link)"))


def _servers():
    return dict(gpus_per_server=Setting(Integer(1), None, "make servers of consecutive hosts with this many GPUs"),
                nics_per_server=Setting(Integer(1), None, "NICs per server (default: one per GPU; a divisor of "
                                                          "gpus_per_server shares NICs)"),
                scale_up=Setting(SCALE_UP, None, "the servers' scale-up domain"))


def _count(doc, lo=1):
    return Setting(Integer(lo), REQUIRED, doc)


def _rails():
    return dict(servers=_count("servers"), gpus_per_server=_count("GPUs per server (the ranks)"),
                nic_link=Setting(LINK, REQUIRED, "each NIC's link to its rail's leaf"),
                scale_up=Setting(SCALE_UP, None, "the servers' scale-up domain (with more than one GPU "
                                                 "per server)"),
                nics_per_server=Setting(Integer(1), None, "NICs per server (default: one per GPU)"))


TOPOLOGY = Kinds(
    "topology",
    "the network: hosts 0..H-1, then switches",
    star=Section("hosts on one switch", hosts=_count("hosts", 2), link=Setting(LINK, REQUIRED, "every link")),
    dumbbell=Section("two switches joined by one bottleneck link",
                     hosts_left=_count("hosts on the left switch"), hosts_right=_count("hosts on the right switch"),
                     link=Setting(LINK, REQUIRED, "host links"),
                     bottleneck=Setting(LINK, None, "the link between the switches (default: link)")),
    leaf_spine=Section("a two-tier leaf-spine fabric",
                       leaves=_count("leaf switches"), spines=_count("spine switches"),
                       hosts_per_leaf=_count("hosts under each leaf"), **_links(),
                       links_per_spine=Setting(Integer(1), 1, "parallel links from each leaf to each spine"),
                       **_servers()),
    fat_tree=Section("the k-ary three-tier fat tree (k even): k^3/4 hosts",
                     k=_count("switch radix (even)", 2), **_links(), **_servers()),
    clos3=Section("a three-tier Clos: ToRs and Aggs in pods, Cores on top",
                  tors=_count("ToR switches in all"), aggs_per_pod=_count("Agg switches per pod"),
                  tors_per_pod=_count("ToRs per pod (divides tors)"),
                  cores=_count("Core switches (a multiple of aggs_per_pod)"),
                  hosts_per_tor=_count("hosts under each ToR"), **_links(), **_servers()),
    hpcc_320=Section("the HPCC paper's 320-host three-tier Clos, node for node"),
    hpcc_file=Section("a topology file in the HPCC ns-3 format",
                      path=Setting(Path(), REQUIRED, "the file")),
    custom=Section("any graph of hosts and switches",
                   hosts=_count("hosts (nodes 0..hosts-1)"), switches=_count("switches (the next node ids)"),
                   links=Setting(Custom("a non-empty list of [a, b] (taking `link`) or {a, b, rate, delay}"),
                                 REQUIRED, "the links"),
                   link=Setting(LINK, None, "the rate and delay of links given as [a, b]")),
    rail_optimized=Section("rail-optimized servers: NIC n of every server of a pod on the pod's leaf of rail n, "
                           "every leaf linked to every spine",
                           **_rails(),
                           servers_per_pod=Setting(Integer(1), None, "servers per pod (default: one pod)"),
                           spines=Setting(Integer(1), None, "spine switches (or oversubscription)"),
                           oversubscription=Setting(Number(0.0), None, "leaf down:up capacity, which sets the spines "
                                                                        "(default 1)"),
                           fabric_link=Setting(LINK, None, "leaf-spine links (default: nic_link)"),
                           pods_per_block=Setting(Integer(1), None, "three tiers: pods under one set of spines "
                                                                      "(`spines` per block; default: two tiers)"),
                           cores=Setting(Integer(1), None, "three tiers: core switches, one plane of cores / spines "
                                                             "per spine index (default: 1:1 above the spines)")),
    rail_only=Section("rail-only servers: one switch per rail, no spine (Wang et al. 2023)", **_rails()),
    astra_sim=Section("an ASTRA-sim 2.0 network file (bandwidths in GB/s of 2^30 bytes, as ASTRA-sim reads them) "
                      "as a rail_only or rail_optimized platform, or a Ring or FullyConnected of NPUs wired "
                      "directly",
                      path=Setting(Path(), REQUIRED, "the network file (topology, npus_count, bandwidth, latency)"),
                      scale_up_dims=Setting(Integer(0), None, "dimensions that form the server (default 1; "
                                                              "0: every dimension is fabric)")),
    simai_file=Section("a SimAI topology file (gen_Topo_Template.py's format): GPUs with their own NICs, "
                       "NVSwitches as the servers' scale-up domain",
                       path=Setting(Path(), REQUIRED, "the file")),
)

SERVER_KEYS = tuple(_servers())
MULTI_GPU = ("leaf_spine", "fat_tree", "clos3")


def build_platform(d, base_dir=".", key="topology", memory=None):
    """A `Platform` from the scenario's `topology:` mapping (checked against `TOPOLOGY`),
    refused before it is built when its memory estimate exceeds `memory` (a `MemoryLimit`,
    default 75% of the machine's)."""
    memory = MemoryLimit() if memory is None else memory
    kind, v = TOPOLOGY.resolve(d, key)
    try:
        if kind in _PLATFORMS:
            return _PLATFORMS[kind](v, key, memory)
        if kind == "astra_sim":
            return _astra_sim(v, key, memory, base_dir)
        if kind == "simai_file":
            return read_simai_topology(resolve_path(base_dir, v["path"], f"{key}.path"), memory, f"{key}.path")
        topo = _BUILDERS[kind](v, key, memory, base_dir)
        if memory.shape == (0, 0, 0):        # read from a file: checked once it is known
            memory.topology(f"{key}.path" if "path" in v else key, f"{kind} topology",
                            topo.n_hosts, topo.n_switches, topo.n_links)
        server = {k: v[k] for k in SERVER_KEYS if v.get(k) is not None}
        if not server:
            return pf.Platform.hosts(topo)
        if "gpus_per_server" not in server:
            raise ScenarioError(f"{key}.gpus_per_server", "missing: servers with nics_per_server or scale_up "
                                                          "need gpus_per_server")
        return pf.on_topology(topo, server["gpus_per_server"], _scale_up(server.get("scale_up")),
                              nics_per_server=server.get("nics_per_server"), kind=kind)
    except ScenarioError as e:
        raise rekey(key, e) from None


def build_topology(d, base_dir=".", key="topology", memory=None):
    """The `Topology` of `build_platform` (the NICs of a platform's servers are its hosts)."""
    return build_platform(d, base_dir, key, memory).topology


def rekey(prefix: str, e: ScenarioError) -> ScenarioError:
    """Put an error from a library call under the scenario's key path."""
    if e.key.startswith(prefix) or ":" in e.key or os.sep in e.key:   # already a path or file:line
        return e
    return ScenarioError(f"{prefix}.{e.key}" if e.key else prefix, e.reason)


def _scale_up(v):
    return None if v is None else pf.ScaleUp(v["rate"], v["delay"], v["kind"], v["nvls"])


def _host_fabric(v, key):
    """(host link, fabric link) as (rate, delay) from `link`, `host_link`, `fabric_link`."""
    host = v["host_link"] or v["link"]
    fabric = v["fabric_link"] or v["link"] or host
    if host is None:
        raise ScenarioError(f"{key}.link", "missing: give link, or host_link and fabric_link")
    return (host["rate"], host["delay"]), (fabric["rate"], fabric["delay"])


def _rail_shape(v, key, memory, what):
    """Check the memory of `servers` x NICs hosts (about one switch port per NIC above them)."""
    nics = v["nics_per_server"] or v["gpus_per_server"]
    memory.topology(f"{key}.servers", what, v["servers"] * nics, nics, 2 * v["servers"] * nics)


def _rail_optimized(v, key, memory):
    _rail_shape(v, key, memory, "rail_optimized")
    if v["spines"] is not None and v["oversubscription"] is not None:
        raise ScenarioError(f"{key}.spines", "give spines or oversubscription, not both")
    fabric = v["fabric_link"] or {"rate": None, "delay": None}
    return pf.rail_optimized(v["servers"], v["gpus_per_server"], v["nic_link"]["rate"], v["nic_link"]["delay"],
                             _scale_up(v["scale_up"]), nics_per_server=v["nics_per_server"],
                             servers_per_pod=v["servers_per_pod"], spines=v["spines"],
                             oversubscription=v["oversubscription"] or 1.0, fabric_rate=fabric["rate"],
                             fabric_delay=fabric["delay"], pods_per_block=v["pods_per_block"], cores=v["cores"])


def _rail_only(v, key, memory):
    _rail_shape(v, key, memory, "rail_only")
    return pf.rail_only(v["servers"], v["gpus_per_server"], v["nic_link"]["rate"], v["nic_link"]["delay"],
                        _scale_up(v["scale_up"]), nics_per_server=v["nics_per_server"])


def _astra_sim(v, key, memory, base_dir):
    """An ASTRA-sim 2.0 network file as the equivalent rail_only / rail_optimized platform,
    or NPUs wired directly (a custom topology) for a Ring or FullyConnected file
    (rocesim/network/astra_network.py)."""
    path = resolve_path(base_dir, v["path"], f"{key}.path")
    mapping = to_topology(parse_yaml(read_text(path), path), path, v["scale_up_dims"])
    where = f"{key}({os.path.basename(path)})"
    kind, values = TOPOLOGY.resolve(mapping, where)
    if kind == "custom":
        return pf.Platform.hosts(_custom(values, where, memory, base_dir))
    return _PLATFORMS[kind](values, where, memory)


_PLATFORMS = {"rail_optimized": _rail_optimized, "rail_only": _rail_only}


def _star(v, key, memory, base_dir):
    memory.topology(f"{key}.hosts", "star", *topo_mod.shape("star", hosts=v["hosts"]))
    return topo_mod.star(v["hosts"], v["link"]["rate"], v["link"]["delay"])


def _dumbbell(v, key, memory, base_dir):
    link, neck = v["link"], v["bottleneck"] or v["link"]
    memory.topology(key, "dumbbell", *topo_mod.shape("dumbbell", hosts_left=v["hosts_left"],
                                                     hosts_right=v["hosts_right"]))
    return topo_mod.dumbbell(v["hosts_left"], v["hosts_right"], link["rate"], link["delay"],
                             neck["rate"], neck["delay"])


def _leaf_spine(v, key, memory, base_dir):
    (hr, hd), (fr, fd) = _host_fabric(v, key)
    n = {k: v[k] for k in ("leaves", "spines", "hosts_per_leaf", "links_per_spine")}
    memory.topology(key, "leaf_spine", *topo_mod.shape("leaf_spine", **n))
    return topo_mod.leaf_spine(n["leaves"], n["spines"], n["hosts_per_leaf"], hr, hd, fr, fd, n["links_per_spine"])


def _fat_tree(v, key, memory, base_dir):
    k = v["k"]
    if k % 2:
        raise ScenarioError(f"{key}.k", f"a k-ary fat tree needs an even k, got {k}")
    (hr, hd), (fr, fd) = _host_fabric(v, key)
    memory.topology(f"{key}.k", f"fat_tree with k={k}", *topo_mod.shape("fat_tree", k=k))
    return topo_mod.fat_tree(k, hr, hd, fr, fd)


CLOS3_COUNTS = ("tors", "aggs_per_pod", "tors_per_pod", "cores", "hosts_per_tor")


def _clos3(v, key, memory, base_dir):
    (hr, hd), (fr, fd) = _host_fabric(v, key)
    n = {name: v[name] for name in CLOS3_COUNTS}
    memory.topology(key, "clos3", *topo_mod.shape("clos3", **n))
    return topo_mod.clos3(*(n[name] for name in CLOS3_COUNTS), hr, hd, fr, fd)


def _hpcc_320(v, key, memory, base_dir):
    return topo_mod.hpcc_320()


def _hpcc_file(v, key, memory, base_dir):
    return topo_mod.from_hpcc_file(resolve_path(base_dir, v["path"], f"{key}.path"))


def _custom(v, key, memory, base_dir):
    """Any graph: `hosts` (0..H-1), `switches` (H..H+S-1), a default `link`, and `links`,
    each [a, b] or {a, b, rate, delay} (a link of its own)."""
    links = v["links"]
    if not isinstance(links, list) or not links:
        raise ScenarioError(f"{key}.links", "expected a non-empty list of [a, b] or {a, b, rate, delay}")
    memory.topology(key, "custom topology", v["hosts"], v["switches"], len(links))
    t = topo_mod.Topology(v["hosts"])
    t.add_switches(v["switches"])
    default = v["link"]
    for j, ln in enumerate(links):
        lk = f"{key}.links[{j}]"
        if isinstance(ln, dict):
            keys_of(ln, lk, ("a", "b", "rate", "delay"), ("a", "b"))
            a, b = ln["a"], ln["b"]
            for name in ("rate", "delay"):
                if name not in ln and default is None:
                    raise ScenarioError(f"{lk}.{name}", "missing: give it here or a default `link`")
            rate = LINK["rate"].parse(ln["rate"], f"{lk}.rate") if "rate" in ln else default["rate"]
            delay = LINK["delay"].parse(ln["delay"], f"{lk}.delay") if "delay" in ln else default["delay"]
        elif isinstance(ln, list) and len(ln) == 2:
            if default is None:
                raise ScenarioError(f"{key}.link", "missing: links given as [a, b] take this rate and delay")
            (a, b), rate, delay = ln, default["rate"], default["delay"]
        else:
            raise ScenarioError(lk, f"expected [a, b] or {{a, b, rate, delay}}, got {show(ln)}")
        for name, node in (("a", a), ("b", b)):
            if isinstance(node, bool) or not isinstance(node, int):
                raise ScenarioError(f"{lk}.{name}" if isinstance(ln, dict) else lk,
                                    f"expected a node id, got {show(node)}")
        try:
            t.add_link(a, b, rate, delay)
        except ScenarioError as e:
            raise ScenarioError(lk, e.reason) from None
    t.validate()
    return t


_BUILDERS = {"star": _star, "dumbbell": _dumbbell, "leaf_spine": _leaf_spine, "fat_tree": _fat_tree,
             "clos3": _clos3, "hpcc_320": _hpcc_320, "hpcc_file": _hpcc_file, "custom": _custom}
