# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""NSCC, the Ultra Ethernet transport's network-signal congestion control (UET 1.0, June
2025), as the consortium's reference simulator uet-htsim models it (`htsim/sim/uec.cpp`,
UecSrc's NSCC methods; the UET specification's own text was not at hand, so every default
below names the uet-htsim line it comes from).

A window `cwnd` (bytes in flight) is moved on each ACK by two signals: the ACK's ECN echo
and the queuing delay, the RTT sample less the flow's base RTT (the smallest RTT seen,
starting from the network's RTT).  With the target delay T:

    no mark, delay >= T   fair increase: acc += fi x acked         (same bytes for every flow)
    no mark, delay <  T   proportional increase: acc += alpha x acked x (T - delay), or, when
                          the delay stayed under `fast_delay` for a whole window, fast
                          increase: cwnd += fast_gain x a x acked at once
    mark,    delay >= T   multiplicative decrease, at most once per base RTT and only when
                          the delay's average exceeds T:
                          cwnd *= max(1 - gamma (avg - T) / avg, md_floor)
    mark,    delay <  T   nothing (the mark only steers load balancing)

The accumulated increase `acc` (bytes squared) is applied at a "fulfill", every
`fulfill_packets` packets of ACKed bytes or one network RTT: cwnd += acc / cwnd, an
additive increase per RTT that every flow gets alike (hence fair shares), plus `eta`
once per network RTT.  Quick adapt runs first on every ACK: at the end of each epoch (base
RTT + T), if the epoch saw a NACK or a delay above `qa_threshold` x T while it delivered
less than max window / 2**qa_gate, the window drops at once to what was delivered, and
the marks on the bytes then in flight are ignored.  A NACK feeds the delay average a
sample of one network RTT, triggers quick adapt and (if it did not fire) takes one packet
off the window; a timeout takes one packet off.  The window stays within [min_window
packets, max_window_bdp x the flow's BDP] (BDP = base RTT x the NIC's rate, recomputed
when the base RTT falls); the NIC sends at line rate.

