# cython: language_level=3
"""Packet trimming at a switch (`switch.trimming`): a data packet that would be dropped, or
would take its egress queue above the threshold, is cut to its header and forwarded at the
trimming priority, so that its receiver learns of the loss at once and NACKs it
(nic_recv.pyx) instead of the sender waiting for a timeout.

As uet-htsim's switch queue does (compositequeue.cpp:162: trim where the packet does not
fit, 64-byte headers, a header queue served with strict priority), with two differences:
the threshold may be set below the drop point (0, the default: trim only what the buffer
would drop), and the arriving packet is the one trimmed (uet-htsim trims the arriving or the
queue's last packet, by a coin flip).  Trimming acts on the priorities PFC does not cover
(NetParams.trim_mask): a lossless priority never drops.  A trimmed header is never
ECN-marked (switch.pyx marks data only) and keeps the packet's route (entropy, path).
"""
from libc.stdint cimport int32_t, uint8_t
from rocesim._core.defs cimport Sim, World, Switch, Packet, PK_DATA, PK_TRIMMED
from rocesim._core.mmu cimport mmu_admit


cdef inline bint trim_over(Sim* s, int32_t out, Packet* pk) noexcept nogil:
    """Data packet `pk`, trimmable, would take egress port `out`'s queue of its priority
    above the trimming threshold."""
    cdef World* w = s.w
    return (w.p.trim_threshold > 0 and pk.kind == PK_DATA and (w.p.trim_mask >> pk.prio) & 1
            and w.ports[out].q_bytes[pk.prio] + pk.size > w.p.trim_threshold)


cdef inline void trim(Sim* s, int32_t out, Packet* pk) noexcept nogil:
    """Cut data packet `pk`, bound for egress port `out`, to its header: counted there."""
    cdef World* w = s.w
    pk.kind = PK_TRIMMED
    pk.size = w.p.trim_size
    pk.prio = <uint8_t> w.p.trim_priority
    pk.in_prio = pk.prio            # admitted (and released) at the trimming priority
    w.ports[out].trimmed += 1
    s.st.trimmed += 1


cdef inline bint trim_refused(Sim* s, Switch* sw, int32_t in_port, int32_t out, Packet* pk) noexcept nogil:
    """The buffer refused packet `pk`: trim it instead if it is trimmable data, and admit its
    header.  False: it is dropped (not trimmable, or the header refused too)."""
    if pk.kind != PK_DATA or not (s.w.p.trim_mask >> pk.prio) & 1:
        return False
    trim(s, out, pk)
    return mmu_admit(s, sw, in_port, out, pk.in_prio, pk.prio, pk.size)
