"""SimAI topology files as a `Platform` of multi-GPU servers.

The format is what SimAI's generator writes (github aliyun/SimAI,
astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py) and its ns-3 frontend reads
(astra-sim/network_frontend/ns3/common.h `SetupNetwork`):

* line 1: ``nodes gpus_per_server nvswitches switches links gpu_type``;
* then the ids of the ``nvswitches`` NVSwitches followed by those of the ``switches``
  network switches (the generator writes them on one line, NVSwitches first);
* then ``links`` lines ``a b rate delay error_rate`` (e.g. ``0 72 400Gbps 0.0005ms 0``).

Nodes that are not switches are GPUs; GPU ``g`` (in increasing id) is on server
``g // gpus_per_server`` and is linked to each of its server's NVSwitches (the
NVSwitches are listed server by server, ``nvswitches / servers`` each) and to one
network switch (its NIC's port).

rocesim's platform: every GPU is a rank with its own NIC (a host of the topology, in
GPU order), the network switches keep their order (hosts first, then the switches in
increasing id), links keep the file's order without the NVLinks; the NVLinks become the
server's scale-up domain (``switch`` kind): each GPU's rate is the sum of its NVLink
rates and a GPU-to-GPU hop crosses two NVLinks (GPU -> NVSwitch -> GPU), so its latency
is twice an NVLink's delay. For a file of SimAI's ``Spectrum-X``/``Rail_Opti_SingleToR``
template this is, node for node, the ``rail_optimized`` platform with the same NIC and
NVLink rates. The GPU type is kept as a note (SimAI uses it only for NVLS and its
analytical bandwidth tables). Dual-ToR files (a NIC with two ports) are refused: rocesim
NICs have one port. Every error is one `ScenarioError` keyed ``file:line``.
"""
from __future__ import annotations

import os

import numpy as np

from rocesim._textfile import declared_records, end_of_file_error, read_lines
from rocesim.errors import ScenarioError
from rocesim.network import topology as topo_mod
from rocesim.network.platform import Platform, ScaleUp

__all__ = ["read_simai_topology", "HEADER_LAYOUT"]

HEADER_LAYOUT = "nodes gpus_per_server nvswitches switches links gpu_type"


