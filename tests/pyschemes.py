"""Schemes written in Python, used by the tests (importable as `pyschemes:<Class>`)."""
from rocesim.cc import PythonScheme, rate


class FixedRate(PythonScheme):
    """Every flow sends at one fixed rate."""
    params = {"rate": rate("10Gbps", "the rate")}

    def on_start(self, flow):
        flow.rate_bps = self.rate


class LineRate(PythonScheme):
    """What the built-in scheme `none` does, written in Python."""

    def on_start(self, flow):
        flow.rate_bps = flow.line_rate_bps


class Recorder(PythonScheme):
    """Records every call it gets, and sets a timer at start."""
    needs_cnp = True
    needs_int = True
    calls = []

    def on_start(self, flow):
        Recorder.calls.append(("start", flow.id))
        flow.set_timer(5_000_000, 7)

    def on_ack(self, flow, ack):
        Recorder.calls.append(("ack", flow.id, ack.acked_bytes, ack.seq, ack.rtt_ps, ack.ecn, len(ack.hops)))

    def on_cnp(self, flow):
        Recorder.calls.append(("cnp", flow.id))

    def on_timer(self, flow, timer_id):
        Recorder.calls.append(("timer", flow.id, timer_id, flow.now_ps))


class HalveOnEcho(PythonScheme):
    """Line rate at start; an ECN echo or a CNP halves the rate (once per base RTT), a timer
    every 5 us adds 10 Gb/s back.  Each flow's decisions go to `log[flow id]`: (what, time,
    rate)."""
    needs_cnp = True
    log = {}

    def _note(self, flow, what):
        HalveOnEcho.log.setdefault(flow.id, []).append((what, flow.now_ps, flow.rate_bps))

    def on_start(self, flow):
        flow.rate_bps = flow.line_rate_bps
        flow.state = -flow.base_rtt_ps          # the last cut
        flow.set_timer(5_000_000)
        self._note(flow, "start")

    def _cut(self, flow):
        if flow.now_ps - flow.state >= flow.base_rtt_ps:
            flow.rate_bps = max(10**9, flow.rate_bps // 2)
            flow.state = flow.now_ps
            self._note(flow, "cut")

    def on_ack(self, flow, ack):
        if ack.ecn:
            self._cut(flow)

    def on_cnp(self, flow):
        self._cut(flow)

    def on_timer(self, flow, timer_id):
        flow.rate_bps = min(flow.line_rate_bps, flow.rate_bps + 10**10)
        flow.set_timer(5_000_000)
        self._note(flow, "timer")


class Broken(PythonScheme):
    """Raises on the third ACK."""

    def on_start(self, flow):
        flow.state = 0

    def on_ack(self, flow, ack):
        flow.state += 1
        if flow.state == 3:
            raise ZeroDivisionError("scheme bug on purpose")


class KeepsHandles(PythonScheme):
    """Keeps every flow handle it is given (to use them after the run)."""
    kept = []

    def on_start(self, flow):
        KeepsHandles.kept.append(flow)


class CountsMarks(PythonScheme):
    """Line rate; sums the packets and CE marks that ACKs echo."""
    packets = 0
    marked = 0

    def on_start(self, flow):
        flow.rate_bps = flow.line_rate_bps

    def on_ack(self, flow, ack):
        CountsMarks.packets += ack.packets
        CountsMarks.marked += ack.marked_packets
        assert ack.ecn == (ack.marked_packets > 0)


class TouchesFinished(PythonScheme):
    """Line rate; when a later flow starts, reads the handle of the first flow (finished by
    then) and tries to slow it down: a finished flow's handle must give its final values and
    must not reach the flow that runs now (whatever memory the core gives that one)."""
    handles = []
    seen = []

    def on_start(self, flow):
        flow.rate_bps = flow.line_rate_bps
        TouchesFinished.handles.append(flow)
        first = TouchesFinished.handles[0]
        if first is not flow:
            TouchesFinished.seen.append((first.snd_una, first.snd_nxt, first.size, first.rate_bps))
            first.rate_bps = 1
            first.window_bytes = 1


class AddsFlows(PythonScheme):
    """Adds a flow to the simulation (`AddsFlows.sim`) on its first ACK, while `adding`."""
    sim = None
    adding = True

    def on_ack(self, flow, ack):
        if AddsFlows.adding:
            AddsFlows.sim.add_flow(flow.dst, flow.src, 10_000)


class SlowThenFast(PythonScheme):
    """10 Mb/s for the first 10 us, then line rate (set from a timer)."""

    def on_start(self, flow):
        flow.rate_bps = 10_000_000
        flow.set_timer(10_000_000, 1)

    def on_timer(self, flow, timer_id):
        flow.rate_bps = flow.line_rate_bps


class Paced(PythonScheme):
    """Every flow at 4.19 Mb/s: a packet about every 2 ms."""

    def on_start(self, flow):
        flow.rate_bps = 4_190_000


class FarTimers(PythonScheme):
    """Line rate; a timer 2**62 ps after each flow's start (past the time horizon), and one
    set at the last ACK that now + delay would carry past the int64 clock."""

    def on_start(self, flow):
        flow.rate_bps = flow.line_rate_bps
        flow.set_timer(2**62)

    def on_ack(self, flow, ack):
        if ack.seq == flow.size:
            flow.set_timer(2**63 - 1000)


class ZeroDelayStorm(PythonScheme):
    """Line rate; a timer that re-arms itself with zero delay: simulated time never moves."""

    def on_start(self, flow):
        flow.rate_bps = flow.line_rate_bps
        flow.set_timer(0)

    def on_timer(self, flow, timer_id):
        flow.set_timer(0)
