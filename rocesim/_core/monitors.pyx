# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The deadlock detector and the PFC watchdog in a run in parts (issue 20; design 3.5).

With one part each check is an event of the one queue (EV_DEADLOCK, EV_WATCHDOG).  In
parts a check looks at every part's ports, and the watchdog acts on them, so it runs
between windows, on one thread, after the window's hand-offs and dependency messages
(window.pyx): each check's time is its state's `next_at`, a window never runs past the
next check (its end is at most `next_at` + 1: `monitors_end`), and the check at t runs
after every event up to t, as the last thing at t, so at its exact time.  The rules for
polling on are those of deadlock.pyx and watchdog.pyx with the parts' sums: the network
is frozen when no part has an event left (the monitors are not events here, and at a
window's end nothing is on its way between parts).  A port's queues are in its part's
pool, and what the watchdog does to a port it does in that port's part (parts.pxd), whose
clock is the check's time: every part's clock is moved to it first, so no event runs
before the clock.  Two checks due at the same time run in the order the detector then the
watchdog (the order they are enabled in, as their events run in one part).

Against one part, only same-picosecond order moves: a check at t runs after every event
at t (in one part, before those queued after it).  The result depends on nothing but the
parts' state at t, so not on the order the parts run in.
"""
from libc.stdint cimport int64_t, int32_t, INT64_MAX
from rocesim._core.defs cimport Sim, World, ERR_NONE
from rocesim._core.deadlock cimport DLState, deadlock_check_at
from rocesim._core.watchdog cimport WDState, watchdog_poll_at, watchdog_again


cdef int64_t monitors_next(Sim* s) noexcept nogil:
    """A run in parts (`s`: part 0): the time of the next check, INT64_MAX if none (and
    always with one part, whose checks are events)."""
    cdef World* w = s.w
    cdef int64_t t = INT64_MAX
    if w.node_part == NULL:
        return t
    if w.deadlock != NULL and (<DLState*> w.deadlock).next_at < t:
        t = (<DLState*> w.deadlock).next_at
    if w.watchdog != NULL and (<WDState*> w.watchdog).next_at < t:
        t = (<WDState*> w.watchdog).next_at
    return t


cdef int64_t monitors_end(Sim* s, int64_t end) noexcept nogil:
    """The end (exclusive) of a window that would end at `end`: no later than just after
    the next check, which runs at its end."""
    cdef int64_t t = monitors_next(s)
    return t + 1 if t < end - 1 else end


cdef inline int64_t _pending(Sim** parts, int32_t n) noexcept nogil:
    cdef int64_t e = 0
    cdef int32_t k
    for k in range(n):
        e += parts[k].n_events
    return e


cdef int windows_monitors(Sim** parts, int32_t n, int64_t t) noexcept nogil:
    """Between windows, every part having run its events up to `t` and taken its hand-offs
    and dependency messages: the checks due by `t` (at their time, which is `t`: see
    `monitors_end`).  1 if the run stops at a deadlock, -1 on an error (part 0's `error`:
    out of memory), else 0."""
    cdef Sim* s = parts[0]
    cdef DLState* dl = <DLState*> s.w.deadlock
    cdef WDState* wd = <WDState*> s.w.watchdog
    cdef bint due_dl = dl != NULL and dl.next_at <= t
    cdef bint due_wd = wd != NULL and wd.next_at <= t
    cdef bint stop = False, watching
    cdef int64_t flows_done = 0
    cdef int32_t k
    if not (due_dl or due_wd):
        return 0
    for k in range(n):
        if parts[k].now < t:
            parts[k].now = t                # the check's time, in every part it may act in
        flows_done += parts[k].st.flows_done
    if due_dl:
        stop = deadlock_check_at(s, t, _pending(parts, n) == 0, flows_done)
    if due_wd:
        watching = watchdog_poll_at(s, t)
        watchdog_again(s, t, watching, _pending(parts, n) > 0, flows_done)
    for k in range(n):
        if parts[k].error != ERR_NONE:
            return -1
    return 1 if stop else 0
