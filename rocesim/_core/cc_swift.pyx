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
from libc.stdint cimport int64_t, int32_t
from libc.math cimport sqrt
from rocesim._core.defs cimport Sim, Flow, AckInfo
from rocesim._core.cc cimport sim_from_capsule, cc_new_state, cc_install


cdef struct Params:
    double ai
    double beta
    double max_mdf
    double base_target        # ps
    double h                  # ps per hop
    double fs_range           # ps
    double fs_a
    double fs_b
    double min_cwnd           # packets
    double max_cwnd
    int32_t retx_reset


cdef struct FlowState:
    double cwnd               # packets
    double rtt                # last RTT sample (ps)
    int64_t t_last_decrease
    int32_t retx


cdef struct State:
    FlowState* fs           # first: see cc.CCState
    Params p


cdef void _apply(Sim* s, int32_t f, Params* p, FlowState* x, double before) noexcept:
    cdef Flow* fl = &s.flows[f]
    if x.cwnd < p.min_cwnd:
        x.cwnd = p.min_cwnd
    if x.cwnd > p.max_cwnd:
        x.cwnd = p.max_cwnd
    if x.cwnd < before:
        x.t_last_decrease = s.now
    if x.cwnd >= 1:
        fl.window = <int64_t> (x.cwnd * s.p.mtu)
        fl.rate_bps = fl.line_rate
    else:                      # one packet in flight, paced at cwnd packets per RTT
        fl.window = s.p.mtu
        fl.rate_bps = <int64_t> (x.cwnd * (s.p.mtu + s.p.data_hdr) * 8e12 / x.rtt)
        if fl.rate_bps < 1:
            fl.rate_bps = 1


cdef inline bint _can_decrease(Sim* s, FlowState* x) noexcept:
    return s.now - x.t_last_decrease >= x.rtt


cdef void _start(Sim* s, int32_t f) noexcept:
    cdef State* st = <State*> s.cc.state
    cdef FlowState* x = &st.fs[f]
    cdef Flow* fl = &s.flows[f]
    x.rtt = fl.base_rtt if fl.base_rtt > 0 else 1e6
    x.cwnd = fl.line_rate * x.rtt / 8e12 / s.p.mtu
    x.t_last_decrease = s.now
    x.retx = 0
    _apply(s, f, &st.p, x, x.cwnd)


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept:
    cdef State* st = <State*> s.cc.state
    cdef Params* p = &st.p
    cdef FlowState* x = &st.fs[f]
    cdef double before = x.cwnd, delay = <double> a.rtt, target, fs, acked
    x.retx = 0
    x.rtt = delay
    fs = p.fs_a / sqrt(x.cwnd) + p.fs_b
    if fs > p.fs_range:
        fs = p.fs_range
    if fs < 0:
        fs = 0
    target = p.base_target + s.flows[f].hops * p.h + fs
    acked = <double> a.acked / s.p.mtu
    if delay < target:
        if x.cwnd >= 1:
            x.cwnd += p.ai * acked / x.cwnd
        else:
            x.cwnd += p.ai * acked
    elif _can_decrease(s, x):
        x.cwnd *= max(1 - p.beta * (delay - target) / delay, 1 - p.max_mdf)
    _apply(s, f, p, x, before)


cdef void _nack(Sim* s, int32_t f) noexcept:
    cdef State* st = <State*> s.cc.state
    cdef FlowState* x = &st.fs[f]
    cdef double before = x.cwnd
    x.retx = 0
    if _can_decrease(s, x):
        x.cwnd *= 1 - st.p.max_mdf
    _apply(s, f, &st.p, x, before)


cdef void _timeout(Sim* s, int32_t f) noexcept:
    cdef State* st = <State*> s.cc.state
    cdef FlowState* x = &st.fs[f]
    cdef double before = x.cwnd
    x.retx += 1
    if x.retx >= st.p.retx_reset:
        x.cwnd = st.p.min_cwnd
    elif _can_decrease(s, x):
        x.cwnd *= 1 - st.p.max_mdf
    _apply(s, f, &st.p, x, before)



def install(capsule, params):
    """Set up Swift (params resolved: times in ps, windows in packets)."""
    cdef Sim* s = sim_from_capsule(capsule)
    cdef State* st = <State*> cc_new_state(s, sizeof(State), sizeof(FlowState))
    st.p.ai = params["ai"]
    st.p.beta = params["beta"]
    st.p.max_mdf = params["max_mdf"]
    st.p.base_target = params["base_target"]
    st.p.h = params["h"]
    st.p.fs_range = params["fs_range"]
    st.p.fs_a = st.p.fs_range / (1 / sqrt(params["fs_min_cwnd"]) - 1 / sqrt(params["fs_max_cwnd"]))
    st.p.fs_b = -st.p.fs_a / sqrt(params["fs_max_cwnd"])
    st.p.min_cwnd = params["min_cwnd"]
    st.p.max_cwnd = params["max_cwnd"]
    st.p.retx_reset = params["retx_reset"]
    cc_install(s, st)
    s.cc.on_start = _start
    s.cc.on_ack = _ack
    s.cc.on_nack = _nack
    s.cc.on_timeout = _timeout
