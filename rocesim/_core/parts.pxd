# cython: language_level=3
"""A run in parts (issue 20): the part that owns a node or a port.

Each node's state is written only by its part (docs/parallel_core.md, 1.2): a port's
queues are in its part's pool, its transmitter's events in its part's queue, its pauses
in its part's timeline.  What acts on a node from outside its own events (a fault's half,
the PFC watchdog, the deadlock detector's walk of the queues: faults.pyx, monitors.pyx)
takes that node's part as its `Sim`.  With one part (`node_part` NULL) it is `s` itself.
"""
from libc.stdint cimport int32_t
from rocesim._core.defs cimport Sim, World


cdef inline Sim* node_sim(Sim* s, int32_t node) noexcept nogil:
    """The part that owns `node` (a host id is its node id)."""
    cdef World* w = s.w
    if w.node_part == NULL:
        return s
    return w.parts[w.node_part[node]]


cdef inline Sim* port_sim(Sim* s, int32_t port) noexcept nogil:
    """The part that owns `port`: its node's."""
    return node_sim(s, s.w.ports[port].node)
