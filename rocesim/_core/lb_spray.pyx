# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Load balancing `spray`: every data packet to an equal-cost port of its own, at random
(from the part's random stream) or round-robin (a counter per destination class at each
switch), whatever its queue pair: packet spraying (Dixit et al., INFOCOM 2013; random packet
spraying), as the Ultra Ethernet transport sprays packets.  Packets of one flow then arrive
out of order: receivers that take them so (`nic.delivery: unordered`) place them on arrival,
go-back-N receivers NACK them.
"""
from libc.stdint cimport int32_t, uint32_t, uint64_t
from rocesim._core.defs cimport Sim, Switch, Packet
from rocesim._core.lb cimport lb_sim_of, lb_state_at
from rocesim._core.rng cimport rng_next
from rocesim._core.declare import check_fields, declared_values

cdef enum:
    RANDOM = 0             # `order`'s options, in DECLARATION's order
    ROUND_ROBIN = 1


cdef struct SprayParams:   # DECLARATION's parameters, by the same names
    int32_t order


cdef struct SprayState:
    SprayParams p
    int32_t next[1]        # round_robin: per destination class, the next index (n_route_classes)


cdef int32_t _pick(Sim* s, Switch* sw, int32_t off, int32_t cnt, int32_t cls, uint32_t hash,
                   Packet* pk) noexcept nogil:
    cdef SprayState* st = <SprayState*> sw.lb_state
    cdef int32_t k
    if st.p.order == RANDOM:
        return <int32_t> (rng_next(&s.rng) % <uint64_t> cnt)
    k = st.next[cls] % cnt
    st.next[cls] = k + 1
    return k


def install(core, switches, params):
    """Spraying at every switch of `switches` (indices 0..n_switches-1), `params` DECLARATION's."""
    cdef Sim* s = lb_sim_of(core)
    cdef SprayParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    cdef SprayState* st
    cdef int32_t k
    for k in switches:
        st = <SprayState*> lb_state_at(s, k, sizeof(SprayState) + s.w.n_route_classes * sizeof(int32_t))
        st.p = p
        s.w.sw[k].lb_pick = _pick


DECLARATION = dict(
    name="spray",
    doc="per packet: each data packet to an equal-cost port of its own, at random or round-robin",
    fluid=("split", "each flow split evenly over the equal-cost ports (the mean of spraying: no queue "
                    "from random choices, no reordering)"),
    params=(
        ("order", ("choice", ("random", "round_robin")), "random",
         "random (from the run's random stream) or round_robin (per switch and destination)"),
    ),
)
