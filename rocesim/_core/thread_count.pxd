# cython: language_level=3
"""How many threads a run in parts uses (`threads: auto`), decided between windows.

The outputs do not depend on the thread count (window.pyx), so the window loop may change
it whenever that is faster.  It measures over periods (at least PERIOD_NS of wall time
and PERIOD_WINDOWS windows) two things:

* the rate: events run per wall second.  On one thread a window's wall time is its
  events' cost, whatever the phase of the run, so the rate on one thread is the cost of
  an event (and the share of a core the machine gives); on m threads it is that times
  the speed-up the windows allow now;
* `got`: how many cores' worth of work the threads did, their CPU time less the time they
  spun at the barrier, over the wall time.  On one thread, the share of a core it gets;
  on m threads, m when each had work and a core all the time.

Then:

* on m > 1 threads, when the rate (a moving average over the periods) is not KEEP_PCT %
  of the rate on m - 1 threads (when the run last ran on them: their average over that
  stay), the run goes on with m - 1.  A thread that does not get a core (another job
  runs there) leaves the others waiting at every window, and windows too thin to pay for
  a barrier gain nothing: either way the rate says so;
* on m threads, after UP_NS of wall time on them in which they were busy (`got` at least
  BUSY_PCT % of m: on one thread, it had a whole core), it tries m + 1, up to the threads
  asked, if the machine had a core to spare: its CPUs idle FREE_PCT % of a core or more
  since the controller last looked (over UP_NS at least: the kernel counts idle time in
  10 ms ticks; /proc/stat, barrier.pxd; where the machine does not say, it tries).  A
  thread's share of a core over 20 ms is no proof of a free one: beside one busy process
  per core, a thread often runs a few time slices whole, and a try then finds no core
  (HPCC's run in benchmarks/test_parallel.py -k loaded took 4.8 s instead of 4.1-4.4 s
  with two such tries).  A try that fails, or a core not free, waits before the controller
  looks again, 4x longer each time (FIRST_HOLD periods, up to MAX_HOLD), so that on a
  loaded machine, or a run whose windows are thin, the tries cost little.  A try that
  holds resets the wait.

`threads: auto` starts on one thread (a run too short to measure takes no risk) and moves
between 1 and the cores the process may use; a fixed number is that number throughout.
"""
from libc.stdint cimport int64_t, int32_t
from rocesim._core.barrier cimport rocesim_clock_ns, rocesim_machine_idle_ns

cdef enum:
    PERIOD_NS = 1000000     # a period of measurement: at least 1 ms of wall time ...
    PERIOD_WINDOWS = 4      # ... and 4 windows
    UP_NS = 20000000        # busy this long on m threads (several time slices): try m + 1
    FIRST_HOLD = 2          # periods to wait after a failed try, at first
    MAX_HOLD = 1024         # ... growing 4x per failed try up to this
    MAX_COUNT = 256         # the most threads measured (window.pyx: ROCESIM_MAX_THREADS)
    KEEP_PCT = 110          # m threads must run 10% more events per second than m - 1 did
    BUSY_PCT = 85           # every thread busy (85% of its wall time at work)
    FREE_PCT = 50           # a core to spare: the machine idle half a core's time or more


cdef struct ThreadCount:
    int32_t cap              # the most threads: the number asked (capped at the parts and the build)
    bint adaptive            # `threads: auto`: between 1 and cap, as measured; else cap throughout
    int32_t now              # the threads the open window runs on
    int64_t period_wall      # the period so far: ns of wall time,
    int64_t period_work      #   ns of the threads' CPU time, spinning excluded,
    int64_t period_events    #   events run,
    int32_t period_windows   #   windows
    int64_t stay_wall        # the same since the run came to `now` threads
    int64_t stay_work
    int64_t stay_events
    double recent            # events per wall ns on `now` threads: a moving average of the periods
    double rate[MAX_COUNT + 1]   # per thread count: events per wall ns over its last stay (0: never)
    int32_t hold             # periods left before trying one thread more
    int32_t backoff          # the hold after the next failed try
    bint trying              # the stay is a try of one thread more
    double threads_wall      # sum over the windows of threads x wall ns: the mean thread count
    int64_t wall             # sum of the windows' wall ns
    double count_wall[MAX_COUNT + 1]     # per thread count: the wall ns, events and number
    int64_t count_events[MAX_COUNT + 1]  #   of the windows run on it (debug.thread_rates)
    int64_t count_windows[MAX_COUNT + 1]
    int64_t idle_at          # the machine's idle CPU ns when the controller last looked (-1: it
    int64_t idle_clock       #   does not say), and the wall clock then (ns)
    int64_t (*machine_idle)() noexcept nogil   # how it looks (debug.busy_machine replaces it)
    int32_t* schedule        # debug.thread_schedule: the counts to cycle through, a window
    int32_t n_schedule       #   `every` windows each (overrides the measurement; NULL: none)
    int32_t every


cdef inline void _tc_look(ThreadCount* tc) noexcept nogil:
    """Note the machine's idle time and the clock: a core to spare is measured from here."""
    tc.idle_at = tc.machine_idle()
    tc.idle_clock = rocesim_clock_ns()


