# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The window loop of a run in parts (issue 20; docs/parallel_core.md, section 3).

The network is cut into parts by the topology (rocesim.network.partition), each a `Sim`
of its own (engine.pyx).  A packet sent at t over a cut link arrives at t + L or later,
L (the lookahead) being the smallest delay of a cut link.  So every part may run its
events up to T + L, T the earliest pending event over all parts, without missing one
from another part.  A window is [T, T + L):

1. every part runs its events of the window (loop.run_loop up to T + L - 1), in any order:
   a packet crossing a cut link is copied into the port's hand-off record (link.pxd);
2. every part takes the hand-offs of its incoming cut ports, in ascending port id and in
   send order, into its own pool and onto the wires it keeps (link.handoff_take): its
   EV_ARRIVE events take fresh seqs from its own counter, after its own events so far;
3. the dependency messages (a parent completed in one part, its child starts in another:
   flows.pyx) are applied in (sender part id, append order): the child's part counts one
   parent fewer and, at the last, pushes its start (after the hand-offs' events);
4. the deadlock detector's and the PFC watchdog's checks due then (monitors.pyx), over
   every part's ports: a window ends just after the next check, so each runs at its time.

A part's history in a window depends only on its state when the window opened, so the
results depend on the partition, never on the order the parts run in
(`Core._part_order`) or, later, on how many threads run them.  Stops (a time limit, an
event budget) are decided at window ends, except that a slice may end inside a window
(`until` < T + L - 1): every part then stops at `until`, and the next slice goes on with
the same window.  Hand-offs cross only at a window's end, so where slices end (sampling,
progress, the event budget) does not change the results either.
"""
from libc.stdint cimport int64_t, int32_t, INT64_MAX
from rocesim._core.defs cimport Sim, Event, Handoff, Flow, DepMsg, NIL, ERR_NONE, ERR_NOMEM, EV_FLOW_START
from rocesim._core.events cimport ev_next, ev_push
from rocesim._core.link cimport handoff_take
from rocesim._core.loop cimport run_loop, STOP_EMPTY, STOP_TIME, STOP_EVENTS, STOP_DEADLOCK
from rocesim._core.monitors cimport monitors_next, monitors_end, windows_monitors


cdef int64_t windows_next(Sim** parts, int32_t n) noexcept nogil:
    """The earliest pending event over the parts, or check of the monitors (INT64_MAX: none;
    -1: out of memory, the part's error set)."""
    cdef int64_t t = monitors_next(parts[0])
    cdef Event* ev
    cdef int32_t k
    for k in range(n):
        if parts[k].n_events > 0:
            ev = ev_next(parts[k])
            if ev == NULL:
                return -1
            if ev.time < t:
                t = ev.time
    return t


cdef bint _handoffs_pending(Sim** parts, int32_t n) noexcept nogil:
    """Some packet or dependency message waits for the window's end."""
    cdef int32_t k
    cdef Sim* s = parts[0]
    for k in range(s.n_handoff):
        if s.handoff[k].n:
            return True
    for k in range(n):
        if parts[k].n_deps:
            return True
    return False


cdef bint windows_idle(Sim** parts, int32_t n) noexcept nogil:
    """No part has an event left, and nothing is on its way between parts (the monitors
    apart: the network is frozen)."""
    cdef int32_t k
    for k in range(n):
        if parts[k].n_events > 0:
            return False
    return not _handoffs_pending(parts, n)


cdef int _deliver_deps(Sim** parts, int32_t n, Windows* w) noexcept nogil:
    """Phase 3: apply the dependency messages in (sender part id, append order), whatever
    order the parts ran in; -1 if out of memory.  A message's time is t + max(due, L) for
    a parent that completed at t in this window [T, T + L), so t + L >= T + L, the window's
    end: every start pushed here lies at or after the end, where every part's clock still
    is before it (no event runs late), and the next window (which begins at the earliest
    pending event of any part) sees it."""
    cdef int32_t k, c
    cdef int64_t i
    cdef Sim* s
    cdef Sim* to
    cdef Flow* fl
    cdef DepMsg* m
    for k in range(n):
        s = parts[k]
        w.deps += s.n_deps
        for i in range(s.n_deps):
            m = &s.deps[i]
            c = m.child
            fl = &s.flows[c]
            if m.time > fl.released:
                fl.released = m.time
            fl.slot.deps_left -= 1
            if fl.slot.deps_left == 0:
                to = parts[s.node_part[fl.src]]
                ev_push(to, fl.released, EV_FLOW_START, c, 0)
                if to.error != ERR_NONE:
                    return -1
        s.n_deps = 0
    return 0


cdef int _merge(Sim** parts, int32_t n, Windows* w) noexcept nogil:
    """Phase 2: each part takes the hand-offs of its incoming cut ports (ascending); -1 if
    out of memory."""
    cdef int32_t j, k
    cdef Sim* s
    cdef Handoff* h
    cdef int64_t pkts = 0, qps = 0
    for j in range(n):
        s = parts[w.order[j]]
        for k in range(s.n_in_cut):
            h = &s.handoff[s.ports[s.in_cut[k]].handoff]
            if h.n:
                w.handoffs += h.n
                if handoff_take(s, h) < 0:
                    s.error = ERR_NOMEM
                    return -1
    for j in range(n):
        pkts += parts[j].pool_used
        qps += parts[j].qp_used
    if pkts > w.pkt_peak:
        w.pkt_peak = pkts
    if qps > w.qp_peak:
        w.qp_peak = qps
    return 0


cdef int windows_run(Sim** parts, int32_t n, Windows* w, int64_t until, int64_t max_events) noexcept nogil:
    """Run the parts in windows up to time `until` (inclusive), or until `max_events`
    events have run (checked at window ends), or the deadlock detector stops it; a STOP_*
    code (loop.pxd).  On an error (a part's `error` set) it returns once every part has
    run the window's events (the failed part stopped at its error)."""
    cdef int64_t done = 0, lim, t, before
    cdef int32_t j
    cdef int m
    cdef bint failed
    cdef Sim* s
    while True:
        if w.open_end < 0:
            t = windows_next(parts, n)
            if t < 0:
                return STOP_EMPTY                 # out of memory: the part's error says so
            if t == INT64_MAX:
                return STOP_EMPTY
            if t > until:
                return STOP_TIME
            if done >= max_events:
                return STOP_EVENTS
            w.open_end = monitors_end(parts[0], t + w.lookahead)
        lim = w.open_end - 1 if w.open_end - 1 < until else until
        # phase 1: every part runs the window's events (up to lim), in `order`; a part
        # that fails (out of memory, a scheme written in Python raised) stops, the others
        # finish the window: what the run ends with does not depend on the order either
        failed = False
        for j in range(n):
            s = parts[w.order[j]]
            if s.n_events > 0:
                before = s.st.events
                run_loop(s, lim, INT64_MAX)
                done += s.st.events - before
                w.open_events += s.st.events - before
                failed = failed or s.error != ERR_NONE
        if failed:
            return STOP_EMPTY
        if lim < w.open_end - 1:
            # the slice ends inside the window: the next one goes on with it
            if windows_next(parts, n) == INT64_MAX and not _handoffs_pending(parts, n):
                _close(w)
                return STOP_EMPTY
            return STOP_TIME
        # phase 2: hand-offs into the receiving parts
        if _merge(parts, n, w) < 0:
            return STOP_EMPTY
        # phase 3: dependency messages into the children's parts
        if _deliver_deps(parts, n, w) < 0:
            return STOP_EMPTY
        m = windows_monitors(parts, n, lim)
        _close(w)
        if m != 0:
            return STOP_DEADLOCK if m > 0 else STOP_EMPTY


cdef void _close(Windows* w) noexcept nogil:
    w.open_end = -1
    w.windows += 1
    if w.open_events:
        w.busy_windows += 1
    w.open_events = 0
