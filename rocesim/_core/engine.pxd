# cython: language_level=3
"""The C face of `Core` (engine.pyx), for the core's own modules that need it (debug.pyx):
its world, its parts and its window loop's state."""
from libc.stdint cimport int32_t, int64_t, uint64_t
from rocesim._core.defs cimport Sim, World
from rocesim._core.window cimport Windows


cdef class Core:
    cdef World* w           # what every part shares: the network, flows, parameters, scheme
    cdef Sim* s             # part 0 (with one part, the whole run): w.parts[0]
    cdef uint64_t seed
    cdef object _scheme
    cdef Windows win        # with several parts: the window loop's state (window.pyx)

    cdef _add_part(self)
    cdef _alloc_flow_rx(self)
    cdef Sim* _rx_part(self, int32_t f) noexcept
    cdef _cut(self, part_of_node, part_tier, int64_t lookahead, port_node, port_peer, port_delay)
    cdef _init_fluid(self, dict params)
    cdef _init_params(self, dict params)
    cdef _init_network(self, dict net, bint shared_seed)
    cdef _install_routes(self, route_class, int32_t n_classes, route_groups, route_ports)
    cdef _init_flows(self, dict c)


cdef dict _counters(Sim** parts, int32_t n)
