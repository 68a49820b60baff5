# cython: language_level=3
"""The flow-level network's state (fluid.pyx): Sim.fluid points to a `Fluid` in flow mode."""
from libc.stdint cimport int64_t, int32_t, int16_t, uint32_t, uint64_t, uint8_t
from rocesim._core.defs cimport Sim

cdef struct FluidSlot:     # a data flow in the fluid (between joining and its last byte leaving): what
                           #   a solve reads, 64 bytes in a 64-byte aligned array (one cache line)
    int32_t stamp          # the solve that last visited it
    int32_t loc            # during a solve: its index in Fluid.sf
    int16_t n_fwd          # its links: Fluid.links[slot * SLOT_LINKS ..]: n_fwd forward, then reverse
    int16_t n_links
    int16_t own_stale      # one of its links went from one entry to more or back: `own` is out of date
    int16_t split          # its forward links are a set of equal-cost paths, each carrying its share of
                           #   the flow (Fluid.weight), each after Fluid.prev; else one path in order
    uint64_t multi         # bit k: its k-th link carries other entries too (the others limit this flow only)
    double own             # the least of its limit and what its links of one entry offer
    double ack_coef        # load on each reverse link per unit of rate (its ACKs)
    double new_rate        # the last solve's result
    double rate            # wire bits/s in force since t_last
    double remaining       # wire bytes still to send at t_last

cdef struct FluidSlotRest: # the rest of a slot (Fluid.rest, by slot)
    int32_t flow           # NIL while the slot is free
    int32_t next_free
    double cap             # its rate limit (bits/s), 0: none
    int64_t t_last
    int64_t sent_at        # when its last byte leaves at `rate` (the pending FL_SENT), or NIL
    int64_t lat_fwd        # the last byte, from its NIC to the receiver (ps)
    int64_t lat_ack        # the last ACK back to the sender (ps)

cdef struct LinkSet:       # the fluid flows on one port (one direction of a link); 32 bytes, as a
                           #   solve reads them at random: one cache line each
    int32_t* ent           # entries: slot * SLOT_LINKS + k (the slot's k-th link is this port)
    int32_t n
    int32_t cap
    int32_t stamp          # the solve that last visited it
    int32_t loc            # during a solve, when it has two entries or more: its index in Fluid.sk
    double capacity        # bits/s: the port's rate

# A solve copies the part it works on into these compact arrays (its fills then touch no
# LinkSet or FluidSlot): a link that carries one entry only limits its flow (SolveFlow.own).
cdef struct SolveLink:     # a link with two entries or more
    double rem             # during a fill: capacity left by the frozen flows
    double load            # during a fill: the unfrozen flows' loads per unit of rate
    double capacity
    double load0           # every flow's load per unit of rate
    double data0           # its data flows' load per unit of rate (their number, a split flow its share)
    int32_t unfrozen       # during a fill: its entries whose flow is not frozen
    int32_t port
    int32_t m0             # its entries: Fluid.mem[m0:m1] (flow << 2 | tag: fluid.pyx), in LinkSet.ent's order
    int32_t m1
    uint8_t meets          # data flows from two or more links meet here
    uint8_t bound          # it froze flows in pass 1 (it is a bottleneck)

cdef struct SolveFlow:
    double own             # FluidSlot.own
    double new_rate
    double ack_coef
    int32_t slot
    int32_t frozen
    int32_t e0             # its SolveLinks: Fluid.fent[e0:e1] (link << 2 | tag: fluid.pyx), in path order
    int32_t e1

cdef struct HeapItem:      # in this order: fluid.pyx's _heap_before reads it as one 128-bit number
    uint32_t loc           # its SolveLink, or SolveFlow
    uint32_t tie           # id ^ 2**31 (ordered as the id): id a port, or -1 - slot for a flow's own limit
    double key             # >= 0

cdef struct Heap:          # of HeapItem, the smallest (key, id) on top
    HeapItem* a
    int64_t n
    int64_t cap

cdef struct Fluid:
    FluidSlot* slots
    FluidSlotRest* rest
    int32_t* links         # SLOT_LINKS per slot
    int32_t* pos           # SLOT_LINKS per slot: where the entry sits in its link's `ent`
    double* weight         # SLOT_LINKS per slot, of a split slot's forward links: the share of the flow
    int32_t* prev          #   each carries, and the link before it on the paths (-2: several)
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
    SolveLink* sk          # a solve's links of two entries or more
    int64_t cap_sk
    SolveFlow* sf          # a solve's flows, in the order it met them
    int64_t cap_sf
    int32_t* mem
    int64_t cap_mem
    double* mem_w          # beside mem and fent: the load per unit of rate of a split flow's entry
    int64_t cap_mem_w
    int32_t* fent
    int64_t cap_fent
    double* fent_w
    int64_t cap_fent_w
    int32_t unfrozen       # during a fill: its flows not yet frozen
    int32_t undecided      # during pass 1: the links where flows meet with data flows not yet frozen
    Heap heap              # during a fill: the links' levels
    Heap owns              # during a fill: the flows' own limits, once a link's level reaches them
    Heap ladder            # during a fill: the links' first levels by octave, before they join `heap`
    int64_t solve_at       # time of the pending FL_SOLVE, or NIL
    uint8_t* split_at      # per switch: 1 where the fluid splits flows over the equal-cost ports
                           #   (fluid_split_at; NULL: nowhere)
    double share
    int64_t startup

cdef int fluid_init(Sim* s, double share, int64_t startup_ps) noexcept
cdef int fluid_split_at(Sim* s, int32_t switch) noexcept
cdef void fluid_free(Sim* s) noexcept
cdef int fluid_loop(Sim* s, int64_t until, int64_t max_events) noexcept
