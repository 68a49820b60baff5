"""The event queue (rocesim/_core/events.pxd) releases events in (time, insertion) order.

Whatever mix of near (calendar), same-bucket and far (beyond the calendar) times it holds:
checked against a plain heap of (time, seq)."""
import heapq

import numpy as np
import pytest

from rocesim._core.debug import event_queue_run


def reference(ops):
    heap, out, k = [], [], 0
    for t in ops:
        if t < 0:
            if heap:
                out.append(heapq.heappop(heap)[1])
        else:
            heapq.heappush(heap, (t, k))
            k += 1
    return out + [heapq.heappop(heap)[1] for _ in range(len(heap))]


@pytest.mark.parametrize("shift,cal_n", [(8, 8192), (10, 8192), (18, 8192), (12, 64), (10, 512), (8, 4096)])
@pytest.mark.parametrize("seed", range(3))
def test_order_matches_a_heap_of_time_and_insertion(seed, shift, cal_n):
    """A run's pattern: pushes at or after the time of the last pop, mostly within a few
    microseconds, with ties, and some far beyond the calendar (timeouts, flow starts).
    Calendars of every size a part may have (64 buckets: one word of bits; 4096: one
    word of the summary; 8192: a run in one part)."""
    rng = np.random.default_rng(seed)
    ops, heap, now, k = [], [], 0, 0
    for _ in range(20_000):
        if rng.random() < 0.45:
            ops.append(-1)
            if heap:
                now = heapq.heappop(heap)[0]
        else:
            span = int(rng.choice([0, 1000, 84_000, 1_000_000, 50_000_000, 10**12]))
            t = now + int(rng.integers(0, span + 1))
            ops.append(t)
            heapq.heappush(heap, (t, k))
            k += 1
    assert event_queue_run(ops, shift, cal_n) == reference(ops)


def test_pushes_never_precede_the_last_pop():
    """Pushes at the time of the last popped event, while far events wait beyond the
    calendar and the calendar is otherwise empty."""
    ops = [10**12, 5, -1, 5, 5, 2_000_000, -1, 5, 10**12, -1, -1, 10**12 + 1]
    assert event_queue_run(ops) == reference(ops)
    assert event_queue_run(ops, 10, 64) == reference(ops)


def test_a_burst_of_simultaneous_events_then_sparse_ones():
    """100,000 events at one time (a collective releasing its flows), drained while new
    ones arrive, then events far apart: the front heap shrinks back after the burst."""
    ops = [1000] * 100_000 + [-1, 1000, 5000] * 50_000 + [-1] * 60_000
    ops += [10**9, -1, 10**9 + 7, 2 * 10**9, -1, -1]
    assert event_queue_run(ops, 8) == reference(ops)
    assert event_queue_run(ops, 12, 128) == reference(ops)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 17, 40])
def test_a_bucket_across_its_chunks(n):
    """A bucket is a chain of chunks of CAL_CHUNK (8) events (events.pxd): in (time, seq)
    order across them, whether they were pushed in order, in reverse, or with ties, around
    a chunk's end."""
    base = 5_000_000                        # one future bucket at shift 20 (1 us wide)
    in_order = [base + i for i in range(n)]
    reverse = in_order[::-1]
    ties = [base + (i % 3) for i in range(n)]
    for times in (in_order, reverse, ties):
        ops = times + [-1] * 3 + [base + n, base + 3] + [-1] * (n + 2)   # (never before the last pop)
        assert event_queue_run(ops, 20, 64) == reference(ops)


def test_the_calendar_grows_gives_back_and_keeps_every_chunk():
    """More pending events than the calendar's first chunks hold (64 buckets: 16 chunks of
    8), in many buckets and in one: the chunks grow; drained, every chunk is on the free
    list again (ten times the first chunks: kept); after a burst of 100,000 at one time
    the memory goes back to what a fresh queue holds (not the burst's 3.2 MB)."""
    spread = [1_000 * (1 + i % 60) + i // 60 for i in range(600)]        # 60 buckets of 1 ns
    ops = spread + [-1] * 300 + [70_000 + i for i in range(50)]
    order, mem = event_queue_run(ops, 10, 64, report=True)
    assert order == reference(ops)
    assert mem["chunks"] > 16 and mem["chunks_in_use"] == 0 and mem["chunks_free"] == mem["chunks"]
    _, fresh = event_queue_run([], 10, 64, report=True)
    burst = [2_000] * 100_000 + [-1] * 100_000 + [9_000, -1, 20_000]
    order, mem = event_queue_run(burst, 10, 64, report=True)
    assert order == reference(burst)
    assert mem["chunks_free"] == mem["chunks"] == fresh["chunks"]
    assert mem["bytes"] < 100_000 * 32 / 4
