"""The progress of one run: simulated time (as a fraction of the stop time, when there is
one), flows done, events per second and elapsed time, in short numbers.

On a terminal the line is redrawn in place; otherwise (a log file, a pipe) a plain line is
printed every `OFF_TTY_INTERVAL_S` seconds, so a long run shows it is alive.
"""
from __future__ import annotations

import sys
import time

OFF_TTY_INTERVAL_S = 5.0
TTY_INTERVAL_S = 0.2


def _three_digits(x: float) -> str:
    """x in three significant digits, never in exponent form: 1.5, 12.3, 950, 1000."""
    text = f"{x:.3g}"
    return f"{x:.0f}" if "e" in text else text


def _scaled(x: float, units) -> str:
    """x in the largest of `units` ((symbol, factor) from the largest down; the last one
    takes anything smaller) it reaches, in three significant digits; a value that rounds up
    to 1000 of a unit (999.9996us) is written in the next one (1ms), never as 1e+03us."""
    for k, (unit, f) in enumerate(units):
        if abs(x) >= f or k == len(units) - 1:
            text = _three_digits(x / f)
            if k > 0 and abs(float(text)) >= 1000:
                unit, f = units[k - 1]
                text = _three_digits(x / f)
            return text + unit
    raise AssertionError("unreachable")


def short_number(x: float) -> str:
    """3.4M, 120K, 950."""
    return _scaled(x, (("G", 1e9), ("M", 1e6), ("K", 1e3), ("", 1)))


def short_time(ps: int) -> str:
    """Simulated time in three significant digits: 1.23ms, 450us, 12ns, 1ms (not 1e+03us)."""
    return _scaled(ps, (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3), ("ps", 1)))


class RunProgress:
    """The progress line of a run of `n_flows` flows to `stop_ps` (None: to the end) on up
    to `threads` threads: when more than 1, the line says how many run now and, when they
    changed (`threads: auto`), how many on average."""

    def __init__(self, n_flows: int, stop_ps: int | None, stream=None, threads: int = 1):
        self.n_flows, self.stop_ps, self.threads = n_flows, stop_ps, threads
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval_s = TTY_INTERVAL_S if self.tty else OFF_TTY_INTERVAL_S
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.drawn = False

    def line(self, st: dict) -> str:
        wall = time.perf_counter() - self.t0
        sim = f"sim {short_time(st['sim_time_ps'])}"
        if self.stop_ps:
            sim += f" of {short_time(self.stop_ps)} ({100 * min(1.0, st['sim_time_ps'] / self.stop_ps):.0f}%)"
        flows = f"flows {short_number(st['flows_done'])}/{short_number(self.n_flows)}"
        if not self.stop_ps and self.n_flows:
            flows += f" ({100 * st['flows_done'] / self.n_flows:.0f}%)"
        rate = st["events"] / wall if wall > 0 else 0.0
        return (f"[rocesim] {sim}  {flows}  {short_number(st['events'])} events at "
                f"{short_number(rate)}/s{self._threads(st)}  elapsed {wall:.0f}s")

    def _threads(self, st: dict) -> str:
        """' on 2 threads', ' on 1 thread (1.6 on average)', or '' (1 thread asked)."""
        if self.threads <= 1:
            return ""
        now, mean = st.get("threads_final", self.threads), st.get("threads_mean", self.threads)
        text = f" on {now} thread" + ("" if now == 1 else "s")
        return text + (f" ({mean:.1f} on average)" if abs(mean - now) >= 0.05 else "")

    def update(self, st: dict) -> None:
        """Show the line if it is time (called after every slice of the run)."""
        now = time.perf_counter()
        if now - self.last < self.interval_s:
            return
        self.last = now
        self._write(self.line(st))

    def close(self, st: dict) -> None:
        if self.drawn or not self.tty:
            self._write(self.line(st))
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def _write(self, text: str) -> None:
        self.drawn = True
        self.stream.write(("\r" + text + "  ") if self.tty else text + "\n")
        self.stream.flush()
