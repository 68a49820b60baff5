# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The NIC's retransmission timeout.

If a flow's cumulative ACK does not move for `rto`, the sender goes back to snd_una
(go-back-N) or retransmits every unSACKed packet (selective repeat, unordered delivery).  The HPCC fork has
no timeout; it matters only when packets are lost, and by default (`nic.rto: auto`) only
flows on lossy priorities arm it (NetParams.rto_mask), and flows on every priority when a
connection may take several paths into ordered receivers (go-back-N discards reordered
packets, and a gap whose NACK the receiver holds back is asked for by nothing else:
params.py `_rto_mask`).  One EV_RTO event per flow is armed
at a time; ACKs only move the deadline, and the event re-arms itself for it.  A timeout
also forgets the trimmed packets waiting to go again (the recovery sends them with the rest)
and freezes REPS's ring (entropy.pxd).
"""
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport (Sim, World, Qp, LossState, NIL, FS_ACTIVE, EV_RTO, SELECTIVE_REPEAT,
                                 UNORDERED, ENTROPY_REPS)
from rocesim._core.qp cimport qp_of
from rocesim._core.events cimport ev_push
from rocesim._core.active_set cimport active_add
from rocesim._core.loss cimport bits_alloc, loss_of, trims_forget
from rocesim._core.entropy cimport entropy_timeout
from rocesim._core.nic_send cimport nic_kick, nic_rate_changed, sched_update


cdef void nic_rto(Sim* s, int32_t f) noexcept nogil:
    """Retransmission-timeout check of flow f."""
    cdef World* w = s.w
    cdef Qp* fl
    cdef int64_t rate
    cdef LossState* sk
    if w.flows[f].state != FS_ACTIVE:
        return                                  # done: its queue pair is gone (or another's)
    if w.flows[f].qp == NIL:                    # nothing sent yet: keep watching
        ev_push(s, s.now + w.p.rto, EV_RTO, f, 0)
        return
    fl = qp_of(s, f)
    fl.rto_armed = 0
    if s.now >= fl.rto_deadline and fl.snd_una < fl.snd_max:
        sk = loss_of(s, fl)
        if sk == NULL:
            return                              # out of memory: the loop stops on s.error
        s.st.timeouts += 1
        sk.n_timeouts += 1
        trims_forget(sk)                          # trimmed packets too go again by the cursor
        if w.p.entropy == ENTROPY_REPS:
            entropy_timeout(s, fl)
        if w.p.delivery == UNORDERED:
            # every packet not SACKed up to snd_max is lost, and sent again once more
            sk.recovery_end = fl.snd_max
            sk.retx_nxt = fl.snd_una
            sk.loss_told = fl.snd_max             # the scheme hears of these by on_timeout
            bits_alloc(s, &sk.sack_bits, &sk.sack_bits_len, w.flows[f].size)
        elif w.p.loss_recovery == SELECTIVE_REPEAT:
            # retransmit every packet the receiver has not reported, up to snd_max
            sk.recovery_end = fl.snd_max
            sk.sack_high = fl.snd_max
            sk.retx_nxt = fl.snd_una
            bits_alloc(s, &sk.sack_bits, &sk.sack_bits_len, w.flows[f].size)
        else:
            fl.snd_nxt = fl.snd_una
        rate = fl.rate_bps
        w.cc.on_timeout(s, f)
        nic_rate_changed(s, f, rate)
        active_add(s, f)
        sched_update(s, f)
        nic_kick(s, w.flows[f].src)
        fl.rto_deadline = s.now + w.p.rto
    elif s.now >= fl.rto_deadline:
        fl.rto_deadline = s.now + w.p.rto     # nothing outstanding: keep watching
    fl.rto_armed = 1
    ev_push(s, fl.rto_deadline, EV_RTO, f, 0)
