"""The run loop: the core runs in slices of simulated time, and between two slices Python
moves the progress line, takes samples, installs rerouted tables, watches for a stall
and lets Ctrl-C end the run with the results so far.  Nothing here runs per packet.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from rocesim._core.engine import MAX_THREADS, STOP_DEADLOCK, STOP_EMPTY, STOP_EVENTS, STOP_TIME

NEVER = 2**63 - 1


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity; all the machine's where the
    system does not say): what `threads: auto` means."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):          # not Linux
        return os.cpu_count() or 1


def choose_threads(asked, n_parts: int, python_scheme: bool = False) -> tuple[int, str | None]:
    """(threads a run takes, and a one-line note when it takes fewer than a number asked).

    `asked` is 'auto' or a whole number >= 1 (checked by `config.THREADS`): at most one
    thread per part, `MAX_THREADS` of this build, the cores this process may use
    (`available_cores`: more would only wait for each other) and 1 for a scheme written in
    Python (its callbacks take the GIL).  'auto' is capped the same way without a note (the
    core then runs on as many of them as pay, measured as it goes); a number above what runs
    gets the reason."""
    cores = available_cores()
    cap = 1 if python_scheme else max(1, min(n_parts, MAX_THREADS, cores))
    if asked == "auto":
        return cap, None
    if asked <= cap:
        return asked, None
    if python_scheme:
        return 1, "a scheme written in Python runs on 1 thread"
    if asked > n_parts and n_parts <= min(MAX_THREADS, cores):
        return cap, f"{asked} threads asked, {_parts(n_parts)}: running {cap}"
    if MAX_THREADS == 1:
        return 1, "built without OpenMP: running 1 thread"
    if MAX_THREADS <= cores:
        return cap, f"this build runs at most {MAX_THREADS} threads: running {cap}"
    return cap, f"{asked:,} threads asked, this process may use {cores} core{'' if cores == 1 else 's'}: running {cap}"


def _parts(n: int) -> str:
    return f"{n} part" + ("" if n == 1 else "s")


@dataclass
class RunEnd:
    """How a run ended: the core's last status, and whether it stalled (`frozen_clock`:
    {at_ns, events} when simulated time stood still, else None), was interrupted (Ctrl-C) or
    failed (a scheme written in Python raised `failure`)."""

    status: int
    stalled: bool = False
    frozen_clock: dict | None = None
    interrupted: bool = False
    failure: BaseException | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0


class RunLoop:
    """One run of `core` to `t_stop` in slices of `t_slice` (or `events_per_slice` events).

    `reroutes`: (time, alive ports) when the routing tables change, applied by
    `set_routes(core, alive)`; `sampler` takes samples at its times; `progress` (a
    RunProgress or None) is updated after every slice; the core runs each slice on
    `threads` threads, or with `adapt` (`threads: auto`) on 1 to `threads`, as many as
    run it faster (`choose_threads`: the results are the same for any number)."""

    def __init__(self, core, t_stop, t_slice, events_per_slice, *, sampler=None, reroutes=(), set_routes=None,
                 progress=None, n_nodes=0, deadlock_threshold=0, threads=1, adapt=False):
        self.core, self.t_stop, self.t_slice, self.events_per_slice = core, t_stop, t_slice, events_per_slice
        self.sampler, self.reroutes, self.set_routes = sampler, list(reroutes), set_routes
        self.progress, self.n_nodes, self.deadlock_threshold = progress, n_nodes, deadlock_threshold
        self.threads, self.adapt = threads, adapt

    def run(self) -> RunEnd:
        core = self.core
        wall0, cpu0 = time.perf_counter(), time.process_time()
        end = RunEnd(STOP_EMPTY)
        watch = StallWatch(self.n_nodes)
        try:
            end.status, end.stalled = self._slices(watch)
        except KeyboardInterrupt:
            end.interrupted = True
        except Exception as e:      # a scheme written in Python raised (Core.run re-raises it)
            end.failure = e
        if (end.status == STOP_EMPTY and not end.interrupted and end.failure is None
                and core.stats()["flows_done"] < self.n_nodes):
            end.stalled = True       # no event left, flows unfinished: nothing will ever move
        if watch.cause == "frozen clock":
            at_ps, events = watch.clock
            end.frozen_clock = {"at_ns": at_ps / 1000, "events": core.stats()["events"] - events}
        if end.stalled:
            # which PFC cycles hold it, detection on or off: one look, now, costs nothing
            core.deadlocks_at_stall(self.deadlock_threshold)
        if self.progress is not None:
            self.progress.close({**core.stats(), **core.thread_stats()})
        end.wall_s, end.cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
        return end

    def _slices(self, watch) -> tuple[int, bool]:
        """(the core's status when the run ended, whether it stalled: `watch`, a StallWatch,
        says why)."""
        core, sampler, t_stop = self.core, self.sampler, self.t_stop
        while True:
            until = t_stop if sampler is None else min(t_stop, sampler.next)
            reroute_at = self.reroutes[0][0] if self.reroutes else NEVER
            until = min(until, reroute_at)
            nxt = core.next_event_ps
            slice_end = min(until, nxt + self.t_slice) if nxt >= 0 else until
            status = core.run(slice_end, self.events_per_slice, self.threads, self.adapt)
            if status == STOP_TIME and slice_end < until:
                status = STOP_EVENTS                 # only the slice ended: carry on
            if self.progress is not None:
                self.progress.update({**core.stats(), **core.thread_stats()})
            if status != STOP_EMPTY and watch.stalled(core.stats()):
                return status, True
            hit = False
            if status == STOP_TIME and until == reroute_at:
                self.set_routes(core, self.reroutes.pop(0)[1])
                hit = True
            if sampler is not None and status == STOP_TIME and until == sampler.next:
                sampler.take(until)
                hit = True
            if hit and until < t_stop:
                continue
            if status in (STOP_EMPTY, STOP_TIME, STOP_DEADLOCK):
                return status, False


class StallWatch:
    """Ends a run that can make no more progress, checked between slices (so it costs
    nothing), for one of two reasons (`cause`):

    * "idle": no flow finished and no byte delivered for `limit_ps` of simulated time (a
      PFC deadlock, or flows a scheme never lets send), while only timers keep the clock
      moving;
    * "frozen clock": simulated time did not move over `frozen_events` events (a scheme
      written in Python that re-arms a timer with zero delay: the clock would never move
      again).  The bound: at one instant each flow or compute step can start, end a compute
      step and fire its retransmission, ACK and scheme timers (a few each), and each port
      can end one transmission and deliver one packet (a frame takes more than a
      picosecond); `EVENTS_PER_NODE` per flow or compute step and `EVENTS_FLOOR` (two per
      port of a network of five million ports) are well above what a real instant holds,
      and the floor is a few CPU-seconds even with a Python callback per event.
    """

    limit_ps = 10**12          # one simulated second
    EVENTS_PER_NODE = 16
    EVENTS_FLOOR = 10**7

    def __init__(self, n_nodes: int = 0):
        self.mark = None
        self.since = 0
        self.frozen_events = self.EVENTS_FLOOR + self.EVENTS_PER_NODE * n_nodes
        self.clock = None          # (simulated time, events) when the clock last moved
        self.cause = None

    def stalled(self, st) -> bool:
        if self.clock is None or st["sim_time_ps"] != self.clock[0]:
            self.clock = (st["sim_time_ps"], st["events"])
        elif st["events"] - self.clock[1] >= self.frozen_events:
            self.cause = "frozen clock"
            return True
        key = (st["flows_done"], st["data_bytes_delivered"])
        if key != self.mark:
            self.mark, self.since = key, st["sim_time_ps"]
            return False
        if st["sim_time_ps"] - self.since >= self.limit_ps:
            self.cause = "idle"
            return True
        return False
