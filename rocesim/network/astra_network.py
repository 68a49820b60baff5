"""ASTRA-sim 2.0 network files as rocesim platforms.

An ASTRA-sim 2.0 network file describes a multi-dimensional platform, one entry per
dimension, innermost first::

    topology: [ Switch, Switch ]      # Ring | FullyConnected | Switch
    npus_count: [ 8, 16 ]             # NPUs along each dimension (product: all NPUs)
    bandwidth: [ 400.0, 50.0 ]        # GB/s per link
    latency: [ 250.0, 1000.0 ]        # ns per link

rocesim reads it as ASTRA-sim's analytical backend does: a bandwidth of B "GB/s" is
B x 2^30 bytes/s (astra-network-analytical, common/NetworkFunction.cpp `bw_GBps_to_Bpns`:
"1 GB is 2^30 B"), and a latency is one link's, crossed once per link of a route.

* A file of one ``Ring`` or ``FullyConnected`` dimension (ASTRA-sim's Ring_4/8/16npus
  examples) is NPUs wired to each other directly, as AMD's xGMI or Intel Gaudi's on-board
  RoCE ports are: each NPU is a host with its own small switch (its ports), joined to its
  two ring neighbours' (a bidirectional ring, as ASTRA-sim's congestion-aware ``Ring``) or
  to every other NPU's, each link at the file's bandwidth and latency; the host's link to
  its switch carries all of its ports at once (their summed rate, no delay), so a message
  to a neighbour crosses one link of the file.  A route of several hops (a ring's far
  NPUs) is forwarded by the NPUs on the way, packet by packet (ASTRA-sim forwards whole
  messages: a `custom` topology, `direct_topology`).
* Otherwise rocesim simulates the outer dimensions packet by packet as a RoCE fabric and
  the inner one (by default) as the scale-up domain of a server:

  - the first ``scale_up_dims`` dimensions (0 or 1; default 1 when the file has more than
    one dimension) are the server's scale-up domain: ``Switch`` -> ``switch`` at the link's
    rate, ``FullyConnected`` -> ``mesh`` (``G-1`` links per GPU, so ``(G-1) x`` the link's
    rate in total), ``Ring`` -> ``ring`` (two links per GPU: twice the link's rate);
  - the remaining one or two dimensions must be ``Switch``: one of them is ``rail_only``
    (NPU ``i`` of every server on the switch of rail ``i``, as ASTRA-sim's switch
    dimension joins same-index NPUs), two are ``rail_optimized`` with one pod per index of
    the outer dimension (its bandwidth and latency on the leaf-spine links, spines for 1:1).

`to_topology` returns the equivalent ``topology:`` mapping, so everything the scenario
loader checks for a hand-written platform is checked for an imported one.
"""
from __future__ import annotations

import math

from rocesim.errors import ScenarioError

__all__ = ["DIMENSION_KINDS", "DIRECT_KINDS", "GB", "to_topology", "direct_topology"]

GB = 2**30                        # bytes in ASTRA-sim's "GB" of a bandwidth (per second)

# ASTRA-sim's name of a dimension's topology -> rocesim's scale-up kind, and the links per GPU
DIMENSION_KINDS = {"Switch": ("switch", lambda g: 1), "FullyConnected": ("mesh", lambda g: g - 1),
                   "Ring": ("ring", lambda g: 2)}
# a dimension of NPUs wired to each other -> the NPUs each one links to, of n
DIRECT_KINDS = {"Ring": lambda i, n: sorted({(i - 1) % n, (i + 1) % n} - {i}),
                "FullyConnected": lambda i, n: [j for j in range(n) if j != i]}
_FIELDS = ("topology", "npus_count", "bandwidth", "latency")