def read_simai_topology(path, memory=None, key="topology.path") -> Platform:
    """The platform of SimAI topology file `path`; `memory` (a `MemoryLimit`) may refuse
    its size once line 1 is read."""
    name = os.fspath(path)
    lines = read_lines(name)
    if not lines:
        raise ScenarioError(f"{name}:1", f"empty file: line 1 must be '{HEADER_LAYOUT}'")
    head = lines[0]
    head.expect_fields(6, HEADER_LAYOUT)
    nodes, G, n_nv, n_sw, n_links = (head.int_field(i, f) for i, f in enumerate(HEADER_LAYOUT.split()[:5]))
    gpus = nodes - n_nv - n_sw
    if min(G, n_sw, n_links) < 1 or n_nv < 0 or gpus < 1:
        raise head.error(f"{HEADER_LAYOUT.rsplit(' ', 1)[0]} = {nodes} {G} {n_nv} {n_sw} {n_links}: expected at least "
                         "one GPU per server, one network switch, one link, and more nodes than switches")
    if gpus % G:
        raise head.error(f"the {gpus} GPUs (nodes {nodes} - {n_nv} NVSwitches - {n_sw} switches) do not make "
                         f"servers of {G}")
    servers = gpus // G
    if G > 1 and (n_nv < servers or n_nv % servers):
        raise head.error(f"{n_nv} NVSwitches for {servers} servers of {G} GPUs: expected a positive multiple of "
                         f"{servers} (each server's GPUs link to its own NVSwitches)")
    if memory is not None:
        memory.topology(key, "simai_file topology", gpus, n_sw, n_links)
    if len(lines) < 2:
        raise end_of_file_error(name, lines, f"line 2 must list the {n_nv + n_sw} switch ids (NVSwitches first)")
    ids = topo_mod._read_switch_ids(lines[1], nodes, n_nv + n_sw)
    kind = np.zeros(nodes, np.int8)                            # 0 GPU, 1 switch, 2 NVSwitch
    kind[ids[:n_nv]] = 2
    kind[ids[n_nv:]] = 1
    gpu_ids, sw_ids = np.flatnonzero(kind == 0), np.flatnonzero(kind == 1)
    node_of = np.full(nodes, -1, np.int64)
    node_of[gpu_ids] = np.arange(gpus)
    node_of[sw_ids] = gpus + np.arange(n_sw)
    nv_server = np.full(nodes, -1, np.int64)                   # NVSwitch -> its server
    nv_server[ids[:n_nv]] = np.arange(n_nv) // max(1, n_nv // servers)
    body = declared_records(name, lines, 2, n_links, "links")
    topo = topo_mod.Topology(gpus, name=os.path.splitext(os.path.basename(name))[0])
    topo.add_switches(n_sw)
    nvlink_bps = np.zeros(gpus, np.int64)
    nvlinks = np.zeros(gpus, np.int64)
    nic_links = np.zeros(gpus, np.int64)
    nv_delays = set()
    for line in body:
        a, b, rate, delay = topo_mod._read_link(line, nodes)
        ka, kb = sorted((int(kind[a]), int(kind[b])))
        if 2 in (ka, kb):
            gpu, nv = (a, b) if kind[a] == 0 else (b, a)
            if (ka, kb) != (0, 2):
                raise line.error(f"an NVSwitch links to GPUs only; got nodes {a} and {b}")
            g = int(node_of[gpu])
            if nv_server[nv] != g // G:
                raise line.error(f"GPU {gpu} (server {g // G}) links to NVSwitch {nv} of server {nv_server[nv]}; "
                                 f"NVSwitches are listed server by server, {n_nv // servers} each")
            nvlink_bps[g] += rate
            nvlinks[g] += 1
            nv_delays.add(delay)
            continue
        if (ka, kb) == (0, 0):
            raise line.error(f"GPUs {a} and {b} are linked directly; a GPU links to NVSwitches and one switch")
        if ka == 0:
            g = int(node_of[a if kind[a] == 0 else b])
            nic_links[g] += 1
            if nic_links[g] > 1:
                raise line.error(f"GPU {gpu_ids[g]} has a second network link; rocesim's NICs have one port "
                                 "(dual-ToR topologies are not supported)")
        try:
            topo.add_link(int(node_of[a]), int(node_of[b]), rate, delay)
        except ScenarioError as exc:
            raise line.error(exc.reason) from None
    per_server = n_nv // servers if servers else 0
    short = np.flatnonzero(nvlinks != per_server) if G > 1 else np.zeros(0, np.int64)
    if short.size:
        raise ScenarioError(f"{name}:{head.number}", f"GPU {gpu_ids[short[0]]} has {nvlinks[short[0]]} NVLinks; "
                                                     f"each GPU links to its server's {per_server} NVSwitches")
    if len(nv_delays) > 1 or len(set(nvlink_bps.tolist())) > 1:
        raise ScenarioError(f"{name}:{head.number}", "NVLinks of different rates or delays per GPU: rocesim's "
                                                     "scale-up domain has one rate and one latency")
    try:
        topo.validate()
    except ScenarioError as exc:
        raise ScenarioError(name, exc.reason) from None
    scale_up = ScaleUp(int(nvlink_bps[0]), 2 * nv_delays.pop(), "switch") if G > 1 else None
    return Platform(topo, servers, G, G, scale_up, "simai_file", pods=_pods(topo, servers, G),
                    uplink_share=_uplink_share(topo),
                    notes={"NVSwitches": n_nv, "network switches": n_sw, "gpu type": head.fields[5]})


def _leaf_of_host(topo) -> np.ndarray:
    return np.array([topo.neighbors(h)[0] for h in range(topo.n_hosts)], np.int64)


def _pods(topo, servers: int, G: int) -> int:
    """Servers that share their first leaf make a pod (rail_optimized's `servers_per_pod`)."""
    leaf = _leaf_of_host(topo)
    per_leaf = np.unique(np.arange(topo.n_hosts)[leaf == leaf[0]] // G).size
    return max(1, servers // per_leaf)


def _uplink_share(topo) -> float:
    """Of its NICs' rate, what the first leaf can send to the switches above (<= 1)."""
    leaf = int(_leaf_of_host(topo)[0])
    down = up = 0
    for a, b, r in zip(topo.link_a, topo.link_b, topo.rate_ab):
        if leaf in (a, b):
            other = b if a == leaf else a
            if other < topo.n_hosts:
                down += int(r)
            else:
                up += int(r)
    return min(1.0, up / down) if down else 1.0
