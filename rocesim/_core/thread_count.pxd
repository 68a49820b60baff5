# cython: language_level=3
"""How many threads a run in parts uses (`threads: auto`), decided between windows.

The outputs do not depend on the thread count (window.pyx), so the window loop may change
it whenever that is faster.  It measures, over periods of about PERIOD_NS of wall time,
how many cores' worth of work its threads did: their CPU time, less the time they spun at
the barrier, over the period's wall time (`got`).  On an idle machine with fat windows
m threads get close to m; a thread that does not get a core (another job runs there)
leaves the others waiting, and windows too thin to pay for a barrier leave them spinning
or asleep, and `got` falls.  So:

* on m threads, when `got` is not KEEP_PCT % of what m - 1 threads got when they last ran,
  the run goes on with m - 1;
* when every thread of the m was busy (`got` >= BUSY_PCT % of m: each had work and a core), it
  tries m + 1, up to the threads asked; a try that fails waits before the next one, 4x
  longer each time (up to MAX_HOLD periods), so that on a loaded machine, or a run whose
  windows are thin, the tries cost little.

On one thread `got` is its CPU time over wall time: below BUSY_PCT %, the machine does not give
it a whole core, and a second thread would fare worse still.  `threads: auto` starts on
one thread (a run too short to measure takes no risk) and moves between 1 and the cores
the process may use; a fixed number is that number throughout.
"""
from libc.stdint cimport int64_t, int32_t

cdef enum:
    PERIOD_NS = 1000000     # a period of measurement: at least 1 ms of wall time ...
    PERIOD_WINDOWS = 4      # ... and 4 windows
    FIRST_HOLD = 2          # periods to wait after a failed try, at first
    MAX_HOLD = 1024         # ... growing 4x per failed try up to this
    MAX_COUNT = 256         # the most threads measured (window.pyx: ROCESIM_MAX_THREADS)
    KEEP_PCT = 110          # m threads must get 10% more work done than m - 1 did
    BUSY_PCT = 85           # every thread busy (85% of its wall time at work): try one more


cdef struct ThreadCount:
    int32_t cap              # the most threads: the number asked (capped at the parts and the build)
    bint adaptive            # `threads: auto`: between 1 and cap, as measured; else cap throughout
    int32_t now              # the threads the open window runs on
    int64_t period_wall      # ns of wall time in the period so far
    int64_t period_work      # ns of the threads' CPU time in it, spinning excluded
    int32_t period_windows
    int32_t hold             # periods left before trying one thread more
    int32_t backoff          # the hold after the next failed try
    bint trying              # the period is the first on one thread more
    double gain[MAX_COUNT + 1]   # per thread count: `got` when it last ran (0: never)
    double threads_wall      # sum over the windows of threads x wall ns: the mean thread count
    int64_t wall             # sum of the windows' wall ns
    int32_t* schedule        # debug.thread_schedule: the counts to cycle through, a window
    int32_t n_schedule       #   `every` windows each (overrides the measurement; NULL: none)
    int32_t every


cdef inline void tc_start(ThreadCount* tc, int32_t cap, bint adaptive) noexcept nogil:
    """A call of the window loop on up to `cap` threads (>= 1), adapting or not; the
    measurements carry over from the call before when the same was asked."""
    cdef int32_t k
    if cap > MAX_COUNT:
        cap = MAX_COUNT
    if cap != tc.cap or adaptive != tc.adaptive or tc.now < 1:
        tc.cap, tc.adaptive = cap, adaptive
        tc.now = 1 if adaptive else cap
        tc.period_wall = tc.period_work = 0
        tc.period_windows = 0
        tc.hold = 0
        tc.backoff = FIRST_HOLD
        tc.trying = False
        for k in range(MAX_COUNT + 1):
            tc.gain[k] = 0.0


cdef inline void tc_window(ThreadCount* tc, int64_t wall_ns) noexcept nogil:
    """A window ran on tc.now threads in `wall_ns`."""
    tc.period_wall += wall_ns
    tc.period_windows += 1
    tc.threads_wall += <double> tc.now * wall_ns
    tc.wall += wall_ns


cdef inline bint tc_period_due(ThreadCount* tc) noexcept nogil:
    """The window about to open ends a period: its threads note their CPU time at its end."""
    return tc.adaptive and tc.period_wall >= PERIOD_NS and tc.period_windows >= PERIOD_WINDOWS


cdef inline int32_t tc_period(ThreadCount* tc) noexcept nogil:
    """A period ended (its CPU work, spinning excluded, counted in `period_work`): the
    threads for the next windows (the rules of the module's docstring)."""
    cdef int32_t m = tc.now, nxt = tc.now
    cdef double got = <double> tc.period_work / tc.period_wall if tc.period_wall > 0 else 0.0
    tc.gain[m] = got
    if m > 1 and 100 * got < KEEP_PCT * tc.gain[m - 1]:
        if tc.trying:
            tc.backoff = tc.backoff * 4 if tc.backoff * 4 < MAX_HOLD else MAX_HOLD
        tc.hold = tc.backoff
        nxt = m - 1
    else:
        if tc.trying:
            tc.backoff = FIRST_HOLD
        if tc.hold > 0:
            tc.hold -= 1
        elif m < tc.cap and 100 * got >= BUSY_PCT * m:
            nxt = m + 1
    tc.trying = nxt > m
    tc.period_wall = tc.period_work = 0
    tc.period_windows = 0
    return nxt


cdef inline int32_t tc_scheduled(ThreadCount* tc, int64_t window) noexcept nogil:
    """debug.thread_schedule's count for window number `window` (0: no schedule)."""
    if tc.n_schedule == 0:
        return 0
    return tc.schedule[(window // tc.every) % tc.n_schedule]
