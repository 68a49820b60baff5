# cython: language_level=3
"""The host's set of flows with data to send, and which of them may send now.

`Host.active` is an unordered array of flow ids (a flow is in it while it may have data
to send, at `Flow.slot.act_pos`; NIL when not listed); the NIC serves it round-robin by position from
`Host.rr`.  So that choosing the next flow costs O(log n) rather than a scan of every
flow, each flow in it is in one of three scheduling states (nic_send.sched_update
decides, after anything that changes its data, window or pacing time):

* SCHED_READY: it may send now (has data, window open, pacing time come; a released flow
  that has no queue pair yet always may): its bit is
  set in `Host.ready_bits` (a two-level bitset by position, `ready_sum` marking the
  non-zero words), and the NIC takes the first ready position from `rr` on;
* SCHED_PACED: it may send at `Qp.paced_at`: an entry in the host's min-heap of that
  priority (`Host.paced`), turned ready when its time comes (stale entries, whose flow
  moved on, are skipped);
* SCHED_BLOCKED: nothing to send, or the window is full; an ACK, NACK, timeout or the
  scheme re-decides.

`Host.prio_active` counts the flows per priority so that the NIC can stop at once when
PFC pauses every priority it has flows in.
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport realloc
from libc.string cimport memset
from rocesim._core.defs cimport (Sim, World, Flow, Qp, Host, PacedEntry, NIL, ERR_NOMEM,
                                 SCHED_BLOCKED, SCHED_READY, SCHED_PACED)
from rocesim._core.qp cimport qp_of
from rocesim._core.bits cimport rocesim_ctz64


# --- the ready bitset ------------------------------------------------------------------

cdef inline void ready_set(Host* h, int32_t pos) noexcept nogil:
    cdef int32_t w = pos >> 6
    h.ready_bits[w] |= (<uint64_t> 1) << (pos & 63)
    h.ready_sum[w >> 6] |= (<uint64_t> 1) << (w & 63)


cdef inline void ready_clear(Host* h, int32_t pos) noexcept nogil:
    cdef int32_t w = pos >> 6
    h.ready_bits[w] &= ~((<uint64_t> 1) << (pos & 63))
    if h.ready_bits[w] == 0:
        h.ready_sum[w >> 6] &= ~((<uint64_t> 1) << (w & 63))


cdef inline bint ready_get(Host* h, int32_t pos) noexcept nogil:
    return (h.ready_bits[pos >> 6] >> (pos & 63)) & 1


cdef inline int32_t ready_next(Host* h, int32_t lo, int32_t hi) noexcept nogil:
    """The first ready position in [lo, hi), or NIL."""
    cdef int32_t w, j, nsum
    cdef uint64_t m
    if lo >= hi:
        return NIL
    w = lo >> 6
    m = h.ready_bits[w] & ((~(<uint64_t> 0)) << (lo & 63))
    if m == 0:
        # the next non-zero word after w, from the summary
        w += 1
        j = w >> 6
        nsum = (((hi + 63) >> 6) + 63) >> 6
        if j >= nsum:
            return NIL
        m = h.ready_sum[j] & ((~(<uint64_t> 0)) << (w & 63)) if (w & 63) else h.ready_sum[j]
        while m == 0:
            j += 1
            if j >= nsum:
                return NIL
            m = h.ready_sum[j]
        w = (j << 6) + rocesim_ctz64(m)
        m = h.ready_bits[w]
    lo = (w << 6) + rocesim_ctz64(m)
    return lo if lo < hi else NIL


cdef inline uint64_t* _grow_words(uint64_t* words, int32_t old_n, int32_t new_n) noexcept nogil:
    """`words` grown from `old_n` to `new_n` words (the new ones clear); NULL if out of memory."""
    cdef uint64_t* grown = <uint64_t*> realloc(words, new_n * sizeof(uint64_t))
    if grown != NULL:
        memset(&grown[old_n], 0, (new_n - old_n) * sizeof(uint64_t))
    return grown


cdef inline int _grow_bits(Host* h, int32_t cap) noexcept nogil:
    """Room for `cap` positions in the bitset (new bits clear); -1 if out of memory."""
    cdef int32_t old_w = (h.cap_active + 63) >> 6, new_w = (cap + 63) >> 6
    cdef int32_t old_s = (old_w + 63) >> 6, new_s = (new_w + 63) >> 6
    cdef uint64_t* grown
    if new_w > old_w or h.ready_bits == NULL:
        grown = _grow_words(h.ready_bits, old_w, new_w)
        if grown == NULL:
            return -1
        h.ready_bits = grown
    if new_s > old_s or h.ready_sum == NULL:
        grown = _grow_words(h.ready_sum, old_s, new_s)
        if grown == NULL:
            return -1
        h.ready_sum = grown
    return 0


# --- the paced heaps ---------------------------------------------------------------------

cdef inline void paced_push(Sim* s, Host* h, int32_t prio, int64_t time, int32_t f) noexcept nogil:
    cdef PacedEntry* a
    cdef PacedEntry e
    cdef int32_t i, parent, cap
    if h.n_paced[prio] == h.cap_paced[prio]:
        cap = 8 if h.cap_paced[prio] == 0 else 2 * h.cap_paced[prio]
        a = <PacedEntry*> realloc(h.paced[prio], cap * sizeof(PacedEntry))
        if a == NULL:
            s.error = ERR_NOMEM
            return
        h.paced[prio] = a
        h.cap_paced[prio] = cap
    a = h.paced[prio]
    e.time = time
    e.flow = f
    i = h.n_paced[prio]
    h.n_paced[prio] += 1
    while i > 0:
        parent = (i - 1) >> 1
        if a[parent].time <= time:
            break
        a[i] = a[parent]
        i = parent
    a[i] = e


cdef inline void paced_pop(Host* h, int32_t prio) noexcept nogil:
    cdef PacedEntry* a = h.paced[prio]
    cdef PacedEntry last
    cdef int32_t n, i, c
    h.n_paced[prio] -= 1
    n = h.n_paced[prio]
    if n == 0:
        return
    last = a[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and a[c + 1].time < a[c].time:
            c += 1
        if a[c].time >= last.time:
            break
        a[i] = a[c]
        i = c
    a[i] = last


cdef inline bint paced_valid(Sim* s, PacedEntry* e) noexcept nogil:
    """The entry still stands for its flow (it did not move on, or end, since it was pushed)."""
    cdef World* w = s.w
    cdef Qp* qp
    if w.flows[e.flow].qp == NIL:
        return False
    qp = qp_of(s, e.flow)
    return w.flows[e.flow].slot.act_pos != NIL and qp.sched == SCHED_PACED and qp.paced_at == e.time


cdef inline int64_t paced_top(Sim* s, Host* h, int32_t prio) noexcept nogil:
    """The earliest valid pacing time of this priority (stale entries dropped), or -1."""
    while h.n_paced[prio] > 0:
        if paced_valid(s, &h.paced[prio][0]):
            return h.paced[prio][0].time
        paced_pop(h, prio)
    return -1


# --- membership ----------------------------------------------------------------------------

cdef inline void active_add(Sim* s, int32_t f) noexcept nogil:
    """List active flow f in its host's active set (blocked until sched_update decides; a
    flow without a queue pair is ready: the caller sets its bit)."""
    cdef World* w = s.w
    cdef Flow* fl = &w.flows[f]
    cdef Host* h = &w.hosts[fl.src]
    cdef int32_t* grown
    cdef int32_t cap
    if fl.slot.act_pos != NIL:
        return
    if h.n_active == h.cap_active:
        cap = 8 if h.cap_active == 0 else 2 * h.cap_active
        grown = <int32_t*> realloc(h.active, cap * sizeof(int32_t))
        if grown == NULL or _grow_bits(h, cap) < 0:
            if grown != NULL:
                h.active = grown
            s.error = ERR_NOMEM
            return
        h.active = grown
        h.cap_active = cap
    h.active[h.n_active] = f
    fl.slot.act_pos = h.n_active
    if fl.qp != NIL:
        qp_of(s, f).sched = SCHED_BLOCKED
    h.n_active += 1
    h.prio_active[fl.prio] += 1


cdef inline void active_remove_at(Sim* s, Host* h, int32_t idx) noexcept nogil:
    """Unlist the flow at position idx; the last flow moves into idx (bits and all)."""
    cdef World* w = s.w
    cdef Flow* fl = &w.flows[h.active[idx]]
    cdef int32_t last, g
    fl.slot.act_pos = NIL
    if fl.qp != NIL:
        qp_of(s, h.active[idx]).sched = SCHED_BLOCKED
    h.prio_active[fl.prio] -= 1
    ready_clear(h, idx)
    h.n_active -= 1
    last = h.n_active
    if idx != last:
        g = h.active[last]
        h.active[idx] = g
        w.flows[g].slot.act_pos = idx
        if ready_get(h, last):
            ready_set(h, idx)
            ready_clear(h, last)


cdef inline void active_remove(Sim* s, int32_t f) noexcept nogil:
    cdef World* w = s.w
    cdef Host* h = &w.hosts[w.flows[f].src]
    if w.flows[f].slot.act_pos == NIL:
        return
    active_remove_at(s, h, w.flows[f].slot.act_pos)
    if h.rr >= h.n_active:
        h.rr = 0
