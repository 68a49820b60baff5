# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The window loop of a run in parts, on one thread or several (issue 20;
docs/parallel_core.md, sections 3, 3.6 and 15).

The network is cut into parts by the topology (rocesim.network.partition), each a `Sim`
of its own (engine.pyx).  A packet sent at t over a cut link arrives at t + L or later,
L (the lookahead) being the smallest delay of a cut link.  So every part may run its
events up to T + L, T the earliest pending event over all parts, without missing one
from another part.  A window is [T, T + L); idle time between two windows is skipped.
In a window:

1. every part with work in the window first takes the hand-offs the window before left
   it (the packets other parts sent it over cut links, into its own pool and onto the
   wires it keeps, in ascending port id and send order: link.handoff_take; their
   EV_ARRIVE events take fresh seqs from its own counter), then starts the children
   whose last parent completed in another part (dependency messages, in sender part id
   and append order), then runs its events up to T + L - 1.  A packet it sends over a
   cut link is copied into the port's hand-off record (link.pxd);
2. at the window's end, on one thread: the dependency messages are applied (which
   children now start, and when), the deadlock detector's and the PFC watchdog's checks
   due then run (monitors.pyx; a window ends just after the next check, so each runs at
   its time, and then every part takes its hand-offs first), and the next window opens
   at the earliest pending event, hand-offs and starts included.

The parts write one of two sets of hand-off records in a window while they take from the
other, the window before's (`Windows.sets`), so taking needs no barrier of its own.  A
thread notes how many packets its parts put in each record, by receiving part, in a row of
its own (`Windows.noted`: no atomic operation, no line two threads write at once), so that a
part visits only the records that hold packets for it, in ascending port id, and reads the
records themselves without either part writing them (a line that moved between the cores
at every window).  A
part's history in a window depends only on its state when the window opened, and a part
takes what was handed to it before anything else it does in the next window, as if
every part had taken its hand-offs at the window's end: the results depend on the
partition, never on the order the parts run in (`debug.part_order`) nor on how many
threads run them.  Stops (a time limit, an event budget) are decided at window ends, where
every part first takes what is left for it, except that a slice may end inside a window
(`until` < T + L - 1): every part then stops at `until`, and the next slice goes on with
the same window.  So where slices end (sampling, progress, the event budget) does not
change the results either.

