# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The window loop of a run in parts, on one thread or several (issue 20;
docs/parallel_core.md, sections 3 and 3.6).

The network is cut into parts by the topology (rocesim.network.partition), each a `Sim`
of its own (engine.pyx).  A packet sent at t over a cut link arrives at t + L or later,
L (the lookahead) being the smallest delay of a cut link.  So every part may run its
events up to T + L, T the earliest pending event over all parts, without missing one
from another part.  A window is [T, T + L):

1. every part with an event in the window runs its events (loop.run_loop up to
   T + L - 1), in any order and on any thread: a packet crossing a cut link is copied into
   the port's hand-off record (link.pxd);
2. every part takes the hand-offs of its incoming cut ports, in ascending port id and in
   send order, into its own pool and onto the wires it keeps (link.handoff_take): its
   EV_ARRIVE events take fresh seqs from its own counter, after its own events so far;
3. the dependency messages (a parent completed in one part, its child starts in another:
   flows.pyx) are applied, on one thread, in (sender part id, append order): the child's
   part counts one parent fewer and, at the last, pushes its start (after the hand-offs'
   events);
4. the deadlock detector's and the PFC watchdog's checks due then (monitors.pyx), on one
   thread, over every part's ports: a window ends just after the next check, so each runs
   at its time.

A part's history in a window depends only on its state when the window opened, so the
results depend on the partition, never on the order the parts run in
(`debug.part_order`) nor on how many threads run them.  Stops (a time limit, an event
budget) are decided at window ends, except that a slice may end inside a window
(`until` < T + L - 1): every part then stops at `until`, and the next slice goes on with
the same window.  Hand-offs cross only at a window's end, so where slices end (sampling,
progress, the event budget) does not change the results either.

