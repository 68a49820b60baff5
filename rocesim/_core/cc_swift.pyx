# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Swift (Kumar et al., SIGCOMM 2020): delay-based AIMD on a congestion window.

The window cwnd (in packets) is driven by the RTT of each ACK against a target:

    target = base_target + hops x h + max(0, min(a / sqrt(cwnd) + b, fs_range))
    a = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd)),  b = -a / sqrt(fs_max_cwnd)

(the flow-scaling term grows as cwnd shrinks, so many flows sharing a link each
tolerate more delay).  Below the target, cwnd += ai x acked / cwnd (ai per RTT; when
cwnd < 1, ai x acked).  Above it, at most once per RTT,
cwnd *= max(1 - beta (delay - target) / delay, 1 - max_mdf).  A NACK (fast recovery)
cuts by 1 - max_mdf once per RTT; a timeout does too, and resets cwnd to min_cwnd
after `retx_reset` timeouts in a row.  cwnd stays in [min_cwnd, max_cwnd]; below one
packet the flow keeps one packet in flight and is paced at cwnd packets per RTT.
Only the fabric window is modelled (no endpoint delay); flows start with one BDP.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t
from libc.math cimport sqrt
from rocesim._core.defs cimport Sim, World, Qp, AckInfo
from rocesim._core.qp cimport qp_of, cc_flow_state
from rocesim._core.flows cimport flow_base_rtt
from rocesim._core.cc cimport sim_of, cc_new_state, cc_install
from rocesim._core.declare import ParamError, check_fields, declared_values, fill


cdef struct SwiftParams:      # DECLARATION's parameters (end of file), by the same names
    double base_target        # ps
    double h                  # ps per hop
    double fs_range           # ps
    double fs_min_cwnd        # packets
    double fs_max_cwnd
    double ai
    double beta
    double max_mdf
    double min_cwnd           # packets
    double max_cwnd
    int32_t retx_reset


cdef struct SwiftFlow:
    double cwnd               # packets
    double rtt                # last RTT sample (ps)
    int64_t t_last_decrease
    int32_t retx
    int32_t hops              # switches on the data path (the target scales with them)


cdef struct SwiftState:
    SwiftParams p
    double fs_a               # flow scaling: fs = fs_a / sqrt(cwnd) + fs_b (from p.fs_*)
    double fs_b


cdef void _apply(Sim* s, int32_t f, SwiftParams* p, SwiftFlow* x, double before) noexcept nogil:
    cdef World* w = s.w
    cdef Qp* fl = qp_of(s, f)
    if x.cwnd < p.min_cwnd:
        x.cwnd = p.min_cwnd
    if x.cwnd > p.max_cwnd:
        x.cwnd = p.max_cwnd
    if x.cwnd < before:
        x.t_last_decrease = s.now
    if x.cwnd >= 1:
        fl.window = <int64_t> (x.cwnd * w.p.payload)
        fl.rate_bps = fl.line_rate
    else:                      # one packet in flight, paced at cwnd packets per RTT
        fl.window = w.p.payload
        fl.rate_bps = <int64_t> (x.cwnd * (w.p.payload + w.p.header) * 8e12 / x.rtt)
        if fl.rate_bps < 1:
            fl.rate_bps = 1


cdef inline bint _can_decrease(Sim* s, SwiftFlow* x) noexcept nogil:
    return s.now - x.t_last_decrease >= x.rtt


cdef void _start(Sim* s, int32_t f) noexcept nogil:
    cdef World* w = s.w
    cdef SwiftState* st = <SwiftState*> w.cc.state
    cdef SwiftFlow* x = <SwiftFlow*> cc_flow_state(s, f)
    cdef Qp* fl = qp_of(s, f)
    cdef int64_t base_rtt = flow_base_rtt(s, f, &x.hops)
    x.rtt = base_rtt if base_rtt > 0 else 1e6
    x.cwnd = fl.line_rate * x.rtt / 8e12 / w.p.payload
    x.t_last_decrease = w.flows[f].released     # the flow's start (on_start may come later)
    x.retx = 0
    _apply(s, f, &st.p, x, x.cwnd)


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept nogil:
    cdef World* w = s.w
    cdef SwiftState* st = <SwiftState*> w.cc.state
    cdef SwiftParams* p = &st.p
    cdef SwiftFlow* x = <SwiftFlow*> cc_flow_state(s, f)
    cdef double before = x.cwnd, delay = <double> a.rtt, target, fs, acked
    x.retx = 0
    x.rtt = delay
    fs = st.fs_a / sqrt(x.cwnd) + st.fs_b
    if fs > p.fs_range:
        fs = p.fs_range
    if fs < 0:
        fs = 0
    target = p.base_target + x.hops * p.h + fs
    acked = <double> a.acked / w.p.payload
    if delay < target:
        if x.cwnd >= 1:
            x.cwnd += p.ai * acked / x.cwnd
        else:
            x.cwnd += p.ai * acked
    elif _can_decrease(s, x):
        x.cwnd *= max(1 - p.beta * (delay - target) / delay, 1 - p.max_mdf)
    _apply(s, f, p, x, before)


