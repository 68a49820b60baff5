# cython: language_level=3
"""The switch buffer (MMU): admission, PFC and ECN of one shared-buffer switch.

The model is the one of the HPCC ns-3 fork (`SwitchMmu`), which most RoCE results
in the literature come from:

* Bytes are counted per (ingress port, priority).  The first `reserve` bytes of each
  such queue are private; bytes beyond it come from the shared pool
  (`shared_used`), and once a queue's shared use passes its PFC threshold further
  bytes land in the port's headroom, which absorbs what is still in flight after
  the PAUSE is sent (3 x rate x delay by default).
* Dynamic threshold: (buffer - total headroom - total reserve - shared_used) / 2**shift,
  shift = 3 for ports at host speed and one more per doubling of speed above it.
  A static threshold (bytes of shared use per queue) may replace it.
* XOFF when a queue uses headroom or its shared use reaches the threshold; XON once
  headroom is empty and shared use is zero or `resume_offset` below the threshold.
  Both are checked for the queue the packet entered by (on arrival) or left (on
  departure), as the fork does.
* Queue 0 (control: PAUSE, ACK/NACK/CNP when high priority) bypasses admission.
* Lossless priorities never drop on a full buffer (the headroom sizing is what keeps
  them in it; the fork has no such check).  Priorities without PFC are lossy: a packet
  is dropped when the buffer is full or,
  with `lossy_dynamic`, when its egress queue exceeds lossy_alpha x free buffer
  (Choudhury-Hahne dynamic threshold).
* ECN: RED on the egress queue bytes at dequeue: mark above kmax, with probability
  pmax (q - kmin) / (kmax - kmin) between kmin and kmax.
"""
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim, World, Switch, Port, Packet, EV_TX
from rocesim._core.link cimport port_kick
from rocesim._core.rng cimport rng_uniform


cdef inline int64_t _threshold(Sim* s, Switch* sw, Port* q) noexcept nogil:
    cdef World* w = s.w
    cdef int64_t free
    if not w.p.pfc_dynamic:
        return w.p.pfc_threshold
    free = sw.buffer - sw.total_hdrm - sw.total_rsrv - sw.shared_used
    if free <= 0:
        return 0
    return free >> q.pfc_shift


cdef inline int64_t _shared(Sim* s, Port* q, int32_t prio) noexcept nogil:
    cdef World* w = s.w
    cdef int64_t b = q.in_bytes[prio]
    return b - w.p.reserve if b > w.p.reserve else 0


cdef inline void pfc_send(Sim* s, int32_t port, int32_t prio, bint on) noexcept nogil:
    """Queue a PAUSE (on) or RESUME frame for `prio` on `port`, ahead of all data."""
    cdef Port* q = &s.w.ports[port]
    q.pause_sent[prio] = on
    q.pfc_pending |= (1 << prio)
    if on:
        q.pfc_state |= (1 << prio)
    else:
        q.pfc_state &= ~(1 << prio)
    port_kick(s, port, s.now)


cdef inline bint mmu_admit(Sim* s, Switch* sw, int32_t in_port, int32_t out_port,
                           int32_t prio, int32_t out_prio, int32_t size) noexcept nogil:
    """Account for a packet entering by `in_port` at priority `prio`, to be queued at
    `out_port` in `out_prio` (the same unless moved: see NetParams.bounce_priority); False
    means drop it."""
    cdef World* w = s.w
    cdef Port* q = &w.ports[in_port]
    cdef bint lossless = (w.p.pfc_mask >> prio) & 1
    cdef int64_t new_bytes, thr
    if prio == 0:
        sw.used += size
        return True
    thr = _threshold(s, sw, q)
    if lossless:
        # as the fork: drop only when both headroom and the shared allowance are exhausted
        if (q.hdrm_bytes[prio] + size > q.headroom
                and _shared(s, q, prio) + size > thr):
            return False
    elif sw.used + size > sw.buffer:
        return False
    elif w.p.lossy_dynamic:
        if w.ports[out_port].q_bytes[out_prio] + size > w.p.lossy_alpha * (sw.buffer - sw.used):
            return False
    new_bytes = q.in_bytes[prio] + size
    if new_bytes <= w.p.reserve:
        q.in_bytes[prio] = new_bytes
    elif lossless and new_bytes - w.p.reserve > thr:
        q.hdrm_bytes[prio] += size
    else:
        q.in_bytes[prio] = new_bytes
        sw.shared_used += min(<int64_t> size, new_bytes - w.p.reserve)
    sw.used += size
    if lossless and not q.pause_sent[prio]:
        if q.hdrm_bytes[prio] > 0 or _shared(s, q, prio) >= _threshold(s, sw, q):
            pfc_send(s, in_port, prio, True)      # counted when the frame goes out
    return True


cdef inline void mmu_release(Sim* s, Switch* sw, Packet* pk) noexcept nogil:
    """Account for a packet leaving the switch; may send a RESUME upstream."""
    cdef World* w = s.w
    cdef int32_t prio = pk.in_prio
    cdef Port* q
    cdef int64_t from_hdrm, from_shared, shared
    sw.used -= pk.size
    if prio == 0:
        return
    q = &w.ports[pk.in_port]
    from_hdrm = min(q.hdrm_bytes[prio], <int64_t> pk.size)
    shared = _shared(s, q, prio)
    from_shared = min(pk.size - from_hdrm, shared)
    q.hdrm_bytes[prio] -= from_hdrm
    q.in_bytes[prio] -= pk.size - from_hdrm
    sw.shared_used -= from_shared
    if q.pause_sent[prio] and q.hdrm_bytes[prio] == 0:
        shared = _shared(s, q, prio)
        if shared == 0 or shared + w.p.resume_offset <= _threshold(s, sw, q):
            pfc_send(s, pk.in_port, prio, False)


cdef inline bint mmu_ecn_mark(Sim* s, int32_t port, int32_t prio) noexcept nogil:
    """RED decision on the egress queue of `port`, `prio` (bytes still queued)."""
    cdef World* w = s.w
    cdef Port* p = &w.ports[port]
    cdef int64_t qb = p.q_bytes[prio]
    if not ((w.p.ecn_mask >> prio) & 1) or qb <= p.kmin:
        return False
    if qb > p.kmax:
        return True
    return rng_uniform(&s.rng) < p.pmax * (qb - p.kmin) / <double> (p.kmax - p.kmin)