def _dims(network, where) -> list[tuple[str, int, float, float]]:
    """[(kind, npus, GB/s, ns)] per dimension, each field checked."""
    if not isinstance(network, dict):
        raise ScenarioError(where, "an ASTRA-sim network file holds a mapping (topology, npus_count, "
                                   "bandwidth, latency)")
    for k in network:
        if k not in _FIELDS:
            raise ScenarioError(f"{where}: {k}", f"unknown key; an ASTRA-sim 2.0 network file has "
                                                 f"{', '.join(_FIELDS)}")
    lists = []
    for k in _FIELDS:
        v = network.get(k)
        if not isinstance(v, list) or not v:
            raise ScenarioError(f"{where}: {k}", f"missing or not a non-empty list (one entry per dimension), "
                                                 f"got {v!r}")
        lists.append(v)
    if len({len(v) for v in lists}) != 1:
        raise ScenarioError(where, "topology, npus_count, bandwidth and latency need one entry per dimension "
                                   f"each, got {', '.join(f'{k}: {len(v)}' for k, v in zip(_FIELDS, lists))}")
    dims = []
    for i, (kind, npus, gbs, ns) in enumerate(zip(*lists)):
        if kind not in DIMENSION_KINDS:
            raise ScenarioError(f"{where}: topology[{i}]", f"unknown {kind!r}; valid: {', '.join(DIMENSION_KINDS)}")
        if isinstance(npus, bool) or not isinstance(npus, int) or npus < 1:
            raise ScenarioError(f"{where}: npus_count[{i}]", f"expected a positive integer, got {npus!r}")
        for name, v, lo in (("bandwidth", gbs, 0.0), ("latency", ns, -1.0)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= lo:
                raise ScenarioError(f"{where}: {name}[{i}]", f"expected a {'positive' if lo == 0 else 'non-negative'}"
                                                            f" number, got {v!r}")
        dims.append((kind, npus, float(gbs), float(ns)))
    return dims


def _link(gbs: float, ns: float) -> dict:
    """A link of `gbs` ASTRA-sim GB/s (2^30 B/s) and `ns` ns, in a topology mapping's words."""
    return {"rate": f"{round(gbs * GB * 8)}bps", "delay": f"{ns:g}ns"}


def direct_topology(kind: str, npus: int, gbs: float, ns: float) -> dict:
    """The `custom` topology mapping of `npus` NPUs wired to each other as ASTRA-sim's `kind`
    (Ring or FullyConnected) dimension: host i (the NPU) on switch npus+i (its ports), its
    switch linked to each neighbour's at `gbs` GB/s (2^30 B/s) and `ns` ns."""
    neighbours = DIRECT_KINDS[kind]
    ports = {i: neighbours(i, npus) for i in range(npus)}
    link = _link(gbs, ns)
    links = [{"a": i, "b": npus + i, **_link(gbs * max(len(ports[i]), 1), 0)} for i in range(npus)]
    links += [{"a": npus + i, "b": npus + j, **link} for i in range(npus) for j in ports[i] if i < j]
    return {"kind": "custom", "hosts": npus, "switches": npus, "links": links}


def to_topology(network, where: str, scale_up_dims: int | None = None) -> dict:
    """The rocesim ``topology:`` mapping of the parsed ASTRA-sim 2.0 network file
    ``network`` (``where`` names the file in errors)."""
    dims = _dims(network, where)
    if len(dims) == 1 and dims[0][0] in DIRECT_KINDS and not scale_up_dims:
        kind, npus, gbs, ns = dims[0]
        if npus < 2:
            raise ScenarioError(f"{where}: npus_count[0]", f"a {kind} of NPUs needs at least 2, got {npus}")
        return direct_topology(kind, npus, gbs, ns)
    if scale_up_dims is None:
        scale_up_dims = 1 if len(dims) > 1 else 0
    if scale_up_dims not in (0, 1) or scale_up_dims >= len(dims):
        raise ScenarioError("scale_up_dims", f"expected 0 or 1 and fewer than the file's {len(dims)} "
                                             f"dimension(s), got {scale_up_dims!r}")
    fabric = dims[scale_up_dims:]
    if len(fabric) > 2:
        raise ScenarioError(f"{where}: topology", f"{len(fabric)} fabric dimensions after the scale-up domain; "
                                                  "rocesim builds one (rail_only) or two (rail_optimized)")
    for i, (kind, *_rest) in enumerate(fabric, start=scale_up_dims):
        if kind != "Switch":
            raise ScenarioError(f"{where}: topology[{i}]", f"{kind} as a fabric dimension beside others: rocesim "
                                                           f"wires a {kind} of NPUs directly when it is the "
                                                           "file's only dimension, and as a server's scale-up "
                                                           "domain when it is the first; the fabric dimensions "
                                                           "after it must be switches (Switch)")
    if scale_up_dims:
        kind, gpus, gbs, ns = dims[0]
        name, links = DIMENSION_KINDS[kind]
        out = {"gpus_per_server": gpus, "scale_up": {**_link(gbs * links(gpus), ns), "kind": name}}
    else:
        out = {"gpus_per_server": 1}
    (_, servers, gbs, ns) = fabric[0]
    out["nic_link"] = _link(gbs, ns)
    if len(fabric) == 1:
        out = {"kind": "rail_only", "servers": servers, **out}
    else:
        (_, pods, gbs2, ns2) = fabric[1]
        out = {"kind": "rail_optimized", "servers": servers * pods, "servers_per_pod": servers,
               **out, "fabric_link": _link(gbs2, ns2)}
    if "scale_up" not in out:          # one GPU per server: no scale-up domain to describe
        out["scale_up"] = None
    return out
