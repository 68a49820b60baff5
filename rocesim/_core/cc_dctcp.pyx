# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""DCTCP (Alizadeh et al., SIGCOMM 2010) on an RDMA NIC.

Switches mark ECN as a step at K (kmin = kmax = K, pmax = 1).  Once per window of data
(when the cumulative ACK passes the snd_nxt recorded at the previous update), the
sender updates alpha = (1 - g) alpha + g F, F the fraction of ECN-echoing ACKs in that
window (counting the packets each ACK covers and the marked ones among them, so
coalesced ACKs count every mark).  On an ECN echo, at most once per window (until the ACK passes the snd_nxt of
the cut, "CWR"), the rate (or window) is multiplied by 1 - alpha/2.

`mode: rate` (default) is the HPCC ns-3 fork's variant: flows start at line rate, add
`rai` once per window when not in CWR (615 Mb/s: one MTU per 13 us RTT, whatever the
link rate, as run.py sets it), and carry a window (default: the largest BDP between two
hosts, the fork's HAS_WIN with GLOBAL_T) scaled by rate / line rate (its VAR_WIN).  `mode: window` is the TCP-like original: the window starts at one
BDP, grows by one packet per window of ACKs and the NIC sends at line rate.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim, World, Qp, AckInfo
from rocesim._core.qp cimport qp_of, cc_flow_state
from rocesim._core.cc cimport sim_of, cc_new_state, cc_install
from rocesim._core.declare import ParamError, check_fields, declared_values, fill, window_bytes

cdef enum:                     # DctcpParams.mode: its index in DECLARATION's choice
    MODE_RATE = 0
    MODE_WINDOW = 1


cdef struct DctcpParams:       # DECLARATION's parameters (end of file), by the same names
    double g
    int32_t mode               # MODE_RATE or MODE_WINDOW
    double rai
    double min_rate
    int64_t window             # bytes at line rate (rate mode: scaled by rate / line rate)


cdef struct DctcpFlow:
    double alpha
    double rate
    double cwnd                # bytes (window mode)
    int64_t marked             # CE-marked packets acknowledged in this window
    int64_t acks               # packets acknowledged in this window
    int64_t last_update_seq    # 0 before the first window ends
    int64_t high_seq           # CWR until the cumulative ACK passes it
    int32_t cwr


cdef struct DctcpState:
    DctcpParams p


cdef inline void _apply(Sim* s, int32_t f, DctcpState* st, DctcpFlow* x) noexcept nogil:
    cdef Qp* fl = qp_of(s, f)
    cdef int64_t bdp = st.p.window
    if st.p.mode == MODE_WINDOW:
        fl.window = <int64_t> x.cwnd if x.cwnd >= 1 else 1
        fl.rate_bps = fl.line_rate
    else:
        fl.rate_bps = <int64_t> x.rate
        fl.window = <int64_t> (bdp * x.rate / fl.line_rate) if bdp > 0 else 0
        if bdp > 0 and fl.window < 1:
            fl.window = 1


cdef void _start(Sim* s, int32_t f) noexcept nogil:
    cdef World* w = s.w
    cdef DctcpState* st = <DctcpState*> w.cc.state
    cdef DctcpFlow* x = <DctcpFlow*> cc_flow_state(s, f)
    x.alpha = 1.0
    x.rate = qp_of(s, f).line_rate
    x.cwnd = st.p.window
    if x.cwnd < w.p.payload:
        x.cwnd = w.p.payload
    x.last_update_seq = 0
    x.cwr = 0
    _apply(s, f, st, x)


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept nogil:
    cdef World* w = s.w
    cdef DctcpState* st = <DctcpState*> w.cc.state
    cdef DctcpFlow* x = <DctcpFlow*> cc_flow_state(s, f)
    cdef Qp* fl = qp_of(s, f)
    cdef bint new_window = a.seq > x.last_update_seq
    x.acks += a.packets
    x.marked += a.marked
    if new_window:
        if x.last_update_seq > 0:
            x.alpha = (1 - st.p.g) * x.alpha + st.p.g * (<double> x.marked / x.acks if x.acks else 0.0)
        x.last_update_seq = fl.snd_nxt
        x.marked = 0
        x.acks = 0
    if x.cwr and a.seq > x.high_seq:
        x.cwr = 0
    if a.ecn and not x.cwr:
        x.rate *= 1 - x.alpha / 2
        if x.rate < st.p.min_rate:
            x.rate = st.p.min_rate
        x.cwnd *= 1 - x.alpha / 2
        if x.cwnd < w.p.payload:
            x.cwnd = w.p.payload
        x.cwr = 1
        x.high_seq = fl.snd_nxt
    elif not x.cwr:
        if new_window:
            x.rate += st.p.rai
            if x.rate > fl.line_rate:
                x.rate = fl.line_rate
        if x.cwnd > 0:                           # + one packet per window of ACKs
            x.cwnd += <double> w.p.payload * a.acked / x.cwnd
    _apply(s, f, st, x)


def install(core, params):
    """Set up DCTCP: `params` are DECLARATION's, finalized (rai and min_rate in bps, window in bytes)."""
    cdef Sim* s = sim_of(core)
    cdef DctcpParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    cdef DctcpState* st = <DctcpState*> cc_new_state(s, sizeof(DctcpState))
    st.p = p
    cc_install(s, st, sizeof(DctcpFlow))
    s.w.cc.on_start = _start
    s.w.cc.on_ack = _ack


# --- declaration (rocesim._core.declare; rocesim.cc.registry makes it a Scheme) ---------------

with cython.cdivision(False):    # Python's division here: under cdivision, C's 1 / 256 is 0
    def _dctcp_finalize(p, ctx):
        p = fill(p, dict(rai=615e6, min_rate=1e9))       # run.py: constants at any link rate
        p["window"] = window_bytes(p["window"], ctx)
        if p["mode"] == "window" and p["window"] <= 0:
            raise ParamError("window", "mode 'window' needs a window ('bdp' or a size)")
        return p

    DECLARATION = dict(
        name="dctcp",
        doc="DCTCP (Alizadeh et al. 2010): ECN step at K, cut by alpha/2 once per window",
        params=(
            ("g", ("number", 0, 1), 1 / 16, "alpha EWMA gain"),
            ("mode", ("choice", ("rate", "window")), "rate", "'rate' (HPCC fork's RDMA variant) or 'window'"),
            ("rai", ("rate", "auto"), "auto", "rate mode: additive increase per window (615Mbps, the fork's)"),
            ("min_rate", ("rate", "auto"), "auto", "lowest rate (1Gbps, the fork's)"),
            ("window", ("window",), "bdp", "window at line rate: 'bdp' (the largest BDP between two "
                                           "hosts, as the fork), a size, or 'none' (rate mode only)"),
        ),
        finalize=_dctcp_finalize,
        ecn=("step", 30_000),                    # K = 30 KB per 10 Gb/s of port rate
    )
