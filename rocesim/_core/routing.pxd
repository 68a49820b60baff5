# cython: language_level=3
"""Next-hop lookup at a switch: explicit per-flow path, else the switch's load-balancing
scheme (data packets) or ECMP over the table.

The table holds, per (switch, destination class), the equal-cost egress ports
(after any per-switch overrides the scenario set); the hosts behind one ToR share a
class, and at that ToR the group is 'direct' (cnt -1): the port towards the host
itself (rocesim.network.routing.RouteTables).  ECMP picks one by a hash of the
flow's 5-tuple mixed with the switch's seed, so a flow keeps one path and two
switches do not make correlated choices (as the HPCC fork hashes with a
per-switch seed).  Data packets of a flow with an explicit path follow it; its
ACKs, NACKs and CNPs use the table (balanced by the switch's scheme, on their reverse hash).
"""
from libc.stdint cimport int32_t, uint16_t, uint32_t, uint64_t
from rocesim._core.defs cimport Sim, World, Switch, RouteGroup, Packet, NIL
from rocesim._core.rng cimport mix64


cdef inline int32_t ecmp_index(uint32_t hash, uint32_t seed, int32_t cnt) noexcept nogil:
    """ECMP's choice among `cnt` equal-cost ports: the 5-tuple's hash mixed with the switch's seed."""
    return <int32_t> (mix64((<uint64_t> hash << 32) ^ seed) % <uint64_t> cnt)


cdef inline uint32_t with_entropy(uint32_t hash, uint16_t entropy) noexcept nogil:
    """The hash a switch uses for a data packet: its 5-tuple's, mixed with the entropy its
    sender put on it (none: the 5-tuple's alone)."""
    if entropy == 0:
        return hash
    return hash ^ <uint32_t> mix64(<uint64_t> entropy)


cdef inline int32_t route_lookup(Sim* s, Switch* sw, int32_t dst, uint32_t flow_hash,
                                 int32_t path_off, int32_t hop, Packet* pk) noexcept nogil:
    """Egress port at switch `sw` towards host `dst`, or NIL if there is none; packet `pk`
    (data or control; NULL for path tracing) goes where the switch's load-balancing scheme
    puts it, path tracing by ECMP."""
    cdef World* w = s.w
    cdef int32_t base, cnt, cls
    if path_off != NIL:
        if path_off + hop >= w.n_path_ports:    # walked off its path (a loop): nowhere to go
            return NIL
        return w.path_ports[path_off + hop]
    cls = w.route_class[dst]
    base = (sw.node - w.n_hosts) * w.n_route_classes + cls
    cdef RouteGroup g = w.route_groups[base]        # offset and count: one cache line
    cnt = g.cnt
    if cnt == 1:
        return w.route_ports[g.off]
    if cnt <= 0:
        return NIL if cnt == 0 else w.route_ports[g.off + dst]
    if pk != NULL and sw.lb_pick != NULL:
        return w.route_ports[g.off + sw.lb_pick(s, sw, g.off, cnt, cls, flow_hash, pk)]
    return w.route_ports[g.off + ecmp_index(flow_hash, sw.seed, cnt)]


cdef inline uint32_t key_hash(uint64_t key) noexcept nogil:
    """ECMP hash of the forward 5-tuple (data packets) a queue pair's `key` stands for."""
    return <uint32_t> mix64((key << 1) | 1)


cdef inline uint32_t key_rhash(uint64_t key) noexcept nogil:
    """ECMP hash of the reverse 5-tuple (ACKs, NACKs and CNPs) of `key`."""
    return <uint32_t> mix64(key << 1)


cdef inline uint32_t flow_hash(World* w, int32_t f) noexcept nogil:
    """ECMP hash of flow f's forward 5-tuple (its data packets): its queue pair's
    (World.flow_hash), or, when each flow is its own queue pair, the hash of its id."""
    if w.flow_hash != NULL:
        return w.flow_hash[f]
    return key_hash(<uint64_t> f)


cdef inline uint32_t flow_rhash(World* w, int32_t f) noexcept nogil:
    """ECMP hash of flow f's reverse 5-tuple (its ACKs, NACKs and CNPs)."""
    if w.flow_rhash != NULL:
        return w.flow_rhash[f]
    return key_rhash(<uint64_t> f)


cdef inline int32_t flow_path_off(Sim* s, int32_t f) noexcept nogil:
    """Flow f's explicit path (offset in World.path_ports), or NIL."""
    cdef World* w = s.w
    return NIL if w.flow_path_off == NULL else w.flow_path_off[f]
