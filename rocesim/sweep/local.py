"""A pool of worker processes on this machine that can be stopped at once.

Why not `concurrent.futures.ProcessPoolExecutor`: it cannot cancel a running job, keeps
starting queued ones while it shuts down, and its workers outlive a killed parent.  Here
each worker is a spawned process with its own pipe; the parent hands it one run at a
time, and on Ctrl-C or SIGTERM terminates every worker and starts nothing more.
Workers ignore SIGINT (a terminal's Ctrl-C reaches the whole process group: the
parent alone decides), and die with the parent: PR_SET_PDEATHSIG on Linux, and a
thread that watches the parent's pid everywhere.
"""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from multiprocessing.connection import wait

import rocesim.sweep.run_folder as run_folder

POLL_S = 0.2           # how often the parent looks at its workers (and the progress line)


class Interrupted(Exception):
    """The sweep was asked to stop (Ctrl-C or SIGTERM); `signum` says which."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def catch_stop_signals(handler) -> dict:
    """Install `handler` for SIGINT and SIGTERM; returns the old handlers to restore
    (none when not in the main thread, where Python allows no signal handlers: there the
    caller's own KeyboardInterrupt handling applies)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:         # the parent died before prctl took effect
        os._exit(1)

    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent_pid:
                os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _worker(conn, parent_pid: int, root: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent_pid)
    while True:
        try:
            run = conn.recv()
        except EOFError:
            return
        if run is None:
            return
        try:
            outcome = run_folder.run_one(run, root)
        except Exception:  # noqa: BLE001 - run_one records the run's and the file system's failures; a bug here too
            outcome = run_folder.record_failure(root, run, traceback.format_exc())
        conn.send(outcome)


class _Worker:
    def __init__(self, ctx, root):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, os.getpid(), root), daemon=True)
        # born ignoring SIGINT (an ignored signal survives exec, and Python then keeps it
        # ignored), so that a Ctrl-C while the worker starts up prints no traceback there
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            self.proc.start()
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        child.close()
        self.run = None
        self.started = 0.0


def run_local(runs, root: str, processes: int, on_result, on_tick=lambda running: None) -> None:
    """Run `runs` on `processes` worker processes; `on_result(outcome)` as each ends.

    Raises Interrupted on SIGINT/SIGTERM after terminating every worker (finished runs
    stay in place; the running ones leave only temporary folders).
    """
    if not runs:
        return
    ctx = mp.get_context("spawn")
    pending = deque(runs)
    workers: list[_Worker] = []

    def stop(signum, frame):
        raise Interrupted(signum)

    old = catch_stop_signals(stop)
    try:
        for _ in range(min(processes, len(runs))):
            workers.append(_Worker(ctx, root))
        while pending or any(w.run is not None for w in workers):
            for w in workers:
                if w.run is None and pending:
                    w.run, w.started = pending.popleft(), time.monotonic()
                    w.conn.send(w.run)
            ready = wait([w.conn for w in workers if w.run is not None], timeout=POLL_S)
            for w in [w for w in workers if w.conn in ready]:
                run = w.run
                try:
                    outcome = w.conn.recv()
                except (EOFError, OSError):
                    w.proc.join(1)
                    code = w.proc.exitcode
                    reason = (f"the worker process died (killed by {signal.Signals(-code).name})"
                              if code is not None and code < 0 else f"the worker process died (exit code {code})")
                    outcome = run_folder.record_failure(root, run, reason)
                    workers[workers.index(w)] = _Worker(ctx, root)
                w.run = None
                on_result(outcome)
            on_tick(sum(w.run is not None for w in workers))
    except (KeyboardInterrupt, Interrupted) as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        for s in old:                          # a second Ctrl-C must not break the clean-up
            signal.signal(s, signal.SIG_IGN)
        _terminate(workers)
        raise Interrupted(signum) from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    for w in workers:                          # all done: let them leave
        try:
            w.conn.send(None)
        except OSError:
            pass
    _terminate(workers, grace_s=2.0)


def _terminate(workers, grace_s: float = 0.0) -> None:
    deadline = time.monotonic() + grace_s
    for w in workers:
        if grace_s == 0.0 and w.proc.is_alive():
            w.proc.terminate()
    for w in workers:
        w.proc.join(max(0.0, deadline - time.monotonic()) + 1.0)
        if w.proc.is_alive():
            w.proc.kill()
            w.proc.join(1.0)
        w.conn.close()