The gains scale with the network as uet-htsim's do: a = network BDP / 150 KB (uet-htsim's
reference network: 100 Gb/s, 12 us), b = T / 12 us; alpha = prop_gain x MSS x a x b / T
(per byte of ACK per ps of delay under the target), fi = fair_gain x MSS x a, eta =
eta_gain x MSS x a, fast increase fast_gain x a per ACKed byte.  MSS is the NIC's payload
(nic.payload); windows are counted in payload bytes as the NIC counts bytes in flight
(uet-htsim counts wire bytes, header included: a few percent apart at its 4 KB MTU).
"""
cimport cython
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim, World, Qp, AckInfo
from rocesim._core.qp cimport qp_of, cc_flow_state
from rocesim._core.cc cimport sim_of, cc_new_state, cc_install
from rocesim._core.declare import ParamError, check_fields, declared_values, fill

REFERENCE_RATE_BPS = 100e9       # uet-htsim uec.cpp initNsccParams: the reference network ...
REFERENCE_RTT_PS = 12_000_000    # ... of 100 Gb/s and 12 us, whose BDP (150 KB) the gains are tuned at


cdef struct NsccParams:       # DECLARATION's parameters (end of file), by the same names
    int64_t network_rtt       # ps
    int64_t target_delay      # ps
    double scale              # a
    double prop_gain
    double fair_gain
    double eta_gain
    double fast_gain
    int64_t fast_delay        # ps
    double gamma
    double md_floor
    double delay_ewma
    int32_t qa_gate
    double qa_threshold       # x target_delay
    double max_window_bdp
    double min_window         # packets
    double fulfill_packets


cdef struct NsccFlow:
    double cwnd               # bytes
    double max_wnd            # bytes: max_window_bdp x base RTT x line rate
    double acc                # pending increase, bytes^2 (applied as acc / cwnd at a fulfill)
    double avg_delay          # ps, EWMA of the queuing delay
    double fast_count         # bytes ACKed in a row with delay under fast_delay
    int64_t base_rtt          # ps
    int64_t fulfill_bytes     # bytes ACKed since the last fulfill
    int64_t last_eta          # time of the last eta step (and the fulfill period's start)
    int64_t last_decrease
    int64_t qa_end            # end of the quick-adapt epoch (0: none started)
    int64_t achieved          # bytes ACKed in this epoch
    int64_t to_ignore         # bytes in flight at the last quick adapt: their marks are ignored ...
    int64_t ignored           # ... until this many bytes have been ACKed or NACKed since
    int32_t trigger_qa        # a NACK in this epoch
    int32_t fast              # fast-increase mode


cdef struct NsccState:
    NsccParams p
    double alpha              # bytes of increase per ACKed byte per ps under the target
    double fi                 # fair increase per ACKed byte (bytes)
    double eta                # bytes per network RTT
    double fast_scale         # fast increase per ACKed byte
    double min_wnd            # bytes


cdef inline NsccState* _st(Sim* s) noexcept nogil:
    return <NsccState*> s.w.cc.state


cdef inline void _apply(Sim* s, int32_t f, NsccState* st, NsccFlow* x) noexcept nogil:
    """Clamp the window to [min, max] and hand it to the NIC (at line rate)."""
    cdef Qp* fl = qp_of(s, f)
    if x.cwnd > x.max_wnd:
        x.cwnd = x.max_wnd
    if x.cwnd < st.min_wnd:
        x.cwnd = st.min_wnd
    fl.window = <int64_t> x.cwnd
    fl.rate_bps = fl.line_rate


cdef inline void _set_base_rtt(Sim* s, int32_t f, NsccState* st, NsccFlow* x, int64_t rtt) noexcept nogil:
    """A new (smaller) base RTT: the window's cap follows the flow's BDP (uec.cpp update_base_rtt)."""
    x.base_rtt = rtt
    x.max_wnd = st.p.max_window_bdp * rtt * qp_of(s, f).line_rate / 8e12
    if x.max_wnd < st.min_wnd:
        x.max_wnd = st.min_wnd


cdef inline void _update_avg(NsccState* st, NsccFlow* x, double delay, bint marked) noexcept nogil:
    """The delay average: a large delay the switches did not mark is not counted as
    congestion, the average is pulled towards a quarter of the base RTT instead
    (uec.cpp update_delay)."""
    cdef double g = st.p.delay_ewma
    if not marked and delay > st.p.target_delay:
        x.avg_delay = g * 0.25 * x.base_rtt + (1 - g) * x.avg_delay
    else:
        x.avg_delay = g * delay + (1 - g) * x.avg_delay


cdef bint _quick_adapt(Sim* s, int32_t f, NsccState* st, NsccFlow* x, bint loss, bint marked,
                       double delay) noexcept nogil:
    """Quick adapt (uec.cpp quick_adapt): True when this signal is consumed (the window was
    set to what the epoch delivered, or a mark on bytes sent before the last one is ignored)."""
    cdef bint done = False
    cdef Qp* fl
    if x.ignored < x.to_ignore and marked:
        done = True
    elif s.now > x.qa_end:
        if (x.qa_end != 0 and (x.trigger_qa or loss or delay > st.p.qa_threshold * st.p.target_delay)
                and x.achieved < (<int64_t> x.max_wnd >> st.p.qa_gate)):
            fl = qp_of(s, f)
            x.cwnd = x.achieved if x.achieved > st.min_wnd else st.min_wnd
            x.to_ignore = fl.snd_nxt - fl.snd_una
            x.ignored = 0
            x.trigger_qa = 0
            done = True
        x.achieved = 0
        x.qa_end = s.now + x.base_rtt + st.p.target_delay
    if done:
        x.acc = 0
        x.fulfill_bytes = 0
    return done


cdef void _start(Sim* s, int32_t f) noexcept nogil:
    cdef NsccState* st = _st(s)
    cdef NsccFlow* x = <NsccFlow*> cc_flow_state(s, f)
    _set_base_rtt(s, f, st, x, st.p.network_rtt)
    x.cwnd = x.max_wnd                           # uec.cpp initNscc: the first window is the largest
    x.last_eta = s.now
    x.last_decrease = s.now
    _apply(s, f, st, x)


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept nogil:
    cdef NsccState* st = _st(s)
    cdef NsccParams* p = &st.p
    cdef NsccFlow* x = <NsccFlow*> cc_flow_state(s, f)
    cdef double delay, acked = <double> a.acked
    cdef bint marked = a.ecn != 0
    x.achieved += a.acked
    x.fulfill_bytes += a.acked
    x.ignored += a.acked
    if a.rtt > 0 and a.rtt < x.base_rtt:
        _set_base_rtt(s, f, st, x, a.rtt)
    delay = <double> (a.rtt - x.base_rtt)
    _update_avg(st, x, delay, marked)
    if _quick_adapt(s, f, st, x, False, marked, delay):
        _apply(s, f, st, x)
        return
    if not marked:
        if delay >= p.target_delay:
            x.acc += st.fi * acked                                       # fair increase
        elif delay < p.fast_delay and (x.fast or x.fast_count + acked > x.cwnd):
            x.fast_count += acked
            x.fast = 1
            x.cwnd += st.fast_scale * acked                              # fast increase
        else:
            x.fast_count = x.fast_count + acked if delay < p.fast_delay else 0
            x.fast = 0
            x.acc += st.alpha * acked * (p.target_delay - delay)         # proportional increase
    elif delay >= p.target_delay:
        x.fast = 0
        x.fast_count = 0
        if x.avg_delay > p.target_delay and s.now - x.last_decrease > x.base_rtt:
            x.cwnd *= max(1 - p.gamma * (x.avg_delay - p.target_delay) / x.avg_delay, p.md_floor)
            x.last_decrease = s.now
    _apply(s, f, st, x)
    if x.fulfill_bytes > p.fulfill_packets * s.w.p.payload or s.now - x.last_eta > p.network_rtt:
        x.cwnd += x.acc / x.cwnd
        if s.now - x.last_eta >= p.network_rtt:
            x.cwnd += st.eta
            x.last_eta = s.now
        x.acc = 0
        x.fulfill_bytes = 0
        _apply(s, f, st, x)


cdef void _nack(Sim* s, int32_t f) noexcept nogil:
    """A NACK: a delay sample of one network RTT (taken as marked), quick adapt as a loss,
    else one packet off the window (uec.cpp updateCwndOnNack_NSCC)."""
    cdef NsccState* st = _st(s)
    cdef NsccFlow* x = <NsccFlow*> cc_flow_state(s, f)
    x.ignored += s.w.p.payload
    _update_avg(st, x, <double> st.p.network_rtt, True)
    x.trigger_qa = 1
    if not _quick_adapt(s, f, st, x, True, True, 0):
        x.cwnd -= s.w.p.payload
    _apply(s, f, st, x)


cdef void _timeout(Sim* s, int32_t f) noexcept nogil:
    """A timeout: the packet sent again comes off the window (uec.cpp mark_packet_for_retransmission)."""
    cdef NsccState* st = _st(s)
    cdef NsccFlow* x = <NsccFlow*> cc_flow_state(s, f)
    x.cwnd -= s.w.p.payload
    _apply(s, f, st, x)


def install(core, params):
    """Set up NSCC: `params` are DECLARATION's, finalized (times in ps)."""
    cdef Sim* s = sim_of(core)
    cdef NsccParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    cdef NsccState* st = <NsccState*> cc_new_state(s, sizeof(NsccState))
    cdef double mss = s.w.p.payload
    st.p = p
    st.alpha = p.prop_gain * mss * p.scale * (p.target_delay / REFERENCE_RTT_PS) / p.target_delay
    st.fi = p.fair_gain * mss * p.scale
    st.eta = p.eta_gain * mss * p.scale
    st.fast_scale = p.fast_gain * p.scale
    st.min_wnd = p.min_window * mss
    cc_install(s, st, sizeof(NsccFlow))
    s.w.cc.on_start = _start
    s.w.cc.on_ack = _ack
    s.w.cc.on_nack = _nack
    s.w.cc.on_timeout = _timeout