Threads.  One OpenMP parallel region per call (a slice of the run), not per window.  Its
threads go through the windows together, meeting at a spin barrier after each phase
(three per window; a GOMP barrier costs 10x more, section 3.6).  Phase 1 hands out the
window's busy parts from an atomic counter, costliest first (load-adaptive: the order is
re-sorted by the events each part ran lately, as Unison does); in phase 2 each part that
ran takes its hand-offs on the thread that ran it (its pool is in that core's cache), the
others by a fixed stride; thread 0 alone applies the dependency messages and the monitors'
checks, and opens the next window.
Built without OpenMP, the same code runs on one thread (`windows_max_threads()` is 1).
"""
from libc.stdint cimport int64_t, int32_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, free
from cython.parallel cimport parallel, threadid
from rocesim._core.defs cimport Sim, Event, Handoff, Flow, DepMsg, NIL, ERR_NONE, ERR_NOMEM, EV_FLOW_START
from rocesim._core.events cimport ev_next, ev_push
from rocesim._core.link cimport handoff_take
from rocesim._core.growth cimport room_for_one
from rocesim._core.loop cimport run_loop, STOP_EMPTY, STOP_TIME, STOP_EVENTS, STOP_DEADLOCK
from rocesim._core.monitors cimport monitors_next, monitors_end, windows_monitors

cdef extern from *:
    """
    #include <stdint.h>
    #include <sched.h>
    #ifdef _OPENMP
    #include <omp.h>
    #define ROCESIM_MAX_THREADS 256
    static int rocesim_team_size(void) { return omp_get_num_threads(); }
    #else
    #define ROCESIM_MAX_THREADS 1
    static int rocesim_team_size(void) { return 1; }
    #endif
    #if defined(__x86_64__) || defined(__i386__)
    #define ROCESIM_RELAX() __builtin_ia32_pause()
    #elif defined(__aarch64__)
    #define ROCESIM_RELAX() __asm__ __volatile__("yield")
    #else
    #define ROCESIM_RELAX() ((void) 0)
    #endif

    /* What the threads of one call share: each group that several threads write at once
       on a cache line of its own. */
    typedef struct {
        _Alignas(64) int arrived;      /* the barrier: threads arrived so far */
        int sense;                     /*   flips when the last arrives */
        _Alignas(64) int claim;        /* phase 1: the next index into the busy parts */
        _Alignas(64) int64_t events;   /* sums over the threads, per window */
        int64_t handoffs;
        int64_t pkts;
        int64_t qps;
        int flags;                     /* TEAM_ERROR | TEAM_DEPS */
        _Alignas(64) int action;       /* thread 0's decision, read after a barrier */
        int64_t lim;                   /* the window's last picosecond in this call */
        int64_t done;                  /* events run in this call */
    } rocesim_team;

    /* A sense-reversing barrier: spin (with the CPU's pause hint), then yield the core, so
       that more threads than cores (4 on 2, a test) do not spin against a descheduled one. */
    static inline void rocesim_barrier(rocesim_team* t, int n, int* sense) {
        int s = !*sense, spins = 0;
        *sense = s;
        if (__atomic_add_fetch(&t->arrived, 1, __ATOMIC_ACQ_REL) == n) {
            __atomic_store_n(&t->arrived, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&t->sense, s, __ATOMIC_RELEASE);
            return;
        }
        while (__atomic_load_n(&t->sense, __ATOMIC_ACQUIRE) != s) {
            if (spins < 2000) { spins++; ROCESIM_RELAX(); }
            else sched_yield();
        }
    }
    static inline int rocesim_claim(int* c) { return __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }
    static inline void rocesim_add(int64_t* a, int64_t v) { if (v) __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
    static inline void rocesim_or(int* a, int v) { if (v) __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }
    """
    int ROCESIM_MAX_THREADS
    ctypedef struct rocesim_team:
        int arrived
        int sense
        int claim
        int64_t events
        int64_t handoffs
        int64_t pkts
        int64_t qps
        int flags
        int action
        int64_t lim
        int64_t done
    int rocesim_team_size() noexcept nogil
    void rocesim_barrier(rocesim_team* t, int n, int* sense) noexcept nogil
    int rocesim_claim(int* c) noexcept nogil
    void rocesim_add(int64_t* a, int64_t v) noexcept nogil
    void rocesim_or(int* a, int v) noexcept nogil

cdef enum:
    TEAM_ERROR = 1         # a part's error is set (out of memory, a Python scheme raised)
    TEAM_DEPS = 2          # a part sent dependency messages in the window
    GO = -1                # thread 0's action: run the window (else a STOP_* code)
    RESORT_EVERY = 16      # windows between two re-sorts of the parts by cost


cdef int windows_max_threads() noexcept nogil:
    """How many threads this build can run a window on (1: built without OpenMP)."""
    return ROCESIM_MAX_THREADS


cdef int windows_init(Windows* win, int32_t n, int64_t lookahead) noexcept nogil:
    """The window state of a run in `n` parts; -1 if out of memory."""
    cdef int32_t k
    win.lookahead = lookahead
    win.open_end = -1
    win.order = <int32_t*> malloc(n * sizeof(int32_t))
    win.active = <int32_t*> malloc(n * sizeof(int32_t))
    win.next_t = <int64_t*> malloc(n * sizeof(int64_t))
    win.cost = <int64_t*> calloc(n, sizeof(int64_t))
    win.ran = <int64_t*> calloc(n, sizeof(int64_t))
    win.taken = <int32_t*> calloc(n, sizeof(int32_t))
    win.runner = <int32_t*> malloc(n * sizeof(int32_t))
    if (win.order == NULL or win.active == NULL or win.next_t == NULL or win.cost == NULL or win.ran == NULL
            or win.taken == NULL or win.runner == NULL):
        return -1
    for k in range(n):
        win.order[k] = k
        win.runner[k] = -1
    return 0


cdef void windows_free(Windows* win) noexcept nogil:
    free(win.order)
    free(win.active)
    free(win.next_t)
    free(win.cost)
    free(win.ran)
    free(win.taken)
    free(win.runner)
    free(win.profile)
    win.order = NULL


cdef int64_t _part_next(Sim* s) noexcept nogil:
    """Part s's earliest pending event (INT64_MAX: none; -1: out of memory, its error set)."""
    cdef Event* ev
    if s.n_events == 0:
        return INT64_MAX
    ev = ev_next(s)
    return -1 if ev == NULL else ev.time


cdef int64_t windows_next(Sim** parts, int32_t n) noexcept nogil:
    """The earliest pending event over the parts, or check of the monitors (INT64_MAX: none;
    -1: out of memory, the part's error set)."""
    cdef int64_t t = monitors_next(parts[0]), tk
    cdef int32_t k
    for k in range(n):
        tk = _part_next(parts[k])
        if tk < 0:
            return -1
        if tk < t:
            t = tk
    return t


cdef bint windows_idle(Sim** parts, int32_t n) noexcept nogil:
    """No part has an event left, and nothing is on its way between parts (the monitors
    apart: the network is frozen)."""
    cdef int32_t k
    for k in range(n):
        if parts[k].n_events > 0:
            return False
    return not _handoffs_pending(parts, n)


cdef bint _handoffs_pending(Sim** parts, int32_t n) noexcept nogil:
    """Some packet or dependency message waits for the window's end."""
    cdef int32_t k
    cdef Sim* s = parts[0]
    for k in range(s.w.n_handoff):
        if s.w.handoff[k].n:
            return True
    for k in range(n):
        if parts[k].n_deps:
            return True
    return False


cdef int _deliver_deps(Sim** parts, int32_t n, Windows* win) noexcept nogil:
    """Phase 3 (one thread): apply the dependency messages in (sender part id, append
    order), whatever order the parts ran in; -1 if out of memory.  A message's time is
    t + max(due, L) for a parent that completed at t in this window [T, T + L), so
    t + L >= T + L, the window's end: every start pushed here lies at or after the end,
    where every part's clock still is before it (no event runs late), and the next window
    (which begins at the earliest pending event of any part) sees it."""
    cdef int32_t k, c, to
    cdef int64_t i
    cdef Sim* s
    cdef Flow* fl
    cdef DepMsg* m
    for k in range(n):
        s = parts[k]
        win.deps += s.n_deps
        for i in range(s.n_deps):
            m = &s.deps[i]
            c = m.child
            fl = &s.w.flows[c]
            if m.time > fl.released:
                fl.released = m.time
            fl.slot.deps_left -= 1
            if fl.slot.deps_left == 0:
                to = s.w.node_part[fl.src]
                ev_push(parts[to], fl.released, EV_FLOW_START, c, 0)
                if parts[to].error != ERR_NONE:
                    return -1
                if fl.released < win.next_t[to]:
                    win.next_t[to] = fl.released
        s.n_deps = 0
    return 0


cdef void _by_cost(Windows* win, int32_t n) noexcept nogil:
    """Re-sort `order` by the events each part ran lately, costliest first (stable
    insertion sort: the order barely changes between two sorts), and age the costs."""
    cdef int32_t i, j, k
    for i in range(1, n):
        k = win.order[i]
        j = i - 1
        while j >= 0 and win.cost[win.order[j]] < win.cost[k]:
            win.order[j + 1] = win.order[j]
            j -= 1
        win.order[j + 1] = k
    for i in range(n):
        win.cost[i] >>= 1


cdef int _profile(Windows* win, int32_t n) noexcept nogil:
    """Record the window's work per busy part (Core.window_profile); -1 if out of memory."""
    cdef int32_t k
    cdef int64_t* r
    for k in range(n):
        if win.ran[k] or win.taken[k]:
            if room_for_one(<void**> &win.profile, win.n_profile, &win.cap_profile, 4 * sizeof(int64_t), 1024) < 0:
                return -1
            r = &win.profile[4 * win.n_profile]
            r[0] = win.windows
            r[1] = k
            r[2] = win.ran[k]
            r[3] = win.taken[k]
            win.n_profile += 1
    return 0


cdef void _close(Windows* win, int32_t n) noexcept nogil:
    cdef int32_t k
    for k in range(n):
        win.ran[k] = 0
        win.runner[k] = -1
    win.open_end = -1
    win.windows += 1
    if win.open_events:
        win.busy_windows += 1
    win.open_events = 0


cdef int _open(Sim** parts, int32_t n, Windows* win, rocesim_team* tm, int64_t until, int64_t max_events,
               bint closing, int32_t nt) noexcept nogil:
    """Thread 0, between windows: close the window just run (phases 3 and 4, the
    counters), then open the next and list its busy parts; GO, or the STOP_* code that
    ends the call."""
    cdef int32_t j, k
    cdef int64_t t, lim
    cdef int m
    if closing:
        tm.done += tm.events
        win.open_events += tm.events
        win.handoffs += tm.handoffs
        if tm.pkts > win.pkt_peak:
            win.pkt_peak = tm.pkts
        if tm.qps > win.qp_peak:
            win.qp_peak = tm.qps
        if tm.flags & TEAM_ERROR:
            return STOP_EMPTY                 # out of memory: the part's error says so
        if win.profiling and _profile(win, n) < 0:
            return STOP_EMPTY
        if tm.flags & TEAM_DEPS and _deliver_deps(parts, n, win) < 0:
            return STOP_EMPTY
        m = 0
        if monitors_next(parts[0]) <= tm.lim:
            m = windows_monitors(parts, n, tm.lim)
            for k in range(n):              # (a check may act on any part: PAUSE, flush)
                win.next_t[k] = _part_next(parts[k])
        _close(win, n)
        if m != 0:
            return STOP_DEADLOCK if m > 0 else STOP_EMPTY
    if win.open_end < 0:
        t = monitors_next(parts[0])         # a check is pending work: idle gaps keep it
        for k in range(n):
            if win.next_t[k] < t:
                t = win.next_t[k]
        if t == INT64_MAX:
            return STOP_EMPTY
        if t > until:
            return STOP_TIME
        if tm.done >= max_events:
            return STOP_EVENTS
        win.open_end = monitors_end(parts[0], t + win.lookahead)
    lim = win.open_end - 1 if win.open_end - 1 < until else until
    if nt > 1 and win.windows % RESORT_EVERY == 0:
        _by_cost(win, n)
    win.n_active = 0
    for j in range(n):
        k = win.order[j]
        if win.next_t[k] <= lim:
            win.active[win.n_active] = k
            win.n_active += 1
    tm.lim = lim
    tm.claim = 0
    tm.events = tm.handoffs = tm.pkts = tm.qps = 0
    tm.flags = 0
    return GO


cdef void _run_parts(Sim** parts, Windows* win, rocesim_team* tm, int32_t tid) noexcept nogil:
    """Phase 1: this thread claims busy parts until none is left, and runs each to the
    window's last picosecond."""
    cdef int32_t j, k
    cdef int64_t before, ran = 0
    cdef Sim* s
    while True:
        j = rocesim_claim(&tm.claim)
        if j >= win.n_active:
            break
        k = win.active[j]
        s = parts[k]
        before = s.st.events
        run_loop(s, tm.lim, INT64_MAX)
        before = s.st.events - before
        win.ran[k] += before          # (+=: a slice may end inside the window, the next goes on)
        win.cost[k] += before
        ran += before
        win.runner[k] = tid
    rocesim_add(&tm.events, ran)


cdef void _take_handoffs(Sim** parts, int32_t n, Windows* win, rocesim_team* tm, int32_t tid, int32_t nt) noexcept nogil:
    """Phase 2: the parts this thread ran in phase 1, and of those that did not run,
    parts tid, tid + nt, ..., take the hand-offs of their incoming cut ports (ascending)
    and note their next event; the sums of the pools' use for the peaks.  (A part's pool
    and queue are in the cache of the core that ran it: another core taking its hand-offs
    would miss on every packet it allocates.)"""
    cdef int32_t k, c
    cdef Sim* s
    cdef Handoff* h
    cdef int64_t taken = 0, pkts = 0, qps = 0
    cdef int flags = 0
    for k in range(n):
        if win.runner[k] != tid and (win.runner[k] >= 0 or k % nt != tid):
            continue
        s = parts[k]
        win.taken[k] = 0
        for c in range(s.n_in_cut):
            h = &s.w.handoff[s.w.ports[s.in_cut[c]].handoff]
            if h.n:
                win.taken[k] += h.n
                if handoff_take(s, h) < 0:
                    s.error = ERR_NOMEM
        taken += win.taken[k]
        if win.taken[k] or win.ran[k]:
            win.next_t[k] = _part_next(s)
        pkts += s.pool_used
        qps += s.qp_used
        if s.error != ERR_NONE:
            flags |= TEAM_ERROR
        if s.n_deps:
            flags |= TEAM_DEPS
    rocesim_add(&tm.handoffs, taken)
    rocesim_add(&tm.pkts, pkts)
    rocesim_add(&tm.qps, qps)
    rocesim_or(&tm.flags, flags)


cdef void _member(Sim** parts, int32_t n, Windows* win, rocesim_team* tm, int64_t until, int64_t max_events,
                  int32_t tid, int32_t nt) noexcept nogil:
    """One thread's way through the windows of a call (all threads take the same turns)."""
    cdef int sense = 0
    cdef bint closing = False
    while True:
        if tid == 0:
            tm.action = _open(parts, n, win, tm, until, max_events, closing, nt)
        closing = True
        rocesim_barrier(tm, nt, &sense)
        if tm.action != GO:
            return
        _run_parts(parts, win, tm, tid)
        rocesim_barrier(tm, nt, &sense)
        if tm.lim < win.open_end - 1:
            return                  # the slice ends inside the window: windows_run sees to it
        _take_handoffs(parts, n, win, tm, tid, nt)
        rocesim_barrier(tm, nt, &sense)


cdef int windows_run(Sim** parts, int32_t n, Windows* win, int64_t until, int64_t max_events,
                     int32_t threads) noexcept nogil:
    """Run the parts in windows up to time `until` (inclusive), or until `max_events`
    events have run (checked at window ends), on up to `threads` threads (capped at the
    parts and at windows_max_threads()); a STOP_* code (loop.pxd).  On an error (a part's
    `error` set) it returns at the end of the window, every other part having run it."""
    cdef rocesim_team tm
    cdef int32_t k, nt = threads
    if nt > n:
        nt = n
    if nt > ROCESIM_MAX_THREADS:
        nt = ROCESIM_MAX_THREADS
    if nt < 1:
        nt = 1
    tm.arrived = tm.sense = tm.claim = tm.flags = 0
    tm.events = tm.handoffs = tm.pkts = tm.qps = tm.done = 0
    tm.action = GO
    # Python may have changed the parts between two calls (routes, faults): look again;
    # and a window the last call stopped inside may go on with other threads: which thread
    # ran a part then means nothing now (phase 2 would skip a part whose thread is gone)
    for k in range(n):
        win.runner[k] = -1
        win.next_t[k] = _part_next(parts[k])
        if win.next_t[k] < 0:
            return STOP_EMPTY
    if nt == 1:
        _member(parts, n, win, &tm, until, max_events, 0, 1)
    else:
        with parallel(num_threads=nt):
            _member(parts, n, win, &tm, until, max_events, threadid(), rocesim_team_size())
    if tm.action != GO:
        return tm.action
    # the slice ended inside the window: the next call goes on with it
    win.open_events += tm.events
    for k in range(n):
        if parts[k].error != ERR_NONE:
            return STOP_EMPTY
    if windows_next(parts, n) == INT64_MAX and not _handoffs_pending(parts, n):
        _close(win, n)
        return STOP_EMPTY
    return STOP_TIME
