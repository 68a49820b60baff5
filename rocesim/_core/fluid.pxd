# cython: language_level=3
"""The flow-level network's state (fluid.pyx): Sim.fluid points to a `Fluid` in flow mode."""
from libc.stdint cimport int64_t, int32_t, uint8_t
from rocesim._core.defs cimport Sim

cdef struct FluidSlot:     # a data flow in the fluid (between joining and its last byte leaving)
    int32_t flow           # NIL while the slot is free
    int32_t next_free
    int32_t n_fwd          # its links: Fluid.links[slot * SLOT_LINKS ..]: n_fwd forward, then reverse
    int32_t n_links
    int32_t stamp          # the solve that last visited it
    int32_t frozen         # its rate is fixed in the solve under way
    double rate            # wire bits/s in force since t_last
    double new_rate        # the solve's result
    double remaining       # wire bytes still to send at t_last
    double ack_coef        # load on each reverse link per unit of rate (its ACKs)
    double cap             # its rate limit (bits/s), 0: none
    double own             # during a solve: the least of its limit and what its links no other flow uses offer
    int64_t t_last
    int64_t sent_at        # when its last byte leaves at `rate` (the pending FL_SENT), or NIL
    int64_t lat_fwd        # the last byte, from its NIC to the receiver (ps)
    int64_t lat_ack        # the last ACK back to the sender (ps)

cdef struct LinkSet:       # the fluid flows on one port (one direction of a link)
    int32_t* ent           # entries: slot * SLOT_LINKS + k (the slot's k-th link is this port)
    int64_t n
    int64_t cap
    int32_t stamp          # the solve that last visited it
    int32_t unfrozen       # during a solve: its flows not yet frozen
    double capacity        # bits/s: the port's rate
    double rem             # during a solve: capacity left by the frozen flows
    double load            # during a solve: the unfrozen flows' loads per unit of rate
    double load0           # during a solve: every flow's load per unit of rate
    double data0           # during a solve: its data flows' load per unit of rate (their number)
    uint8_t meets          # during a solve: data flows from two or more links meet here
    uint8_t bound          # during a solve: it froze flows (it is a bottleneck)

cdef struct HeapItem:
    double key
    int32_t id             # a port, or -1 - slot for a flow's rate limit

cdef struct Fluid:
    FluidSlot* slots
    int32_t* links         # SLOT_LINKS per slot
    int32_t* pos           # SLOT_LINKS per slot: where the entry sits in its link's `ent`
    int32_t n_slots
    int32_t cap_slots
    int32_t free_slot
    int32_t* slot_of       # per flow: its slot, or NIL
    LinkSet* ls            # per port
    int32_t stamp
    int32_t* dirty         # ports whose flows changed since the last solve
    uint8_t* is_dirty
    int32_t n_dirty
    int32_t* queue         # a solve's ports (at most one entry per port)
    int32_t* comp          # a solve's slots
    int64_t cap_comp
    int32_t unfrozen       # during a solve: its flows not yet frozen
    HeapItem* heap
    int64_t n_heap
    int64_t cap_heap
    int64_t solve_at       # time of the pending FL_SOLVE, or NIL
    double share
    int64_t startup

cdef int fluid_init(Sim* s, double share, int64_t startup_ps) noexcept
cdef void fluid_free(Sim* s) noexcept
cdef int fluid_loop(Sim* s, int64_t until, int64_t max_events) noexcept