# --- declaration (rocesim._core.declare; rocesim.cc.registry makes it a Scheme) ---------------

with cython.cdivision(False):    # Python's division here: under cdivision, C's 1 / 256 is 0
    def _nscc_finalize(p, ctx):
        rtt = ctx.max_base_rtt_ps or 10_000_000
        p = fill(p, dict(network_rtt=rtt))
        p = fill(p, dict(target_delay=round(0.75 * p["network_rtt"])))
        reference_bdp = REFERENCE_RATE_BPS * REFERENCE_RTT_PS / 8e12
        p = fill(p, dict(scale=p["network_rtt"] * ctx.host_rate_bps / 8e12 / reference_bdp))
        if p["scale"] <= 0:
            raise ParamError("scale", "needs a network with a host link (or a scale > 0)")
        return p

    # ECN as uet-htsim marks it (datacenter/main_uec.cpp): RED from 0.2 to 0.8 of its network's
    # BDP (9 and 35 packets of 4150 B at 100 Gb/s, 14 us) rising to 1, scaled here by port rate
    NSCC_ECN = ("red", 37_350 / 4, 145_250 / 4, 1.0)

    DECLARATION = dict(
        name="nscc",
        doc="NSCC (Ultra Ethernet 1.0, as uet-htsim): window from ECN and delay over base RTT, "
            "fair increase, quick adapt",
        params=(
            ("network_rtt", ("positive_time", "auto"), "auto",
             "the network's RTT: each flow's first base RTT, the fulfill and eta period, a NACK's "
             "delay sample (auto: the largest idle RTT between two hosts; uet-htsim main_uec.cpp: "
             "its longest path's RTT)"),
            ("target_delay", ("positive_time", "auto"), "auto",
             "queuing-delay target T (auto: 0.75 x network_rtt, uet-htsim uec.cpp initNsccParams "
             "with trimming on; 1.0 x without)"),
            ("scale", ("number", 0, 1e6, "auto"), "auto",
             "BDP scaling a of the increase gains (auto: network_rtt x host rate / 150 KB, the BDP of "
             "uet-htsim's reference 100 Gb/s x 12 us network; uec.cpp initNsccParams)"),
            ("prop_gain", ("number", 0, 1e6), 4.0,
             "proportional increase at zero delay, MSS x a x T/12us per RTT (uet-htsim uec.cpp: 4.0)"),
            ("fair_gain", ("number", 0, 1e6), 5.0,
             "fair increase, MSS x a per RTT (uet-htsim uec.cpp: 5)"),
            ("eta_gain", ("number", 0, 1e6), 0.15,
             "additive increase eta, MSS x a per network RTT (uet-htsim uec.cpp: 0.15)"),
            ("fast_gain", ("number", 0, 1e6), 0.25,
             "fast increase, a x this per ACKed byte (uet-htsim uec.cpp: 0.25)"),
            ("fast_delay", ("time",), "1us",
             "delay under which a window of ACKs starts fast increase (uet-htsim uec.cpp: 1 us)"),
            ("gamma", ("number", 0, 1), 0.8,
             "multiplicative decrease per unit of relative excess average delay (uet-htsim uec.cpp: 0.8)"),
            ("md_floor", ("number", 0, 1), 0.5,
             "bound of one multiplicative decrease: the window keeps at least this fraction "
             "(uet-htsim uec.cpp: 0.5)"),
            ("delay_ewma", ("number", 0, 1), 0.0125, "gain of the delay average (uet-htsim uec.cpp: 0.0125)"),
            ("qa_gate", ("integer", 0, 30), 3,
             "quick adapt only when an epoch delivered under max window / 2**qa_gate (uet-htsim uec.cpp: 3)"),
            ("qa_threshold", ("number", 0, 1e6), 4.0,
             "delay, in target delays, that triggers quick adapt (uet-htsim uec.cpp: 4)"),
            ("max_window_bdp", ("number", 0, 1e6), 1.5,
             "largest (and first) window, in the flow's BDPs at its base RTT (uet-htsim uec.cpp: 1.5)"),
            ("min_window", ("number", 1e-6, 1e6), 1.0, "smallest window, packets (uet-htsim uec.cpp: 1 MTU)"),
            ("fulfill_packets", ("number", 0, 1e6), 8.0,
             "packets of ACKed bytes (or one network RTT) between applications of the pending "
             "increase (uet-htsim uec.cpp: 8 MTU)"),
        ),
        finalize=_nscc_finalize,
        ecn=NSCC_ECN,
    )
