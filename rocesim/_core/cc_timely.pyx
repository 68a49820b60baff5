# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""TIMELY (Mittal et al., SIGCOMM 2015): rate control from the RTT gradient.

An RTT sample (now minus the echoed send time of the data packet the ACK answers)
drives one rate update per completion event.  By default (`segment: window`) that is
once per window of data, as the HPCC ns-3 fork does it (rdma-hw.cc HandleAckTimely):
the update runs on the first ACK beyond the snd_nxt recorded at the previous update,
about once per RTT whatever the rate.  With `segment` a size, it is once per `segment`
bytes acknowledged (the paper's NIC reports RTT per completed segment of 16-64 KB).
Then, with prev the previous sample:

    rtt_diff = (1 - alpha) rtt_diff + alpha (new_rtt - prev_rtt)
    gradient = rtt_diff / min_rtt
    new_rtt < tlow:    rate += delta
    new_rtt > thigh:   rate *= 1 - beta (1 - thigh / new_rtt)
    gradient <= 0:     rate += N delta  (N = 5 after five increases in a row, else 1)
    otherwise:         rate *= 1 - beta gradient

clamped to [min_rate, line rate].  As in the HPCC fork, the count of increases in a row
covers both increase branches, and the first sample only sets prev_rtt.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim, World, Qp, AckInfo
from rocesim._core.qp cimport qp_of, cc_flow_state
from rocesim._core.cc cimport sim_of, cc_new_state, cc_install
from rocesim._core.declare import G100, check_fields, declared_values, fill


cdef struct TimelyParams:     # DECLARATION's parameters (end of file), by the same names
    double alpha
    double beta
    double tlow               # ps
    double thigh              # ps
    double min_rtt            # ps
    double delta              # bps
    int32_t hai_after
    int64_t segment           # bytes per completion event; 0: once per window (the fork)
    double min_rate           # bps


cdef struct TimelyFlow:
    double rate
    double prev_rtt           # < 0 before the first sample
    double rtt_diff
    int32_t increases         # increases in a row
    int64_t seg_mark          # segment mode: snd_una at the last sample; window mode: the
                              # snd_nxt at the last update (the next one needs an ACK past it)


cdef struct TimelyState:
    TimelyParams p


cdef void _start(Sim* s, int32_t f) noexcept nogil:
    cdef TimelyState* st = <TimelyState*> s.w.cc.state
    cdef TimelyFlow* x = <TimelyFlow*> cc_flow_state(s, f)
    x.rate = qp_of(s, f).line_rate
    x.prev_rtt = -1
    x.rtt_diff = 0
    x.increases = 0
    x.seg_mark = 0
    qp_of(s, f).rate_bps = <int64_t> x.rate


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept nogil:
    cdef World* w = s.w
    cdef TimelyState* st = <TimelyState*> w.cc.state
    cdef TimelyParams* p = &st.p
    cdef TimelyFlow* x = <TimelyFlow*> cc_flow_state(s, f)
    cdef Qp* fl = qp_of(s, f)
    cdef double rtt = <double> a.rtt, gradient
    if p.segment > 0:
        if fl.snd_una - x.seg_mark < p.segment and fl.snd_una < w.flows[f].size:
            return
        x.seg_mark = fl.snd_una
    else:
        if a.seq <= x.seg_mark:
            return
        x.seg_mark = fl.snd_nxt
    if x.prev_rtt < 0:
        x.prev_rtt = rtt
        return
    x.rtt_diff = (1 - p.alpha) * x.rtt_diff + p.alpha * (rtt - x.prev_rtt)
    x.prev_rtt = rtt
    gradient = x.rtt_diff / p.min_rtt
    if rtt < p.tlow or (rtt <= p.thigh and gradient <= 0):
        x.rate += p.delta * (5 if x.increases >= p.hai_after else 1)
        x.increases += 1
    else:
        if rtt > p.thigh:
            x.rate *= 1 - p.beta * (1 - p.thigh / rtt)
        else:
            x.rate *= 1 - p.beta * gradient if p.beta * gradient < 1 else 0
        x.increases = 0
    if x.rate > fl.line_rate:
        x.rate = fl.line_rate
    if x.rate < p.min_rate:
        x.rate = p.min_rate
    fl.rate_bps = <int64_t> x.rate


def install(core, params):
    """Set up TIMELY: `params` are DECLARATION's, finalized (times in ps, rates in bps, segment in bytes)."""
    cdef Sim* s = sim_of(core)
    cdef TimelyParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    cdef TimelyState* st = <TimelyState*> cc_new_state(s, sizeof(TimelyState))
    st.p = p
    cc_install(s, st, sizeof(TimelyFlow))
    s.w.cc.on_start = _start
    s.w.cc.on_ack = _ack


# --- declaration (rocesim._core.declare; rocesim.cc.registry makes it a Scheme) ---------------

with cython.cdivision(False):    # Python's division here: under cdivision, C's 1 / 256 is 0
    def _timely_finalize(p, ctx):
        scale = ctx.host_rate_bps / G100
        # the HPCC fork at NIC rate bw: AI bw Mb/s (100 Mb/s at 100G), HAI 5x; min rate 1 Gb/s
        p = fill(p, dict(delta=100e6 * scale, min_rate=1e9))
        p["segment"] = 0 if p["segment"] == "window" else p["segment"]
        return p

    DECLARATION = dict(
        name="timely",
        doc="TIMELY (Mittal et al. 2015): rate from the RTT gradient",
        params=(
            ("alpha", ("number", 0, 1), 0.875, "EWMA weight of the newest RTT difference"),
            ("beta", ("number", 0, 1), 0.8, "multiplicative decrease factor"),
            ("tlow", ("time",), "50us", "below this RTT always increase"),
            ("thigh", ("time",), "500us", "above this RTT always decrease"),
            ("min_rtt", ("positive_time",), "20us", "normalizes the gradient"),
            ("delta", ("rate", "auto"), "auto", "additive increase (100 Mb/s per 100G, as the HPCC fork)"),
            ("hai_after", ("integer", 1, 1000), 5, "increases in a row before steps of 5 delta (HAI)"),
            ("segment", ("positive_size", "window"), "window",
             "one rate update per window of data ('window', the HPCC fork's) or per "
             "this many bytes acknowledged (the paper's completion events, 16-64KB)"),
            ("min_rate", ("rate", "auto"), "auto", "lowest rate (1Gbps, the fork's)"),
        ),
        finalize=_timely_finalize,
    )