Threads.  An OpenMP parallel region per call (a slice of the run) on as many threads as
thread_count.pxd says, not one per window.  Its threads go through the windows together,
meeting once per window at the barrier (barrier.pxd: spin, then sleep); the last to
arrive does step 2 alone and releases the others, unless the window it opens has one
part to run: it then runs that window itself, and the next, while the others wait (a
thread woken to find nothing to do costs a wake-up per window).  In step 1 each thread
first claims its home parts, costliest first, then any part left, cheapest first: what one
thread leaves, another takes for that window (the order is re-sorted by the events each
part ran lately, as Unison does).  The homes (`_homes`) cut each tier of parts (servers,
leaves, spines: Partition.tiers) in id order into one run of about equal cost per thread,
so a part stays on one core (its packets and queues in that core's cache) and parts that
trade packets and flows (a rack's servers, a pod's switches) mostly share one; they are
remade every HOME_EVERY windows and when the thread count changes.  When the thread
count changes, the region ends at a window's end and a new one
starts.  Built without OpenMP, the same code runs on one thread (`windows_max_threads()`
is 1).
"""
from libc.stdint cimport int64_t, int32_t, int8_t, uint8_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset, memcpy
from cython.parallel cimport parallel, threadid
from rocesim._core.defs cimport (Sim, World, Event, Handoff, Port, Flow, DepMsg, NIL, ERR_NONE, ERR_NOMEM,
                                 EV_FLOW_START)
from rocesim._core.events cimport ev_next, ev_push
from rocesim._core.link cimport handoff_take
from rocesim._core.growth cimport room_for_one, zeroed_lines
from rocesim._core.loop cimport run_loop, STOP_EMPTY, STOP_TIME, STOP_EVENTS, STOP_DEADLOCK
from rocesim._core.monitors cimport monitors_next, monitors_end, windows_monitors
from rocesim._core.barrier cimport (rocesim_barrier, rocesim_barrier_init, rocesim_barrier_destroy,
                                    rocesim_barrier_arrive, rocesim_barrier_release, rocesim_barrier_wait,
                                    rocesim_clock_ns, rocesim_thread_cpu_ns)
from rocesim._core.thread_count cimport (ThreadCount, tc_start, tc_window, tc_period_due, tc_period,
                                         tc_scheduled)

cdef extern from *:
    void __builtin_prefetch(const void* addr) nogil

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #ifdef _OPENMP
    #include <omp.h>
    #define ROCESIM_MAX_THREADS 256
    static int rocesim_team_size(void) { return omp_get_num_threads(); }
    #else
    #define ROCESIM_MAX_THREADS 1
    static int rocesim_team_size(void) { return 1; }
    #endif

    /* What the threads of one call share, each group that several threads touch at once
       on a cache line of its own. */
    typedef struct {
        rocesim_barrier bar;
        _Alignas(64) int action;       /* the serial step's decision, read after the barrier */
        int solo;                      /* the window closing ran on one thread, the others waiting */
        int sample;                    /* the threads note their CPU time at this window's end */
        int team;                      /* the threads of the region */
        int64_t lim;                   /* the window's last picosecond in this call */
        int64_t done;                  /* events run in this call */
        int64_t mark;                  /* wall ns when the last window ended */
    } rocesim_team;

    /* One thread's sums over a window (read by the serial step), and its clocks. */
    typedef struct {
        _Alignas(64) int64_t events;
        int64_t taken;                 /* hand-offs taken */
        int64_t pk_take, pk_run;       /* the pools' use: change by taking, by running */
        int64_t qp_run;
        int flags;
        int64_t spun, slept;           /* ns at the barrier in this region */
        int64_t cpu_mark, spun_mark;   /* CPU ns and ns spun when it last noted them */
        int64_t cpu_seen, spun_seen;   /* ... as the thread count's controller counted them */
    } rocesim_slot;

    static rocesim_slot* rocesim_slots(int n) {
        return (rocesim_slot*) aligned_alloc(64, (size_t) n * sizeof(rocesim_slot));
    }
    /* Claim a part for the turn `stamp`: 1 for the one thread that does. */
    static inline int rocesim_claim(int64_t* claimed, int64_t stamp) {
        int64_t old = __atomic_load_n(claimed, __ATOMIC_RELAXED);
        return old != stamp && __atomic_compare_exchange_n(claimed, &old, stamp, 0, __ATOMIC_RELAXED,
                                                           __ATOMIC_RELAXED);
    }
    """
    int ROCESIM_MAX_THREADS
    ctypedef struct rocesim_team:
        rocesim_barrier bar
        int action
        int solo
        int sample
        int team
        int64_t lim
        int64_t done
        int64_t mark
    ctypedef struct rocesim_slot:
        int64_t events
        int64_t taken
        int64_t pk_take
        int64_t pk_run
        int64_t qp_run
        int flags
        int64_t spun
        int64_t slept
        int64_t cpu_mark
        int64_t spun_mark
        int64_t cpu_seen
        int64_t spun_seen
    int rocesim_team_size() noexcept nogil
    rocesim_slot* rocesim_slots(int n) noexcept nogil
    int rocesim_claim(int64_t* claimed, int64_t stamp) noexcept nogil

cdef enum:
    TEAM_ERROR = 1         # a part's error is set (out of memory, a Python scheme raised)
    TEAM_DEPS = 2          # a part sent dependency messages
    FETCH_AHEAD = 16       # packets of each record a part fetches before it takes any (simai_gpt13b
                           #   on 2 threads: 4 -> 16 took 3% less wall time, 64 no less than 16)
    GO = -1                # the serial step's decision: run the window it opened
    INSIDE = -2            # the slice ends inside the window (else a STOP_* code)
    RESIZE = -3            # run the window it opened on another number of threads
    RESORT_EVERY = 16      # windows between two re-sorts of the parts by cost
    SPIN_NS = 50000        # a thread at the barrier spins this long, then sleeps
    HOME_EVERY = 256       # windows between two shares of the parts among the threads (`_homes`)

cdef struct Call:
    # One call of the window loop, as its threads see it.
    Sim** parts
    int32_t n
    Windows* win
    rocesim_team* tm
    rocesim_slot* slots
    int64_t until
    int64_t max_events
    int32_t most           # the most threads it may run on (slots)


cdef int windows_max_threads() noexcept nogil:
    """How many threads this build can run a window on (1: built without OpenMP)."""
    return ROCESIM_MAX_THREADS


cdef int windows_init(Windows* win, int32_t n, int64_t lookahead) noexcept nogil:
    """The window state of a run in `n` parts; -1 if out of memory.  (The second set of
    hand-off records is made at the first run, when the world's records exist.)"""
    cdef int32_t k
    win.lookahead = lookahead
    win.open_end = -1
    win.order = <int32_t*> malloc(n * sizeof(int32_t))
    win.active = <int32_t*> malloc(n * sizeof(int32_t))
    win.by_tier = <int32_t*> malloc(n * sizeof(int32_t))
    win.home = <int32_t*> malloc(n * sizeof(int32_t))
    win.part = <PartWin*> zeroed_lines(<size_t> n * sizeof(PartWin))
    if win.order == NULL or win.active == NULL or win.by_tier == NULL or win.home == NULL or win.part == NULL:
        return -1
    for k in range(n):
        win.order[k] = k
        win.by_tier[k] = k
        win.home[k] = -1
        win.part[k].start_head = win.part[k].start_tail = -1
    return 0


cdef void windows_free(Windows* win) noexcept nogil:
    cdef int32_t m
    free(win.order)
    free(win.part)
    free(win.active)
    free(win.profile)
    free(win.by_tier)
    free(win.home)
    free(win.noted[0])
    free(win.noted[1])
    free(win.inbox)
    free(win.starts)
    free(win.in_off)
    free(win.in_rec)
    free(win.in_pos)
    free(win.rec_to)
    free(win.tc.schedule)
    win.tc.schedule = NULL
    if win.spare != NULL:
        for m in range(win.n_spare):
            free(win.spare[m].pk)
            free(win.spare[m].hops)
            free(win.spare[m].sack)
        free(win.spare)
    win.order = NULL
    win.part = NULL
    win.home = NULL
    win.spare = NULL


cdef int _sets_init(Sim** parts, int32_t n, Windows* win) noexcept nogil:
    """The second set of hand-off records (empty, for the same ports) and the records'
    places by receiving part; -1 if out of memory."""
    cdef World* w = parts[0].w
    cdef int32_t m, k
    cdef size_t room = w.n_handoff if w.n_handoff > 0 else 1
    win.n_spare = w.n_handoff
    win.spare = <Handoff*> zeroed_lines(room * sizeof(Handoff))
    win.in_off = <int32_t*> calloc(n + 1, sizeof(int32_t))
    win.in_rec = <int32_t*> malloc(room * sizeof(int32_t))
    win.in_pos = <int32_t*> malloc(room * sizeof(int32_t))
    win.rec_to = <int32_t*> malloc(room * sizeof(int32_t))
    if win.spare == NULL or win.in_off == NULL or win.in_rec == NULL or win.in_pos == NULL or win.rec_to == NULL:
        return -1
    for m in range(w.n_handoff):
        win.spare[m].port = w.handoff[m].port
        win.spare[m].peer = w.handoff[m].peer
        win.rec_to[m] = w.node_part[w.ports[w.handoff[m].peer].node]
        win.in_off[win.rec_to[m] + 1] += 1
    for k in range(n):
        win.in_off[k + 1] += win.in_off[k]
    for m in range(w.n_handoff):                    # (records by ascending port id)
        k = win.rec_to[m]
        win.in_pos[m] = win.in_off[k]
        win.in_rec[win.in_off[k]] = m
        win.in_off[k] += 1
    for k in range(n, 0, -1):
        win.in_off[k] = win.in_off[k - 1]
    win.in_off[0] = 0
    win.noted_stride = (w.n_handoff + 15) // 16 * 16
    win.inbox_stride = (n + 7) // 8 * 8
    win.sets[0] = w.handoff
    win.sets[1] = win.spare
    win.cur = 0
    return 0


cdef int _grow_rows(Windows* win, int32_t rows) noexcept nogil:
    """Rows in `noted` and `inbox` for `rows` threads (those there kept); -1 if out of memory."""
    cdef int32_t i
    cdef int64_t j
    cdef void* grown
    cdef size_t row_bytes = <size_t> win.noted_stride * sizeof(int32_t)
    if rows <= win.rows:
        return 0
    for i in range(2):
        grown = zeroed_lines(rows * row_bytes if row_bytes else 64)
        if grown == NULL:
            return -1
        if win.rows:
            memcpy(grown, win.noted[i], win.rows * row_bytes)
        free(win.noted[i])
        win.noted[i] = <int32_t*> grown
    grown = realloc(win.inbox, <size_t> (rows * win.inbox_stride * sizeof(int64_t)))
    if grown == NULL:
        return -1
    win.inbox = <int64_t*> grown
    for j in range(win.rows * win.inbox_stride, rows * win.inbox_stride):
        win.inbox[j] = INT64_MAX
    win.rows = rows
    return 0


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


cdef bint windows_idle(Sim** parts, int32_t n, Windows* win) noexcept nogil:
    """No part has an event left, and nothing is on its way between parts (the monitors
    apart: the network is frozen)."""
    cdef int32_t k
    for k in range(n):
        if parts[k].n_events > 0:
            return False
    return not _handoffs_pending(parts, n, win)


cdef inline int32_t _noted_count(Windows* win, int32_t src, int32_t j, bint take) noexcept nogil:
    """The packets noted in set `src` for the record at place j: the largest count over the
    threads' rows (a slice that ends inside a window can leave a part's smaller count in
    another row).  `take`: every row's count cleared."""
    cdef int32_t* noted = win.noted[src]
    cdef int32_t row, c, most = 0
    for row in range(win.rows):
        c = noted[row * win.noted_stride + j]
        if c:
            if take:
                noted[row * win.noted_stride + j] = 0
            if c > most:
                most = c
    return most


cdef int32_t windows_pending(Windows* win, int32_t r) noexcept nogil:
    """Between calls (or at a window's end): the packets waiting in hand-off record r of the
    current set (World.handoff) for their receiving part."""
    if win.noted[win.cur] == NULL:
        return 0
    return _noted_count(win, win.cur, win.in_pos[r], False)


cdef bint _handoffs_pending(Sim** parts, int32_t n, Windows* win) noexcept nogil:
    """Some packet or dependency message waits for the window's end (between calls)."""
    cdef int32_t k
    cdef Sim* s = parts[0]
    for k in range(s.w.n_handoff):
        if windows_pending(win, k):
            return True
    for k in range(n):
        if parts[k].n_deps:
            return True
    return False


# --- step 1: a part's turn ------------------------------------------------------------

cdef int64_t _prepare(Sim** parts, Windows* win, int32_t k, int32_t src) noexcept nogil:
    """Part k, before anything else it does in a window (or at a window's end, when every
    part takes what is left for it): the hand-offs noted for it in set `src`, in
    ascending port id, onto its wires; then the starts of its children whose last parent
    was in another part.  The hand-offs taken; -1 if out of memory (its error set)."""
    cdef Sim* s = parts[k]
    cdef World* w = s.w
    cdef int32_t* noted = win.noted[src]
    cdef int32_t j, i, child, got, q
    cdef int64_t taken = 0
    cdef Handoff* h
    # First each record's count (kept in row 0 for the copies) and its first packets
    # fetched: written on another core, their lines then come in together rather than one
    # after the other as the copies below need them.
    for j in range(win.in_off[k], win.in_off[k + 1]):
        got = _noted_count(win, src, j, True)
        if got:
            noted[j] = got
            h = &win.sets[src][win.in_rec[j]]
            for q in range(got if got < FETCH_AHEAD else FETCH_AHEAD):
                __builtin_prefetch(&h.pk[q])
    for j in range(win.in_off[k], win.in_off[k + 1]):
        got = noted[j]
        if got:
            noted[j] = 0
            taken += got
            if handoff_take(s, &win.sets[src][win.in_rec[j]], got) < 0:
                s.error = ERR_NOMEM
                return -1
    win.part[k].has_in = 0
    i = win.part[k].start_head
    while i >= 0:
        child = win.starts[2 * i]
        ev_push(s, w.flows[child].released, EV_FLOW_START, child, 0)
        i = win.starts[2 * i + 1]
    win.part[k].start_head = win.part[k].start_tail = -1
    return -1 if s.error != ERR_NONE else taken


cdef void _sends_open(Sim* s, Windows* win) noexcept nogil:
    """Part s's first turn in the open window: the counts of the records it wrote in the
    window before it ran in (taken since) start again from zero."""
    cdef int32_t j
    cdef World* w = s.w
    for j in range(s.n_sent):
        w.ports[s.sent[j]].handoff_n = 0
    s.n_sent = 0
    s.sent_window = win.windows


cdef void _note_sends(Sim** parts, Windows* win, int32_t k, int32_t tid) noexcept nogil:
    """Part k has run on thread `tid`: the records it wrote in the window so far, with their
    counts, noted in the thread's row for their receivers, which have work in the next window
    from the first packet's arrival (a port's hand-offs are in arrival order).  (A slice
    may end inside the window: the part's next turn notes its counts again, larger.)"""
    cdef Sim* s = parts[k]
    cdef World* w = s.w
    cdef int32_t* noted = &win.noted[win.cur][tid * win.noted_stride]
    cdef int64_t* inbox = &win.inbox[tid * win.inbox_stride]
    cdef int32_t j, r, to
    cdef int64_t t
    cdef Port* p
    for j in range(s.n_sent):
        p = &w.ports[s.sent[j]]
        r = p.handoff
        to = win.rec_to[r]
        t = win.sets[win.cur][r].pk[0].time
        if t < inbox[to]:
            inbox[to] = t
        noted[win.in_pos[r]] = p.handoff_n


cdef void _gather(Windows* win, int32_t n) noexcept nogil:
    """The serial step: which parts were handed packets in the window (`has_in`), and the
    earliest of them, their next event if sooner; the threads' rows reset."""
    cdef int32_t k, row
    cdef int64_t t
    cdef int64_t* v
    for k in range(n):
        t = INT64_MAX
        for row in range(win.rows):
            v = &win.inbox[row * win.inbox_stride + k]
            if v[0] < t:
                t = v[0]
            v[0] = INT64_MAX
        if t < INT64_MAX:
            win.part[k].has_in = 1
            if t < win.part[k].next_t:
                win.part[k].next_t = t


cdef void _turn(Call* c, rocesim_slot* me, int32_t k, int32_t tid) noexcept nogil:
    """Part k's turn in the open window, on thread `tid`: it takes what the window before
    left it, and runs to the window's last picosecond."""
    cdef Windows* win = c.win
    cdef Sim* s = c.parts[k]
    cdef int32_t src = 1 - win.cur
    cdef int64_t t, before, p0, q0, got
    if s.sent_window != win.windows:
        _sends_open(s, win)
    if win.part[k].has_in or win.part[k].start_head >= 0:
        p0 = s.pool_used
        got = _prepare(c.parts, win, k, src)
        if got < 0:
            me.flags |= TEAM_ERROR
            return
        me.taken += got
        me.pk_take += s.pool_used - p0
    t = _part_next(s)
    if 0 <= t <= c.tm.lim:
        before, p0, q0 = s.st.events, s.pool_used, s.qp_used
        run_loop(s, c.tm.lim, INT64_MAX)
        before = s.st.events - before
        if win.profiling:
            win.part[k].ran += before      # (+=: a slice may end inside the window, the next goes on)
        win.part[k].cost += before
        me.events += before
        me.pk_run += s.pool_used - p0
        me.qp_run += s.qp_used - q0
        t = _part_next(s)
        _note_sends(c.parts, win, k, tid)
        if s.n_deps:
            me.flags |= TEAM_DEPS
    win.part[k].next_t = t
    if s.error != ERR_NONE or t < 0:
        me.flags |= TEAM_ERROR


cdef void _work(Call* c, rocesim_slot* me, int32_t tid) noexcept nogil:
    """Step 1, thread `tid`'s turns: its home parts (`_homes`), costliest first, then any
    part left, cheapest first (what one thread leaves, another takes, for this window).
    On one thread (no homes made for it) every part, in `active` order."""
    cdef Windows* win = c.win
    cdef int32_t j, k
    cdef bint own_all = win.home_team != c.tm.team
    for j in range(win.n_active):
        k = win.active[j]
        if (own_all or win.home[k] == tid) and rocesim_claim(&win.part[k].claimed, win.stamp):
            _turn(c, me, k, tid)
    for j in range(win.n_active - 1, -1, -1):
        k = win.active[j]
        if rocesim_claim(&win.part[k].claimed, win.stamp):
            _turn(c, me, k, tid)


cdef void windows_set_tiers(Windows* win, int32_t n, const int32_t* tier) noexcept nogil:
    """The parts' tiers (`PartWin.tier`), and the parts ordered by (tier, id)."""
    cdef int32_t j, k, i
    for k in range(n):
        win.part[k].tier = tier[k]
    for j in range(n):                  # a stable insertion sort: tiers come mostly in order
        k = j
        i = j - 1
        while i >= 0 and win.part[win.by_tier[i]].tier > win.part[k].tier:
            win.by_tier[i + 1] = win.by_tier[i]
            i -= 1
        win.by_tier[i + 1] = k
    win.home_team = 0


cdef void _homes(Windows* win, int32_t n, int32_t nt) noexcept nogil:
    """Each part's home thread, for `nt` threads: each tier's parts, in id order, cut into
    `nt` runs of about equal cost (the events they ran lately, plus one).  Parts next to
    each other in id share a thread (the servers of a rack, a pod's switches: who talk
    to each other most), and every tier's work is spread over all threads.  Which thread
    runs a part never changes the results; where the parts that trade packets run does
    change the time: what moves from one core's cache to the other's costs a miss there.
    (simai_gpt13b on two threads, 8 servers and 8 rail leaves, each thread 4 of each, so
    that half the hand-offs cross cores either way: 9.0-9.7 s with servers 0-3 on one
    thread, 10.8-12.1 s with the even servers on one; 10.1-10.5 s as the parts fell to
    the threads before, each keeping the parts it first ran.)"""
    cdef int32_t a = 0, b, j, k
    cdef int64_t total, cum, cost
    while a < n:
        b = a
        total = 0
        while b < n and win.part[win.by_tier[b]].tier == win.part[win.by_tier[a]].tier:
            total += win.part[win.by_tier[b]].cost + 1
            b += 1
        cum = 0
        for j in range(a, b):
            k = win.by_tier[j]
            cost = win.part[k].cost + 1
            win.home[k] = <int32_t> ((2 * cum + cost) * nt // (2 * total))
            cum += cost
        a = b
    win.home_team = nt


# --- step 2: the window's end, on one thread ---------------------------------------------

cdef int _deliver_deps(Sim** parts, int32_t n, Windows* win) noexcept nogil:
    """Apply the dependency messages in (sender part id, append order), whatever order the
    parts ran in; a child whose last parent this was joins its part's list of starts
    (pushed when the part next runs, after its hand-offs, as `_prepare` says); -1 if out
    of memory.  A message's time is t + max(due, L) for a parent that completed at t in
    this window [T, T + L), so t + L >= T + L, the window's end: every start lies at or
    after the end, where every part's clock still is before it (no event runs late), and
    the next window (which begins at the earliest pending event of any part) sees it."""
    cdef int32_t k, c, to
    cdef int64_t i
    cdef Sim* s
    cdef Flow* fl
    cdef DepMsg* m
    win.n_start = 0
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
                if room_for_one(<void**> &win.starts, win.n_start, &win.cap_start, 2 * sizeof(int32_t), 256) < 0:
                    return -1
                win.starts[2 * win.n_start] = c
                win.starts[2 * win.n_start + 1] = -1
                if win.part[to].start_tail >= 0:
                    win.starts[2 * win.part[to].start_tail + 1] = <int32_t> win.n_start
                else:
                    win.part[to].start_head = <int32_t> win.n_start
                win.part[to].start_tail = <int32_t> win.n_start
                win.n_start += 1
                if fl.released < win.part[to].next_t:
                    win.part[to].next_t = fl.released
        s.n_deps = 0
    win.deps_due = False
    return 0


cdef int _flush(Sim** parts, int32_t n, Windows* win) noexcept nogil:
    """At a window's end, every part takes what the window left it (hand-offs, starts), as
    the next window would first; the pools' peaks; -1 if out of memory."""
    cdef int32_t k
    cdef int64_t got, pk = 0, qp = 0
    for k in range(n):
        win.part[k].taken = 0
        if win.part[k].has_in or win.part[k].start_head >= 0:
            got = _prepare(parts, win, k, win.cur)
            if got < 0:
                return -1
            win.part[k].taken = <int32_t> got
            win.handoffs += got
        pk += parts[k].pool_used
        qp += parts[k].qp_used
    _peaks(win, pk, qp)
    win.end_open = False
    return 0


cdef inline void _peaks(Windows* win, int64_t pk, int64_t qp) noexcept nogil:
    """The parts' pools held pk packets and qp queue pairs at a window's end."""
    win.pk_sum, win.qp_sum = pk, qp
    if pk > win.pkt_peak:
        win.pkt_peak = pk
    if qp > win.qp_peak:
        win.qp_peak = qp


cdef void _by_cost(Windows* win, int32_t n) noexcept nogil:
    """Re-sort `order` by the events each part ran lately, costliest first (stable
    insertion sort: the order barely changes between two sorts), and age the costs."""
    cdef int32_t i, j, k
    for i in range(1, n):
        k = win.order[i]
        j = i - 1
        while j >= 0 and win.part[win.order[j]].cost < win.part[k].cost:
            win.order[j + 1] = win.order[j]
            j -= 1
        win.order[j + 1] = k
    for i in range(n):
        win.part[i].cost >>= 1


cdef int _profile(Windows* win, int32_t n) noexcept nogil:
    """Record the window's work per busy part (Core.window_profile); -1 if out of memory."""
    cdef int32_t k
    cdef int64_t* r
    for k in range(n):
        if win.part[k].ran or win.part[k].taken:
            if room_for_one(<void**> &win.profile, win.n_profile, &win.cap_profile, 4 * sizeof(int64_t), 1024) < 0:
                return -1
            r = &win.profile[4 * win.n_profile]
            r[0] = win.windows
            r[1] = k
            r[2] = win.part[k].ran
            r[3] = win.part[k].taken
            win.n_profile += 1
    return 0


cdef void _close(Windows* win, int32_t n) noexcept nogil:
    cdef int32_t k
    if win.profiling:
        for k in range(n):
            win.part[k].ran = 0
    win.open_end = -1
    win.windows += 1
    if win.open_events:
        win.busy_windows += 1
    win.open_events = 0


cdef void _note_cpu(Call* c, int32_t nt) noexcept nogil:
    """Count the threads' CPU work (spinning excluded) since the controller last did."""
    cdef int32_t i
    cdef rocesim_slot* sl
    for i in range(nt):
        sl = &c.slots[i]
        c.win.tc.period_work += (sl.cpu_mark - sl.cpu_seen) - (sl.spun_mark - sl.spun_seen)
        sl.cpu_seen, sl.spun_seen = sl.cpu_mark, sl.spun_mark


cdef inline void _clear(rocesim_slot* sl) noexcept nogil:
    """A thread's sums over a window, zero for the next."""
    sl.events = sl.taken = sl.pk_take = sl.pk_run = sl.qp_run = 0
    sl.flags = 0


cdef int _end(Call* c, int32_t nt) noexcept nogil:
    """Step 2, by the last thread to arrive: count the window's work, apply its dependency
    messages and monitors, close it, choose the threads and open the next window; GO,
    RESIZE, INSIDE or the STOP_* code that ends the call."""
    cdef Windows* win = c.win
    cdef rocesim_team* tm = c.tm
    cdef Sim** parts = c.parts
    cdef int32_t i, k, n = c.n
    cdef int64_t ev = 0, taken = 0, pk_take = 0, pk_run = 0, qp_run = 0, t
    cdef int flags = 0, m = 0
    cdef bint flush
    for i in range(nt):
        ev += c.slots[i].events
        taken += c.slots[i].taken
        pk_take += c.slots[i].pk_take
        pk_run += c.slots[i].pk_run
        qp_run += c.slots[i].qp_run
        flags |= c.slots[i].flags
        _clear(&c.slots[i])
    t = rocesim_clock_ns()
    tc_window(&win.tc, t - tm.mark, ev, 1 if tm.solo else nt)
    tm.mark = t
    tm.done += ev
    win.open_events += ev
    win.handoffs += taken
    if win.end_open:                  # the window before, its hand-offs now taken
        _peaks(win, win.pk_sum + pk_take, win.qp_sum)
        win.end_open = False
    win.pk_sum += pk_run
    win.qp_sum += qp_run
    if tm.sample:
        _note_cpu(c, nt)
    if flags & TEAM_DEPS:
        win.deps_due = True           # (kept when the slice ends inside the window)
    if tm.lim < win.open_end - 1:
        return INSIDE
    _gather(win, n)
    if flags & TEAM_ERROR:
        _flush(parts, n, win)
        return STOP_EMPTY             # the part's error says why
    if not win.deps_due:
        win.n_start = 0               # (the starts listed in the window before are taken)
    elif _deliver_deps(parts, n, win) < 0:    # (also those sent before a slice ended inside it)
        return STOP_EMPTY
    flush = win.profiling or monitors_next(parts[0]) <= tm.lim
    if flush:
        if _flush(parts, n, win) < 0 or (win.profiling and _profile(win, n) < 0):
            return STOP_EMPTY
        if monitors_next(parts[0]) <= tm.lim:
            m = windows_monitors(parts, n, tm.lim)
            win.pk_sum = win.qp_sum = 0     # (a check may act on any part: PAUSE, flush)
            for k in range(n):
                win.part[k].next_t = _part_next(parts[k])
                win.pk_sum += parts[k].pool_used
                win.qp_sum += parts[k].qp_used
        else:
            for k in range(n):
                win.part[k].next_t = _part_next(parts[k])
    else:
        win.end_open = True
    _close(win, n)
    if m != 0:
        return STOP_DEADLOCK if m > 0 else STOP_EMPTY
    if tm.sample:
        tc_period(&win.tc)
    k = tc_scheduled(&win.tc, win.windows)
    if k > 0:
        win.tc.now = k if k < c.most else c.most
    return _open(c, nt)


cdef int _open(Call* c, int32_t nt) noexcept nogil:
    """Open the next window (or go on with the one a slice stopped inside) and list the
    parts it visits; GO, RESIZE (another thread count), or the STOP_* code that ends the
    call, every part having taken what is left for it."""
    cdef Windows* win = c.win
    cdef rocesim_team* tm = c.tm
    cdef Sim** parts = c.parts
    cdef int32_t j, k, n = c.n
    cdef int64_t t, lim
    cdef int stop = GO
    if win.open_end < 0:
        t = monitors_next(parts[0])         # a check is pending work: idle gaps keep it
        for k in range(n):
            if win.part[k].next_t < t:
                t = win.part[k].next_t
        if t == INT64_MAX:
            stop = STOP_EMPTY
        elif t > c.until:
            stop = STOP_TIME
        elif tm.done >= c.max_events:
            stop = STOP_EVENTS
        if stop != GO:
            if win.end_open and _flush(parts, n, win) < 0:
                return STOP_EMPTY
            return stop
        win.open_end = monitors_end(parts[0], t + win.lookahead)
        # the parts write the other set of hand-off records now, while they take this one's
        win.cur = 1 - win.cur
        parts[0].w.handoff = win.sets[win.cur]
    lim = win.open_end - 1 if win.open_end - 1 < c.until else c.until
    if win.tc.now > 1 and (win.windows % HOME_EVERY == 0 or win.home_team != win.tc.now):
        _homes(win, n, win.tc.now)
    if win.tc.now > 1 and win.windows % RESORT_EVERY == 0:
        _by_cost(win, n)
    win.n_active = 0
    for j in range(n):
        k = win.order[j]
        if win.part[k].next_t <= lim or win.part[k].has_in or win.part[k].start_head >= 0:
            win.active[win.n_active] = k
            win.n_active += 1
    tm.lim = lim
    win.stamp += 1
    tm.sample = tc_period_due(&win.tc)
    return GO if win.tc.now == nt else RESIZE


cdef inline void _run_window(Call* c, rocesim_slot* me, int32_t tid) noexcept nogil:
    """This thread's step 1 of a window, and its clocks at the window's end when sampled."""
    _work(c, me, tid)
    if c.tm.sample:
        me.cpu_mark = rocesim_thread_cpu_ns()
        me.spun_mark = me.spun


cdef void _member(Call* c, int32_t tid, int32_t nt) noexcept nogil:
    """One thread's way through the windows of a region (all threads take the same turns,
    but for the windows with one part to run: the last to arrive runs them alone)."""
    cdef rocesim_team* tm = c.tm
    cdef rocesim_slot* me = &c.slots[tid]
    cdef int rnd
    if tid == 0:
        tm.team = nt
    me.spun = me.slept = 0
    me.spun_mark = me.spun_seen = 0
    me.cpu_mark = me.cpu_seen = rocesim_thread_cpu_ns() if c.win.tc.adaptive else 0
    while True:
        _run_window(c, me, tid)
        if rocesim_barrier_arrive(&tm.bar, nt, &rnd):
            tm.solo = False
            tm.action = _end(c, nt)
            while nt > 1 and tm.action == GO and c.win.n_active <= 1:
                tm.solo = True
                _run_window(c, me, tid)
                tm.action = _end(c, nt)
            tm.solo = False
            rocesim_barrier_release(&tm.bar)
        else:
            rocesim_barrier_wait(&tm.bar, rnd, SPIN_NS, &me.spun, &me.slept)
        if tm.action != GO:
            break
    if c.win.tc.adaptive:
        me.cpu_mark = rocesim_thread_cpu_ns()
        me.spun_mark = me.spun


cdef void _restore(Sim** parts, int32_t n, Windows* win) noexcept nogil:
    """Between calls the world's hand-off records are the current ones: the set the parts
    write is World.handoff, the first set (its lists with it)."""
    cdef int32_t r
    cdef int32_t* keep_noted
    cdef Handoff keep
    cdef World* w = parts[0].w
    if win.cur == 1:
        for r in range(w.n_handoff):
            keep = win.sets[0][r]
            win.sets[0][r] = win.sets[1][r]
            win.sets[1][r] = keep
        keep_noted = win.noted[0]
        win.noted[0] = win.noted[1]
        win.noted[1] = keep_noted
        win.cur = 0
    w.handoff = win.sets[0]


cdef int windows_run(Sim** parts, int32_t n, Windows* win, int64_t until, int64_t max_events,
                     int32_t threads, bint adapt) noexcept nogil:
    """Run the parts in windows up to time `until` (inclusive), or until `max_events`
    events have run (checked at window ends), on `threads` threads, or with `adapt` on
    1 to `threads` as thread_count.pxd finds faster (capped at the parts and at
    windows_max_threads()); a STOP_* code (loop.pxd).  On an error (a part's `error` set)
    it returns at the end of the window, every other part having run it."""
    cdef rocesim_team tm
    cdef Call c
    cdef int32_t k, nt, most = n if n < ROCESIM_MAX_THREADS else ROCESIM_MAX_THREADS
    cdef int action
    if win.sets[0] == NULL and _sets_init(parts, n, win) < 0:
        parts[0].error = ERR_NOMEM
        return STOP_EMPTY
    if threads > most:
        threads = most
    if threads < 1:
        threads = 1
    tc_start(&win.tc, threads, adapt)
    c.parts, c.n, c.win, c.tm = parts, n, win, &tm
    c.until, c.max_events, c.most = until, max_events, most
    c.slots = rocesim_slots(most)
    if c.slots == NULL:
        parts[0].error = ERR_NOMEM
        return STOP_EMPTY
    for k in range(most):
        _clear(&c.slots[k])
    rocesim_barrier_init(&tm.bar)
    tm.solo = False
    tm.done = 0
    tm.mark = rocesim_clock_ns()
    # Python may have changed the parts between two calls (routes, faults): look again
    win.pk_sum = win.qp_sum = 0
    for k in range(n):
        win.part[k].next_t = _part_next(parts[k])
        win.pk_sum += parts[k].pool_used
        win.qp_sum += parts[k].qp_used
        if parts[k].n_deps:
            win.deps_due = True
        if win.part[k].next_t < 0:
            action = STOP_EMPTY
            break
    else:
        action = _open(&c, 0)
    while action == GO or action == RESIZE:
        nt = win.tc.now
        if _grow_rows(win, nt) < 0:
            parts[0].error = ERR_NOMEM
            action = STOP_EMPTY
            break
        if nt == 1:
            _member(&c, 0, 1)
        else:
            with parallel(num_threads=nt):
                _member(&c, threadid(), rocesim_team_size())
        if win.tc.adaptive:
            _note_cpu(&c, tm.team)
        action = tm.action
    rocesim_barrier_destroy(&tm.bar)
    free(c.slots)
    _restore(parts, n, win)
    if action != INSIDE:
        return action
    # the slice ended inside the window: the next call goes on with it
    for k in range(n):
        if parts[k].error != ERR_NONE:
            return STOP_EMPTY
    if windows_next(parts, n) == INT64_MAX and not _handoffs_pending(parts, n, win):
        _close(win, n)
        return STOP_EMPTY
    return STOP_TIME
