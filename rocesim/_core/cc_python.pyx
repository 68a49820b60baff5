# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The bridge to congestion-control schemes written in Python (`rocesim.cc`).

The core calls a Python object's on_start / on_ack / on_nack / on_cnp / on_timeout /
on_timer for each event of a flow.  This is the one place where Python runs per packet
(per ACK), and only because a researcher chose to: it is slower, not different.  The
scheme sees each flow through one `FlowHandle` (made once per flow, reused) and each
ACK through an `Ack` view.  An exception stops the run; `Core.run` re-raises it.

A handle keeps the simulation alive (handle -> bridge -> Core, which owns the C
memory), so a handle kept after `run()` reads the final state of its flow instead of
freed memory; timers set on it after the run never fire.

A run in parts (issue 20): every callback of a flow runs in its sender's part (its start,
its ACKs, NACKs and CNPs, its timers), so a handle reads and writes the flow's queue pair,
clock and timers in that part, and an exception stops that part.  The parts then run on
one thread: a scheme may keep state across flows.
"""
from libc.stdint cimport int64_t, int32_t, INT64_MAX
from cpython.ref cimport PyObject
from rocesim._core.defs cimport Sim, Qp, AckInfo, NIL, ERR_CALLBACK
from rocesim._core.qp cimport qp_of
from rocesim._core.flows cimport flow_base_rtt
from rocesim._core.cc cimport sim_of, cc_ops_clear, cc_timer
from rocesim._core.nic_send cimport sched_update


cdef class Shim


cdef class FlowHandle:
    """A flow as a Python scheme sees it: read its state, set `rate_bps` and `window_bytes`.

    While the flow is active the handle reads and writes its queue pair; once it is done
    (the queue pair went back to the pool, maybe to another flow) it gives the flow's final
    values and writes change nothing."""
    cdef Shim shim               # keeps the Core, and so the C memory behind `s`, alive
    cdef Sim* s                  # the flow's sender's part (the only part with one part)
    cdef readonly int id
    cdef public object state     # free for the scheme's per-flow state
    cdef int64_t _line_rate, _base_rtt, _rate, _window     # the last values seen or set

    cdef Qp* _qp(self):
        """The flow's queue pair, or NULL once it is done."""
        if self.s.w.flows[self.id].qp == NIL:
            return NULL
        return qp_of(self.s, self.id)

    @property
    def src(self):
        return self.s.w.flows[self.id].src

    @property
    def dst(self):
        return self.s.w.flows[self.id].dst

    @property
    def size(self):
        """Payload bytes."""
        return self.s.w.flows[self.id].size

    @property
    def line_rate_bps(self):
        return self._line_rate

    @property
    def base_rtt_ps(self):
        """Idle-network RTT of a full packet and its ACK."""
        return self._base_rtt

    @property
    def snd_nxt(self):
        cdef Qp* qp = self._qp()
        return qp.snd_nxt if qp != NULL else self.s.w.flows[self.id].size

    @property
    def snd_una(self):
        cdef Qp* qp = self._qp()
        return qp.snd_una if qp != NULL else self.s.w.flows[self.id].size

    @property
    def now_ps(self):
        return self.s.now

    @property
    def rate_bps(self):
        """Pacing rate (bit/s); the NIC spaces packets by size / rate."""
        cdef Qp* qp = self._qp()
        if qp != NULL:
            self._rate = qp.rate_bps
        return self._rate

    @rate_bps.setter
    def rate_bps(self, value):
        cdef int64_t r = <int64_t> value
        cdef Qp* qp = self._qp()
        self._rate = r if r >= 1 else 1
        if qp != NULL:
            qp.rate_bps = self._rate
            sched_update(self.s, self.id)

    @property
    def window_bytes(self):
        """Bytes in flight allowed (0: no window)."""
        cdef Qp* qp = self._qp()
        if qp != NULL:
            self._window = qp.window
        return self._window

    @window_bytes.setter
    def window_bytes(self, value):
        cdef int64_t w = <int64_t> value
        cdef Qp* qp = self._qp()
        self._window = w if w >= 0 else 0
        if qp != NULL:
            qp.window = self._window
            sched_update(self.s, self.id)

    def set_timer(self, delay_ps, int timer_id=0):
        """Call the scheme's on_timer(flow, timer_id) after delay_ps (while the flow is active).
        A timer past the end of the clock (int64 picoseconds, about 106 days) never fires."""
        if delay_ps < 0 or timer_id < 0:
            raise ValueError("set_timer needs delay_ps >= 0 and timer_id >= 0")
        if delay_ps > INT64_MAX - self.s.now:
            return              # now + delay would wrap around to a time in the past
        cc_timer(self.s, self.id, <int64_t> delay_ps, timer_id)


