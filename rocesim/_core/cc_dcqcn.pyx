# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""DCQCN (Zhu et al., SIGCOMM 2015): the reaction point of an RDMA NIC.

Switches mark ECN (RED, the congestion point).  Congestion reaches the sender in one of
two ways (`notify`): as in the HPCC ns-3 fork (preset `mellanox`), every ACK of a
CE-marked packet carries the CNP flag and counts as a CNP, with no rate limit at the
receiver (rdma-hw.cc ReceiveUdp/ReceiveAck); as in the paper (preset `paper`), the
receiver sends CNP packets, at most one per `nic.cnp_interval` (50 us) per flow
(nic_recv.pyx).  The difference matters: with the 1 us alpha period, one CNP per 4 us
lets alpha settle near 0.25 under persistent marking where the fork's reaches about 1.
The sender (here) keeps a current rate Rc, a target rate Rt and alpha:

* cut: Rt = Rc, Rc = Rc (1 - alpha/2); alpha = (1-g) alpha + g for a period with a
  CNP, (1-g) alpha for one without;
* increase events (timer T, and with the paper's byte counter every B bytes): fast
  recovery Rc = (Rt + Rc)/2 for the first F, then additive (Rt += R_AI) and hyper
  (Rt += i R_HAI) increase, each followed by Rc = (Rt + Rc)/2.

Two timings, one algorithm:

* `t_dec > 0` (preset `mellanox`, the HPCC ns-3 fork's model and the default): alpha
  is updated every `t_alpha` from the first CNP on, with "a CNP arrived in this
  period"; the rate is cut at most once per `t_dec`, at the first decrease check after
  a CNP (so not at the first CNP itself); increases come from the timer only; the
  target is not reset to Rc on a cut that follows a cut with no increase in between
  (the fork's `clamp_target_rate = false`).
* `t_dec == 0` (preset `paper`): every CNP cuts at once; alpha decays by (1-g) per
  `t_alpha` without CNP, the alpha timer restarting at each CNP; increases come from
  the timer T and the byte counter B: fast recovery while max(timer, bytes) < F,
  hyper increase (i = min(timer, bytes) - F) once both exceed F, additive otherwise.

The periodic alpha update is computed lazily (exactly, from the elapsed periods) when
a CNP or a cut needs it, the decrease check is an event only when a CNP is pending,
and the increase timer keeps one event in the heap however often cuts restart it, so
a DCQCN flow costs events only while it is being cut or recovering.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t
from libc.math cimport pow
from rocesim._core.defs cimport Sim, Qp, AckInfo, NIL
from rocesim._core.qp cimport qp_of, cc_flow_state
from rocesim._core.cc cimport sim_of, cc_new_state, cc_install, cc_timer
from rocesim._core.declare import G100, RED_FORK, check_fields, declared_values, fill, window_bytes

cdef enum:
    TIMER_DEC = 1
    TIMER_INC = 2

cdef enum:                      # DcqcnParams.notify: its index in DECLARATION's choice
    NOTIFY_ACK = 0              # the fork: an ACK of a CE-marked packet is a CNP
    NOTIFY_CNP = 1              # the paper: CNP packets (nic_recv.pyx)


cdef struct DcqcnParams:        # DECLARATION's parameters (end of file), by the same names
    int32_t preset              # (finalize chose the other values from it)
    int32_t notify              # NOTIFY_ACK or NOTIFY_CNP
    double g
    int64_t t_alpha
    int64_t t_dec
    int64_t t                   # the rate-increase timer T
    int64_t b                   # the byte counter B, 0 = off
    int32_t f
    int32_t clamp
    double rai
    double rhai
    double min_rate
    int64_t window              # bytes at line rate (scaled by Rc / line rate), 0 = none


cdef struct DcqcnFlow:
    double rc
    double rt
    double alpha
    int64_t alpha_mark          # start of the current alpha period (NIL before the first CNP)
    int64_t dec_anchor          # decrease checks fall at dec_anchor + k t_dec
    int64_t bytes_mark          # snd_una at the last byte-counter event
    int32_t cnp_in_period       # a CNP arrived in the current alpha period
    int32_t cnp_pending         # a CNP arrived since the last decrease check
    int32_t dec_scheduled
    int32_t t_stage             # timer increase events since the last cut
    int32_t b_stage             # byte-counter increase events since the last cut
    int64_t inc_due             # when the increase timer fires next (NIL: stopped)
    int32_t inc_armed           # an event for it is in the heap (one at most: restarts move
                                # inc_due, and an early event re-arms itself for it)


cdef struct DcqcnState:
    DcqcnParams p


cdef inline DcqcnState* _st(Sim* s) noexcept nogil:
    return <DcqcnState*> s.w.cc.state


cdef inline void _apply(Sim* s, int32_t f, DcqcnState* st, DcqcnFlow* x) noexcept nogil:
    cdef Qp* fl = qp_of(s, f)
    fl.rate_bps = <int64_t> x.rc
    if st.p.window > 0:          # the fork's VAR_WIN: the window shrinks with the rate
        fl.window = <int64_t> (st.p.window * x.rc / fl.line_rate)
        if fl.window < 1:
            fl.window = 1


cdef void _alpha_catch_up(DcqcnState* st, DcqcnFlow* x, int64_t now) noexcept nogil:
    """Apply the alpha updates of every period that ended by `now`."""
    cdef int64_t n
    cdef double g = st.p.g
    if x.alpha_mark == NIL:
        return
    n = (now - x.alpha_mark) // st.p.t_alpha
    if n <= 0:
        return
    x.alpha = (1 - g) * x.alpha + (g if x.cnp_in_period else 0.0)
    if n > 1:
        x.alpha *= pow(1 - g, <double> (n - 1))
    x.cnp_in_period = 0
    x.alpha_mark += n * st.p.t_alpha


cdef void _start(Sim* s, int32_t f) noexcept nogil:
    cdef DcqcnState* st = _st(s)
    cdef DcqcnFlow* x = <DcqcnFlow*> cc_flow_state(s, f)
    cdef Qp* fl = qp_of(s, f)
    x.rc = fl.line_rate
    x.rt = fl.line_rate
    x.alpha = 1.0
    x.alpha_mark = NIL
    x.dec_anchor = NIL
    x.inc_due = NIL
    _apply(s, f, st, x)


cdef void _cut(Sim* s, int32_t f, DcqcnState* st, DcqcnFlow* x) noexcept nogil:
    if st.p.clamp or x.t_stage > 0 or x.b_stage > 0 or st.p.t_dec == 0:
        x.rt = x.rc
    x.rc = x.rc * (1 - x.alpha / 2)
    if x.rc < st.p.min_rate:
        x.rc = st.p.min_rate
    x.t_stage = 0
    x.b_stage = 0
    x.bytes_mark = qp_of(s, f).snd_una
    _restart_increase_timer(s, f, st, x)
    _apply(s, f, st, x)


cdef inline void _restart_increase_timer(Sim* s, int32_t f, DcqcnState* st, DcqcnFlow* x) noexcept nogil:
    x.inc_due = s.now + st.p.t
    if not x.inc_armed:
        x.inc_armed = 1
        cc_timer(s, f, st.p.t, TIMER_INC)


cdef void _cnp(Sim* s, int32_t f) noexcept nogil:
    cdef DcqcnState* st = _st(s)
    cdef DcqcnFlow* x = <DcqcnFlow*> cc_flow_state(s, f)
    cdef int64_t now = s.now, k
    if st.p.t_dec == 0:                      # paper: cut now with the current alpha, then
        _alpha_catch_up(st, x, now)          # update alpha and restart its timer
        _cut(s, f, st, x)
        x.alpha = (1 - st.p.g) * x.alpha + st.p.g
        x.alpha_mark = now
        x.cnp_in_period = 0
        return
    if x.alpha_mark == NIL:                  # first CNP: start the periodic timers
        x.alpha_mark = now
        x.dec_anchor = now
        x.rt = x.rc
    else:
        _alpha_catch_up(st, x, now)
        x.cnp_in_period = 1
    x.cnp_pending = 1
    if not x.dec_scheduled:
        k = (now - x.dec_anchor) // st.p.t_dec + 1
        x.dec_scheduled = 1
        cc_timer(s, f, x.dec_anchor + k * st.p.t_dec - now, TIMER_DEC)


cdef void _increase(Sim* s, int32_t f, DcqcnState* st, DcqcnFlow* x) noexcept nogil:
    cdef int32_t hi, lo, i
    cdef double line = qp_of(s, f).line_rate
    if st.p.t_dec > 0:                       # the fork: stage = timer events only
        hi = x.t_stage
        lo = x.t_stage
    else:
        hi = x.t_stage if x.t_stage > x.b_stage else x.b_stage
        lo = x.t_stage if x.t_stage < x.b_stage else x.b_stage
    if hi < st.p.f:
        pass                                 # fast recovery
    elif lo > st.p.f:
        i = lo - st.p.f if st.p.t_dec == 0 else 1
        x.rt += i * st.p.rhai
    else:
        x.rt += st.p.rai
    if x.rt > line:
        x.rt = line
    x.rc = (x.rt + x.rc) / 2
    _apply(s, f, st, x)


cdef void _timer(Sim* s, int32_t f, int64_t arg) noexcept nogil:
    cdef DcqcnState* st = _st(s)
    cdef DcqcnFlow* x = <DcqcnFlow*> cc_flow_state(s, f)
    cdef int32_t kind = <int32_t> arg
    if kind == TIMER_DEC:
        x.dec_scheduled = 0
        if x.cnp_pending:
            x.cnp_pending = 0
            _alpha_catch_up(st, x, s.now)
            _cut(s, f, st, x)
    elif kind == TIMER_INC:
        x.inc_armed = 0
        if x.inc_due == NIL:
            return
        if s.now < x.inc_due:                # restarted since this event was scheduled
            x.inc_armed = 1
            cc_timer(s, f, x.inc_due - s.now, TIMER_INC)
            return
        if st.p.t_dec > 0:
            _increase(s, f, st, x)           # act by the current stage, then count it
            x.t_stage += 1
        else:
            x.t_stage += 1
            _increase(s, f, st, x)
        if x.rc < qp_of(s, f).line_rate:
            _restart_increase_timer(s, f, st, x)
        else:
            x.inc_due = NIL


cdef void _ack(Sim* s, int32_t f, AckInfo* a) noexcept nogil:
    """With `notify: ack` (the fork) an ACK echoing a CE mark counts as a CNP; with the
    paper's byte counter, an increase event per B bytes acknowledged since the cut."""
    cdef DcqcnState* st = _st(s)
    cdef DcqcnFlow* x
    if st.p.notify == NOTIFY_ACK and a.ecn:
        _cnp(s, f)
    if st.p.b <= 0 or st.p.t_dec > 0:
        return
    x = <DcqcnFlow*> cc_flow_state(s, f)
    if x.alpha_mark == NIL or x.rc >= qp_of(s, f).line_rate:
        return
    while qp_of(s, f).snd_una - x.bytes_mark >= st.p.b:
        x.bytes_mark += st.p.b
        x.b_stage += 1
        _increase(s, f, st, x)


def install(core, params):
    """Set up DCQCN on the simulation of `core` (an engine.Core): `params` are DECLARATION's,
    finalized (in bps, ps and bytes)."""
    cdef Sim* s = sim_of(core)
    cdef DcqcnParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    if p.t_alpha <= 0:
        raise ValueError("dcqcn: t_alpha must be positive")     # a divisor (_alpha_catch_up)
    cdef DcqcnState* st = <DcqcnState*> cc_new_state(s, sizeof(DcqcnState))
    st.p = p
    cc_install(s, st, sizeof(DcqcnFlow))
    s.w.cc.on_start = _start
    s.w.cc.on_cnp = _cnp
    s.w.cc.on_timer = _timer
    s.w.cc.on_ack = _ack


# --- declaration (rocesim._core.declare; rocesim.cc.registry makes it a Scheme) ---------------

with cython.cdivision(False):    # Python's division here: under cdivision, C's 1 / 256 is 0
    DCQCN_PRESETS = {
        # the HPCC fork's run.py at NIC rate bw: AI 5*bw/25, HAI 50*bw/25 Mb/s, 1 us alpha,
        # 4 us decrease check, 300 us timer, F 1, g 1/256, min rate 1 Gb/s at any rate; every
        # ACK of a CE-marked packet carries the CNP flag (rdma-hw.cc ReceiveUdp), no CNP packets
        "mellanox": dict(notify="ack", g=1 / 256, t_alpha=1_000_000, t_dec=4_000_000,
                         t=300_000_000, b=0, f=1, rai=20e6 / G100, rhai=200e6 / G100, min_rate=1e9,
                         clamp=False),
        # SIGCOMM 2015, Table/Sec. 5 (at 40 Gb/s): g 1/256, K = T = 55 us, B 10 MB, F 5,
        # R_AI 40 Mb/s, the hyper step taken as 10 R_AI; the notification point sends a CNP
        # packet at most once per 50 us per flow (nic.cnp_interval)
        "paper": dict(notify="cnp", g=1 / 256, t_alpha=55_000_000, t_dec=0, t=55_000_000,
                      b=10_000_000, f=5, rai=40e6 / 40e9, rhai=400e6 / 40e9, min_rate=1e8 / 40e9,
                      clamp=True),
    }
    _PER_BPS = {"mellanox": ("rai", "rhai"), "paper": ("rai", "rhai", "min_rate")}

    def _dcqcn_finalize(p, ctx):
        d = dict(DCQCN_PRESETS[p["preset"]])
        for k in _PER_BPS[p["preset"]]:            # stored per bps of host rate
            d[k] = d[k] * ctx.host_rate_bps
        p = fill(p, d)
        p["window"] = window_bytes(p["window"], ctx)
        return p

    def _dcqcn_ecn(params):
        """The paper's RED at 40 Gb/s (Kmin 5 KB, Kmax 200 KB, Pmax 1%), restated per 25 Gb/s
        as "red" takes it; else the fork's."""
        if params.get("preset") == "paper":
            return ("red", 5_000 * 25 / 40, 200_000 * 25 / 40, 0.01)
        return RED_FORK

    DECLARATION = dict(
        name="dcqcn",
        doc="DCQCN (Zhu et al. 2015): ECN -> CNP -> multiplicative decrease, timer-driven recovery",
        params=(
            ("preset", ("choice", ("mellanox", "paper")), "mellanox",
             "defaults of the other parameters: 'mellanox' (HPCC ns-3 fork) or 'paper' (SIGCOMM 2015)"),
            ("notify", ("choice", ("ack", "cnp"), "auto"), "auto",
             "how congestion reaches the sender: 'ack' (mellanox: every ACK of a CE-marked "
             "packet is a CNP, the fork's) or 'cnp' (paper: CNP packets, at most one per "
             "nic.cnp_interval per flow)"),
            ("g", ("number", 0, 1, "auto"), "auto", "alpha EWMA gain (1/256)"),
            ("t_alpha", ("positive_time", "auto"), "auto", "alpha update period (mellanox 1us, paper K = 55us)"),
            ("t_dec", ("time", "auto"), "auto",
             "rate-decrease check period; 0 = cut on every CNP (mellanox 4us, paper 0)"),
            ("t", ("positive_time", "auto"), "auto", "rate-increase timer T (mellanox 300us, paper 55us)"),
            ("b", ("size", "auto"), "auto", "byte counter B; 0 = off (paper 10MB, mellanox off)"),
            ("f", ("integer", 0, 1000, "auto"), "auto", "fast-recovery steps F (mellanox 1, paper 5)"),
            ("rai", ("rate", "auto"), "auto",
             "additive increase R_AI (mellanox 20Mbps per 100G, paper 40Mbps per 40G)"),
            ("rhai", ("rate", "auto"), "auto", "hyper increase R_HAI (mellanox 200Mbps per 100G, paper 10 R_AI)"),
            ("min_rate", ("rate", "auto"), "auto",
             "lowest rate (mellanox 1Gbps, the fork's; paper 0.25% of line rate)"),
            ("clamp", ("boolean", "auto"), "auto", "set Rt = Rc on every cut (paper true, mellanox false)"),
            ("window", ("window",), "none", "'bdp' for 'DCQCN+win' (the largest BDP between two hosts, "
                                            "scaled by Rc / line rate as the fork's VAR_WIN), or a size"),
        ),
        finalize=_dcqcn_finalize,
        needs_cnp=lambda p: p["notify"] == "cnp",
        ecn=_dcqcn_ecn,
    )
