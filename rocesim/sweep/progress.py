"""The sweep's progress: runs done of total, failures, skipped, running, elapsed and ETA.

Written here rather than with tqdm or rich: the line is one f-string, and what a log
file needs (a plain line every few seconds, no carriage returns, failures on their own
lines) is the part those libraries make awkward.  On a terminal the line is redrawn in
place at most every 0.5 s; otherwise a new line is printed every `interval_s` seconds
when something changed.
"""
from __future__ import annotations

import sys
import time


def short_duration(s: float) -> str:
    """12s, 3m05s, 2h04m."""
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    def __init__(self, total: int, skipped: int, stream=None, interval_s: float = 5.0, enabled: bool = True):
        self.total, self.skipped = total, skipped
        self.done = self.failed = self.running = 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval_s = 0.5 if self.tty else interval_s
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.last_draw = -1e9
        self.last_text = None

    def line(self) -> str:
        elapsed = time.monotonic() - self.t0
        fresh = self.done + self.failed
        left = self.total - self.skipped - fresh
        text = f"[sweep] {self.skipped + self.done}/{self.total} done"
        if self.skipped:
            text += f" ({self.skipped} skipped: done before)"
        text += f", {self.failed} failed, {self.running} running, elapsed {short_duration(elapsed)}"
        if left > 0:
            text += f", ETA {short_duration(elapsed / fresh * left)}" if fresh else ", ETA ?"
        return text

    def result(self, outcome: dict) -> None:
        if outcome["state"] == "done":
            self.done += 1
        else:
            self.failed += 1
            self._print(f"[sweep] failed: {outcome['name']}: {outcome['error']}")
        self.tick(self.running)

    def tick(self, running: int, force: bool = False) -> None:
        self.running = running
        now = time.monotonic()
        if not self.enabled or (now - self.last_draw < self.interval_s and not force):
            return
        text = self.line()
        if text == self.last_text and not self.tty:
            return
        self.last_draw, self.last_text = now, text
        if self.tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """A line of its own (the progress line is redrawn after it)."""
        self._print(text)

    def close(self) -> None:
        if self.enabled:
            self.last_text = None
            if self.tty:
                self.stream.write("\r\033[K" + self.line() + "\n")
            else:
                self.stream.write(self.line() + "\n")
            self.stream.flush()

    def _print(self, text: str) -> None:
        if not self.enabled:
            return
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()
        self.last_draw = -1e9 if self.tty else self.last_draw
