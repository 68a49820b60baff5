# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The PFC watchdog, as switch vendors ship it (SONiC's PFC watchdog design: detection,
mitigation, restoration; Juniper's and Cisco's PFC watchdog are alike).

Every `interval` (EV_WATCHDOG; nothing is scheduled when off) it looks at each lossless
(port, priority) of every switch:

* Detection: a queue that holds packets and has been paused all along since the poll
  that first found it so (so has sent nothing at that priority) for `detection` time is
  in a PAUSE storm (Guo et al., SIGCOMM 2016: a NIC that keeps pausing its ToR).
* Mitigation, `drop`: the queue is flushed, later arrivals for it are dropped, and packets
  from the storming peer at that priority are dropped instead of paused (the switch sends
  it no PAUSE; a RESUME lifts one it had sent).  `forward`: the peer's PAUSE frames for
  that priority are ignored and the queue transmits.
* Restoration: once the peer has not asserted XOFF for `restoration` time, the queue is
  lossless again (the next XOFF from the peer pauses it as before).

Per port it counts storms detected, restorations and packets it dropped (ports.csv).

A run in parts (issue 20): the polls are not events but run between windows, over every
part's ports (monitors.pyx), at `next_at`; what a poll does to a port (flush, PAUSE frames,
its transmitter) is done in that port's part (parts.pxd), whose clock is then the poll's.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t, uint8_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, free
from rocesim._core.defs cimport Sim, World, Port, NIL, NPRIO, EV_WATCHDOG
from rocesim._core.parts cimport port_sim
from rocesim._core.events cimport ev_push
from rocesim._core.link cimport port_set_paused
from rocesim._core.mmu cimport pfc_send
from rocesim._core.switch cimport switch_flush


cdef int watchdog_init(Sim* s, int64_t interval, int64_t detection, int64_t restoration,
                       int32_t action) noexcept nogil:
    cdef World* w = s.w
    cdef WDState* st = <WDState*> calloc(1, sizeof(WDState))
    cdef int32_t n = max(w.n_ports * NPRIO, 1), k
    if st == NULL:
        return -1
    w.watchdog = st
    st.interval = interval
    st.detection = detection
    st.restoration = restoration
    st.action = action
    st.since = <int64_t*> malloc(n * sizeof(int64_t))
    st.calm_since = <int64_t*> malloc(n * sizeof(int64_t))
    st.stormed = <uint8_t*> calloc(n, 1)
    if st.since == NULL or st.calm_since == NULL or st.stormed == NULL:
        return -1
    for k in range(n):
        st.since[k] = NIL
        st.calm_since[k] = NIL
    if w.node_part != NULL:
        st.next_at = s.now + interval
        return 0
    st.next_at = INT64_MAX                # (the event holds it)
    ev_push(s, s.now + interval, EV_WATCHDOG, 0, 0)
    s.n_monitors += 1
    return 0


cdef void watchdog_free(Sim* s) noexcept nogil:
    cdef World* w = s.w
    cdef WDState* st = <WDState*> w.watchdog
    if st != NULL:
        free(st.since)
        free(st.calm_since)
        free(st.stormed)
        free(st)
        w.watchdog = NULL


cdef void _storm(Sim* s, WDState* st, int32_t port, int32_t prio) noexcept nogil:
    """Mitigate a storm at (port, prio); `s` is the port's part."""
    cdef Port* p = &s.w.ports[port]
    cdef uint8_t bit = <uint8_t> (1 << prio)
    cdef int64_t n
    st.stormed[port * NPRIO + prio] = 1
    st.calm_since[port * NPRIO + prio] = NIL
    p.wd_detections += 1
    if st.action == WD_DROP:
        p.drop_mask |= bit
        n = switch_flush(s, port, bit)
        p.wd_dropped += n
        s.st.watchdog_drops += n
        if p.pause_sent[prio]:
            pfc_send(s, port, prio, False)     # stop pausing the storming peer
    else:
        p.pause_ignore |= bit
        port_set_paused(s, port, prio, False)  # transmit as if never paused
        p.xoff_rx |= bit                        # (the peer's XOFF still stands)


cdef void _restore(Sim* s, WDState* st, int32_t port, int32_t prio) noexcept nogil:
    cdef Port* p = &s.w.ports[port]
    cdef uint8_t bit = <uint8_t> (1 << prio)
    st.stormed[port * NPRIO + prio] = 0
    st.since[port * NPRIO + prio] = NIL
    p.wd_restorations += 1
    if not p.down:
        p.drop_mask &= ~bit
    p.pause_ignore &= ~bit


cdef bint watchdog_poll_at(Sim* s, int64_t now) noexcept nogil:
    """One poll at `now` (every part that acts has its clock at `now`): whether a queue is
    stuck or stormed, that it must keep watching."""
    cdef World* w = s.w
    cdef WDState* st = <WDState*> w.watchdog
    cdef int32_t i, q, k
    cdef Port* p
    cdef bint stuck, watching = False
    for i in range(w.n_ports):
        p = &w.ports[i]
        if not p.is_switch:
            continue
        for q in range(1, NPRIO):
            if not (w.p.pfc_mask >> q) & 1:
                continue
            k = i * NPRIO + q
            if st.stormed[k]:
                if (p.xoff_rx >> q) & 1:
                    st.calm_since[k] = NIL          # the peer still pauses
                elif st.calm_since[k] == NIL:
                    st.calm_since[k] = now
                elif now - st.calm_since[k] >= st.restoration:
                    _restore(s, st, i, q)
                watching = True
                continue
            stuck = (p.paused_mask >> q) & 1 and (p.q_mask >> q) & 1
            if not stuck:
                st.since[k] = NIL
            elif st.since[k] != p.paused_since[q]:
                st.since[k] = p.paused_since[q]      # first poll of this pause that finds it stuck
                watching = True
            elif now - p.paused_since[q] >= st.detection:
                _storm(port_sim(s, i), st, i, q)
                watching = True
            else:
                watching = True
    return watching


cdef void watchdog_again(Sim* s, int64_t now, bint watching, bint busy, int64_t flows_done) noexcept nogil:
    """After a poll at `now`: poll on (`next_at`) while flows are unfinished and something
    may still change: other events (`busy`), or a stuck or stormed queue it must act on
    (`watching`: it may be what unfreezes the network)."""
    cdef World* w = s.w
    cdef WDState* st = <WDState*> w.watchdog
    st.next_at = now + st.interval if flows_done < w.n_flows and (watching or busy) else INT64_MAX


cdef void watchdog_poll(Sim* s) noexcept nogil:
    """One poll (an EV_WATCHDOG event, one part)."""
    cdef WDState* st = <WDState*> s.w.watchdog
    cdef bint watching
    if st == NULL:
        return
    s.n_monitors -= 1
    watching = watchdog_poll_at(s, s.now)
    watchdog_again(s, s.now, watching, s.n_events > s.n_monitors, s.st.flows_done)
    if st.next_at != INT64_MAX:
        ev_push(s, st.next_at, EV_WATCHDOG, 0, 0)
        s.n_monitors += 1
        st.next_at = INT64_MAX            # (the event holds it)