cdef class Ack:
    """One ACK: bytes newly acknowledged, cumulative seq, RTT sample, ECN echo (`ecn`: some packet
    it covers was marked; `packets` it covers and `marked_packets` among them), INT records."""
    cdef readonly long long acked_bytes, seq, rtt_ps
    cdef readonly int packets, marked_packets   # data packets it covers; CE-marked among them
    cdef readonly bint ecn
    cdef readonly tuple hops     # ((ts_ps, tx_bytes, qlen_bytes, rate_bps), ...) per switch


cdef class Shim:
    cdef object core             # the engine.Core that owns `s`
    cdef object scheme
    cdef list handles
    cdef public object error

    cdef FlowHandle handle(self, Sim* s, int32_t f):
        """The flow's handle (made at its start, while it has a queue pair), from a callback
        in its sender's part `s`."""
        cdef FlowHandle h = self.handles[f]
        cdef Qp* qp
        cdef int32_t hops
        if h is None:
            h = FlowHandle.__new__(FlowHandle)
            h.shim = self
            h.s = s
            h.id = f
            qp = qp_of(s, f)
            h._line_rate = qp.line_rate
            h._base_rtt = flow_base_rtt(s, f, &hops)
            h._rate = qp.rate_bps
            h._window = qp.window
            self.handles[f] = h
        return h

    cdef void fail(self, Sim* s, exc) noexcept:
        """A callback in part `s` raised `exc`: that part stops (Core.run raises the first)."""
        if self.error is None:
            self.error = exc
        s.error = ERR_CALLBACK


cdef inline Shim _shim(Sim* s):
    return <Shim> <PyObject*> s.w.cc.state


cdef void _start(Sim* s, int32_t f) noexcept with gil:
    shim = _shim(s)
    try:
        shim.scheme.on_start(shim.handle(s, f))
    except BaseException as e:
        shim.fail(s, e)


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept with gil:
    shim = _shim(s)
    cdef Ack ack = Ack.__new__(Ack)
    ack.acked_bytes = a.acked
    ack.seq = a.seq
    ack.rtt_ps = a.rtt
    ack.ecn = a.ecn
    ack.packets = a.packets
    ack.marked_packets = a.marked
    ack.hops = tuple([(a.hops[i].ts, a.hops[i].tx_bytes, a.hops[i].qlen, a.hops[i].rate_mbps * 1000000)
                      for i in range(a.nhops)])
    try:
        shim.scheme.on_ack(shim.handle(s, f), ack)
    except BaseException as e:
        shim.fail(s, e)


cdef void _call(Sim* s, int32_t f, str name) noexcept with gil:
    shim = _shim(s)
    try:
        getattr(shim.scheme, name)(shim.handle(s, f))
    except BaseException as e:
        shim.fail(s, e)


cdef void _nack(Sim* s, int32_t f) noexcept nogil:
    _call(s, f, "on_nack")


cdef void _cnp(Sim* s, int32_t f) noexcept nogil:
    _call(s, f, "on_cnp")


cdef void _timeout(Sim* s, int32_t f) noexcept nogil:
    _call(s, f, "on_timeout")


cdef void _timer(Sim* s, int32_t f, int64_t arg) noexcept with gil:
    shim = _shim(s)
    try:
        shim.scheme.on_timer(shim.handle(s, f), arg)
    except BaseException as e:
        shim.fail(s, e)


def install(core, params):
    """Route the core's callbacks to params['scheme'], a `rocesim.cc.PythonScheme`.

    Returns the bridge object, which the caller must keep alive while the core runs.
    """
    cdef Sim* s = sim_of(core)
    cdef Shim shim = Shim.__new__(Shim)
    shim.core = core
    shim.scheme = params["scheme"]
    shim.handles = [None] * s.w.n_flows
    cc_ops_clear(&s.w.cc)
    s.w.cc.state = <void*> shim          # borrowed: the Core keeps `shim` alive
    s.w.cc.on_start = _start
    s.w.cc.on_ack = _ack
    s.w.cc.on_nack = _nack
    s.w.cc.on_cnp = _cnp
    s.w.cc.on_timeout = _timeout
    s.w.cc.on_timer = _timer
    return shim
