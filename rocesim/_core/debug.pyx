# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Test support for the core: not API, and nothing a run needs.

These hooks build states a run never makes, or steer what must not change the results, so
that the tests can check the parallel core's invariants (issue 20; docs/parallel_core.md)
and the event queue on its own.  They reach a `Core`'s C attributes through engine.pxd and
stay out of its public face; the supported inspection of a run in parts is
`Core.window_stats`, `Core.window_profile` and `Core.cut_ports`.
"""
import numpy as np
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset
from rocesim._core.defs cimport Sim, World, Event
from rocesim._core.events cimport ev_init, ev_free, ev_next, ev_pop, ev_push, ev_bytes, CAL_N
from rocesim._core.engine cimport Core, _counters
from rocesim._core.thread_count cimport MAX_COUNT


def add_empty_part(Core core):
    """One more part, with no events and no flows of its own, so that the readbacks'
    aggregation over parts can be checked (issue 20, stage 1); such a Core does not run."""
    core._add_part()


def split_receivers(Core core):
    """Receivers keep their own records (`World.flow_rx`), as in a run in parts, where with
    one part the receiver uses its sender's queue pair (issue 20, stage 2); before the run
    starts.  Outputs must not change."""
    if core.stats()["events"] or core.w.flow_rx != NULL:
        raise RuntimeError("split_receivers: only once, before the run")
    core._alloc_flow_rx()


def part_order(Core core, str order, int seed=0):
    """The order the window loop visits the parts in: "forward", "reverse" or "shuffle"
    (seeded).  Results must not depend on it: parts share no state but the hand-offs taken
    at a window's end."""
    cdef int32_t k, n = core.w.n_parts
    if n == 1:
        return
    if order == "forward":
        perm = np.arange(n)
    elif order == "reverse":
        perm = np.arange(n)[::-1]
    elif order == "shuffle":
        perm = np.random.default_rng(seed).permutation(n)
    else:
        raise ValueError(f"part_order: forward, reverse or shuffle, not {order!r}")
    for k in range(n):
        core.win.order[k] = perm[k]


def thread_schedule(Core core, counts, int32_t every=1):
    """A run in parts runs window i on counts[(i // every) % len(counts)] threads (capped at
    its parts and at what the build runs), whatever `Core.run` is asked: the thread count
    changes during the run, between windows, as `threads: auto` changes it.  Results must
    not change."""
    cdef int32_t k
    cdef int32_t* buf
    counts = [int(c) for c in counts]
    if core.w.n_parts == 1 or not counts or min(counts) < 1 or every < 1:
        raise ValueError("thread_schedule: a run in parts, counts >= 1, every >= 1")
    buf = <int32_t*> malloc(len(counts) * sizeof(int32_t))
    if buf == NULL:
        raise MemoryError()
    for k in range(len(counts)):
        buf[k] = counts[k]
    free(core.win.tc.schedule)
    core.win.tc.schedule, core.win.tc.n_schedule, core.win.tc.every = buf, len(counts), every


def thread_rates(Core core):
    """Per thread count the windows ran on so far: {count: (wall seconds, events,
    windows)}, the wall time from the end of the window before to the end of this one (its
    barrier and closing step included; a window a slice ended inside counts in each call
    that ran some of it).  With `thread_schedule` alternating the counts every few
    windows, the ratio of two counts' events per wall second is their speed-up measured
    over the same stretch of the run, which a machine whose speed drifts over minutes
    moves least (benchmarks/threads_interleaved.py)."""
    cdef int32_t k
    return {k: (core.win.tc.count_wall[k] / 1e9, int(core.win.tc.count_events[k]), int(core.win.tc.count_windows[k]))
            for k in range(1, MAX_COUNT + 1) if core.win.tc.count_wall[k] > 0}


cdef int64_t _never_idle() noexcept nogil:
    return 0


def busy_machine(Core core):
    """`threads: auto` sees a machine with no core to spare (its idle time never grows):
    a run in parts then stays on one thread.  Results must not change."""
    if core.w.n_parts == 1:
        raise ValueError("busy_machine: a run in parts")
    core.win.tc.machine_idle = _never_idle


def part_stats(Core core, int32_t k):
    """The counters of part k alone (Core.stats aggregates these)."""
    if not 0 <= k < core.w.n_parts:
        raise IndexError(f"part {k} of {core.w.n_parts}")
    return _counters(&core.w.parts[k], 1)


def receive_records_in_use(Core core):
    """Receive records held over the parts (0 with one record per flow)."""
    return sum(core.w.parts[k].rx_used for k in range(core.w.n_parts))


def event_queue_run(ops, int shift=10, int cal_n=CAL_N, bint report=False):
    """Drive a fresh event queue (events.pxd) through `ops`: each op is a time in ps (push
    an event at it; times must not precede the last pop, as in a run) or -1 (pop the
    earliest), with `cal_n` buckets of 2**shift ps.  Returns the push indices in the order
    their events left, then those of what remained, in order; with `report`, also a dict
    of the drained queue's memory: bytes (ev_bytes), chunks, chunks_in_use and
    chunks_free (the length of the calendar's free list)."""
    cdef World world
    cdef Sim* s
    cdef int64_t k = 0
    cdef int32_t c
    out = []
    if cal_n < 64 or cal_n > CAL_N or cal_n & (cal_n - 1):
        raise ValueError("cal_n: a power of two, 64 .. 8192")
    memset(&world, 0, sizeof(World))
    s = <Sim*> calloc(1, sizeof(Sim))
    if s != NULL:
        s.w = &world
    if s == NULL or ev_init(s, shift, cal_n) < 0:
        ev_free(s) if s != NULL else None
        free(s)
        raise MemoryError()
    try:
        for t in ops:
            if t < 0:
                if s.n_events and ev_next(s) != NULL:
                    out.append(ev_pop(s).target)
            else:
                ev_push(s, t, 0, <int32_t> k, 0)
                k += 1
        while s.n_events:
            if ev_next(s) == NULL:
                raise MemoryError()
            out.append(ev_pop(s).target)
        if s.error:
            raise MemoryError()
        if not report:
            return out
        n_free, c = 0, s.cal_free
        while c >= 0 and n_free <= s.cal_chunks:
            n_free += 1
            c = s.cal_link[c]
        return out, dict(bytes=ev_bytes(s), chunks=s.cal_chunks, chunks_in_use=s.cal_used,
                         chunks_free=n_free)
    finally:
        ev_free(s)
        free(s)