cdef inline int _tc_core_free(ThreadCount* tc) noexcept nogil:
    """1 if the machine had a core to spare since the controller last looked (FREE_PCT %
    of a core idle), 0 if not (looked at again from now), -1 if it is too soon to tell
    (under UP_NS: 10 ms ticks).  1 where the machine does not say."""
    cdef int64_t now, idle
    cdef bint free
    if tc.idle_at < 0:
        return 1
    now = rocesim_clock_ns()
    if now - tc.idle_clock < UP_NS:
        return -1
    idle = tc.machine_idle()
    if idle < 0:
        return 1
    free = 100 * (idle - tc.idle_at) >= FREE_PCT * (now - tc.idle_clock)
    tc.idle_at, tc.idle_clock = idle, now
    return 1 if free else 0


cdef inline void _tc_arrive(ThreadCount* tc, int32_t m) noexcept nogil:
    """The run goes on with m threads: a new stay."""
    tc.now = m
    tc.stay_wall = tc.stay_work = tc.stay_events = 0
    tc.recent = 0.0
    if tc.adaptive:
        _tc_look(tc)


cdef inline void tc_start(ThreadCount* tc, int32_t cap, bint adaptive) noexcept nogil:
    """A call of the window loop on up to `cap` threads (>= 1), adapting or not; the
    measurements carry over from the call before when the same was asked."""
    cdef int32_t k
    if cap > MAX_COUNT:
        cap = MAX_COUNT
    if cap != tc.cap or adaptive != tc.adaptive or tc.now < 1:
        tc.cap, tc.adaptive = cap, adaptive
        if tc.machine_idle == NULL:
            tc.machine_idle = rocesim_machine_idle_ns
        _tc_arrive(tc, 1 if adaptive else cap)
        tc.period_wall = tc.period_work = tc.period_events = 0
        tc.period_windows = 0
        tc.hold = 0
        tc.backoff = FIRST_HOLD
        tc.trying = False
        for k in range(MAX_COUNT + 1):
            tc.rate[k] = 0.0


cdef inline void tc_window(ThreadCount* tc, int64_t wall_ns, int64_t events, int32_t used) noexcept nogil:
    """A window ran `events` events in `wall_ns` on tc.now threads, of which `used` ran
    parts (1 when the window had one part to run: the others waited)."""
    tc.period_wall += wall_ns
    tc.period_events += events
    tc.period_windows += 1
    tc.threads_wall += <double> used * wall_ns
    tc.wall += wall_ns
    tc.count_wall[tc.now] += wall_ns
    tc.count_events[tc.now] += events
    tc.count_windows[tc.now] += 1


cdef inline bint tc_period_due(ThreadCount* tc) noexcept nogil:
    """The window about to open ends a period: its threads note their CPU time at its end."""
    return tc.adaptive and tc.period_wall >= PERIOD_NS and tc.period_windows >= PERIOD_WINDOWS


cdef inline int32_t tc_period(ThreadCount* tc) noexcept nogil:
    """A period ended (its CPU work, spinning excluded, counted in `period_work`): the
    threads for the next windows (the rules of the module's docstring)."""
    cdef int32_t m = tc.now
    cdef int free
    cdef double r = <double> tc.period_events / tc.period_wall if tc.period_wall > 0 else 0.0
    tc.stay_wall += tc.period_wall
    tc.stay_work += tc.period_work
    tc.stay_events += tc.period_events
    tc.period_wall = tc.period_work = tc.period_events = 0
    tc.period_windows = 0
    tc.recent = r if tc.recent == 0.0 else 0.75 * tc.recent + 0.25 * r
    tc.rate[m] = <double> tc.stay_events / tc.stay_wall if tc.stay_wall > 0 else 0.0
    if m > 1 and 100 * tc.recent < KEEP_PCT * tc.rate[m - 1]:
        if tc.trying:
            tc.backoff = tc.backoff * 4 if tc.backoff * 4 < MAX_HOLD else MAX_HOLD
        tc.hold = tc.backoff
        tc.trying = False
        _tc_arrive(tc, m - 1)
        return m - 1
    if tc.trying:
        tc.backoff = FIRST_HOLD
        tc.trying = False
    if tc.hold > 0:
        tc.hold -= 1
    elif m < tc.cap and tc.stay_wall >= UP_NS and 100 * tc.stay_work >= BUSY_PCT * m * tc.stay_wall:
        free = _tc_core_free(tc)
        if free == 1:
            tc.trying = True
            _tc_arrive(tc, m + 1)
            return m + 1
        if free == 0:                       # no core to spare: wait, as after a failed try
            tc.hold = tc.backoff
            tc.backoff = tc.backoff * 4 if tc.backoff * 4 < MAX_HOLD else MAX_HOLD
    return m


cdef inline int32_t tc_scheduled(ThreadCount* tc, int64_t window) noexcept nogil:
    """debug.thread_schedule's count for window number `window` (0: no schedule)."""
    if tc.n_schedule == 0:
        return 0
    return tc.schedule[(window // tc.every) % tc.n_schedule]
