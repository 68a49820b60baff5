# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""HPCC (Li et al., SIGCOMM 2019): window control from in-band telemetry.

Every switch stamps, at dequeue, its time, the port's transmitted bytes, queue length
and rate into data packets (INT, at most 5 hops); the receiver echoes them on ACKs.
Per ACK and per hop i, against the previous ACK's record of the same hop:

    u_i = txRate_i / B_i + min(qlen_i, previous qlen_i) / (B_i T)

U = max_i u_i is smoothed by an EWMA over tau = min(delta ts of that hop, T):
u = (u (T - tau) + U tau) / T.  Then, from the reference window Wc:

    U >= eta or incStage >= maxStage:  W = Wc / (u / eta) + W_AI,  incStage' = 0
    otherwise:                         W = Wc + W_AI,              incStage' = incStage + 1

and the flow sends with window W and pacing rate W / T.  Wc and incStage are
committed once per RTT: when the ACK passes the snd_nxt recorded at the last commit
(the HPCC fork's lastUpdateSeq); ACKs in between react from the same Wc ("fast
react").  As in the fork, the previous-hop record and the EWMA advance on every ACK.
T is the base RTT (the fork uses the largest in the network), W starts at one BDP
(line rate x T), W never exceeds it nor drops below min_rate x T.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t
from libc.string cimport memcpy
from rocesim._core.defs cimport Sim, Qp, AckInfo, IntHop, MAX_INT_HOPS
from rocesim._core.qp cimport qp_of, cc_flow_state
from rocesim._core.cc cimport sim_of, cc_new_state, cc_install
from rocesim._core.declare import G100, check_fields, declared_values, fill


cdef struct HpccParams:      # DECLARATION's parameters (end of file), by the same names
    double eta
    int32_t max_stage
    double wai               # bytes
    int64_t t                # ps
    double min_rate          # bps


cdef struct HpccFlow:
    double wc                # reference window (bytes)
    double u                 # EWMA of the normalized inflight
    int32_t inc_stage
    int32_t nprev            # hops recorded from the previous ACK (0: none yet)
    int64_t last_update_seq
    IntHop prev[MAX_INT_HOPS]


cdef struct HpccState:
    HpccParams p


cdef inline double _bdp(Qp* fl, int64_t t) noexcept nogil:
    return fl.line_rate * <double> t / 8e12


cdef void _start(Sim* s, int32_t f) noexcept nogil:
    cdef HpccState* st = <HpccState*> s.w.cc.state
    cdef HpccFlow* x = <HpccFlow*> cc_flow_state(s, f)
    cdef Qp* fl = qp_of(s, f)
    x.wc = _bdp(fl, st.p.t)
    x.u = 1.0
    x.inc_stage = 0
    x.nprev = 0
    x.last_update_seq = 0
    fl.window = <int64_t> x.wc
    fl.rate_bps = fl.line_rate


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept nogil:
    cdef HpccState* st = <HpccState*> s.w.cc.state
    cdef HpccFlow* x = <HpccFlow*> cc_flow_state(s, f)
    cdef Qp* fl = qp_of(s, f)
    cdef double T = <double> st.p.t, U = 0.0, ui, b, q, w, wmin, wmax
    cdef int64_t tau, dt = 0
    cdef int32_t i, stage
    if a.nhops <= 0 or a.nhops > MAX_INT_HOPS:
        return
    if x.nprev == a.nhops:
        for i in range(a.nhops):
            tau = a.hops[i].ts - x.prev[i].ts
            if tau <= 0:
                continue
            b = a.hops[i].rate_mbps * 1e6
            q = a.hops[i].qlen if a.hops[i].qlen < x.prev[i].qlen else x.prev[i].qlen
            ui = ((a.hops[i].tx_bytes - x.prev[i].tx_bytes) * 8e12 / tau) / b + q * 8e12 / (b * T)
            if ui > U:
                U = ui
                dt = tau
    memcpy(x.prev, a.hops, a.nhops * sizeof(IntHop))
    if x.nprev == 0:
        x.nprev = a.nhops
        x.last_update_seq = fl.snd_nxt
        return
    x.nprev = a.nhops
    if dt == 0:
        return
    if dt > st.p.t:
        dt = st.p.t
    x.u = (x.u * (T - dt) + U * dt) / T
    if x.u >= st.p.eta or x.inc_stage >= st.p.max_stage:
        w = x.wc / (x.u / st.p.eta) + st.p.wai
        stage = 0
    else:
        w = x.wc + st.p.wai
        stage = x.inc_stage + 1
    wmax = _bdp(fl, st.p.t)
    wmin = st.p.min_rate * T / 8e12
    if w > wmax:
        w = wmax
    if w < wmin:
        w = wmin
    fl.window = <int64_t> w if w >= 1 else 1
    fl.rate_bps = <int64_t> (w * 8e12 / T)
    if a.seq > x.last_update_seq:
        x.wc = w
        x.inc_stage = stage
        x.last_update_seq = fl.snd_nxt


def install(core, params):
    """Set up HPCC: `params` are DECLARATION's, finalized (t in ps, wai in bytes, min_rate in bps)."""
    cdef Sim* s = sim_of(core)
    cdef HpccParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    if p.t <= 0:
        raise ValueError("hpcc: T must be positive")
    cdef HpccState* st = <HpccState*> cc_new_state(s, sizeof(HpccState))
    st.p = p
    cc_install(s, st, sizeof(HpccFlow))
    s.w.cc.on_start = _start
    s.w.cc.on_ack = _ack


# --- declaration (rocesim._core.declare; rocesim.cc.registry makes it a Scheme) ---------------

with cython.cdivision(False):    # Python's division here: under cdivision, C's 1 / 256 is 0
    def _hpcc_finalize(p, ctx):
        p = fill(p, dict(t=ctx.max_base_rtt_ps or 10_000_000,
                         min_rate=1e9))          # the fork: 1 Gb/s at any link rate
        if p["wai"] == "auto":   # W_AI equivalent to 40 Mb/s per 100G of host rate over T
            p["wai"] = 40e6 * ctx.host_rate_bps / G100 * p["t"] / 8e12
        return p

    DECLARATION = dict(
        name="hpcc",
        doc="HPCC (Li et al. 2019): INT-driven window, inflight kept near eta of capacity",
        params=(
            ("eta", ("number", 0.01, 1.0), 0.95, "target utilization"),
            ("max_stage", ("integer", 0, 1000), 0,
             "additive-increase stages before a multiplicative update (0 as in the paper's simulations)"),
            ("wai", ("size", "auto"), "auto", "additive increase W_AI (auto: 40 Mb/s per 100G over T)"),
            ("t", ("positive_time", "auto"), "auto",
             "base RTT T (auto: the largest idle RTT between two hosts, as the fork)"),
            ("min_rate", ("rate", "auto"), "auto", "lowest rate (1Gbps, the fork's)"),
        ),
        finalize=_hpcc_finalize,
        needs_int=True,
    )