cdef void _nack(Sim* s, int32_t f) noexcept nogil:
    cdef SwiftState* st = <SwiftState*> s.w.cc.state
    cdef SwiftFlow* x = <SwiftFlow*> cc_flow_state(s, f)
    cdef double before = x.cwnd
    x.retx = 0
    if _can_decrease(s, x):
        x.cwnd *= 1 - st.p.max_mdf
    _apply(s, f, &st.p, x, before)


cdef void _timeout(Sim* s, int32_t f) noexcept nogil:
    cdef SwiftState* st = <SwiftState*> s.w.cc.state
    cdef SwiftFlow* x = <SwiftFlow*> cc_flow_state(s, f)
    cdef double before = x.cwnd
    x.retx += 1
    if x.retx >= st.p.retx_reset:
        x.cwnd = st.p.min_cwnd
    elif _can_decrease(s, x):
        x.cwnd *= 1 - st.p.max_mdf
    _apply(s, f, &st.p, x, before)


def install(core, params):
    """Set up Swift: `params` are DECLARATION's, finalized (times in ps, windows in packets)."""
    cdef Sim* s = sim_of(core)
    cdef SwiftParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    cdef SwiftState* st = <SwiftState*> cc_new_state(s, sizeof(SwiftState))
    st.p = p
    st.fs_a = p.fs_range / (1 / sqrt(p.fs_min_cwnd) - 1 / sqrt(p.fs_max_cwnd))
    st.fs_b = -st.fs_a / sqrt(p.fs_max_cwnd)
    cc_install(s, st, sizeof(SwiftFlow))
    s.w.cc.on_start = _start
    s.w.cc.on_ack = _ack
    s.w.cc.on_nack = _nack
    s.w.cc.on_timeout = _timeout


# --- declaration (rocesim._core.declare; rocesim.cc.registry makes it a Scheme) ---------------

with cython.cdivision(False):    # Python's division here: under cdivision, C's 1 / 256 is 0
    def _swift_finalize(p, ctx):
        base = p["base_target"]
        p = fill(p, dict(h=base / 6.55, fs_range=5 * base))
        if not 0 < p["fs_min_cwnd"] < p["fs_max_cwnd"]:
            raise ParamError("fs_min_cwnd", "needs 0 < fs_min_cwnd < fs_max_cwnd")
        if not 0 < p["min_cwnd"] <= p["max_cwnd"]:
            raise ParamError("min_cwnd", "needs 0 < min_cwnd <= max_cwnd")
        return p

    DECLARATION = dict(
        name="swift",
        doc="Swift (Kumar et al. 2020): delay-target AIMD on a window, target scaled by hops and flows",
        params=(
            ("base_target", ("time",), "25us", "target RTT before scaling (the paper's 100G setting)"),
            ("h", ("time", "auto"), "auto", "target added per switch hop (auto: base_target / 6.55, htsim's)"),
            ("fs_range", ("positive_time", "auto"), "auto", "largest flow-scaling addition (auto: 5 x base_target)"),
            ("fs_min_cwnd", ("number", 1e-6, 1e6), 0.1, "cwnd (packets) at which flow scaling is fs_range"),
            ("fs_max_cwnd", ("number", 1e-6, 1e6), 100.0, "cwnd (packets) at which flow scaling is 0"),
            ("ai", ("number", 0, 1e6), 1.0, "additive increase, packets per RTT"),
            ("beta", ("number", 0, 1), 0.8, "multiplicative decrease per unit of relative excess delay"),
            ("max_mdf", ("number", 0, 1), 0.5, "largest multiplicative decrease at once"),
            ("min_cwnd", ("number", 1e-9, 1e9), 0.001, "smallest window, packets (below 1: paced)"),
            ("max_cwnd", ("number", 1e-9, 1e9), 1000.0, "largest window, packets"),
            ("retx_reset", ("integer", 1, 1000), 5, "timeouts in a row that reset cwnd to min_cwnd"),
        ),
        finalize=_swift_finalize,
    )
