# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The event loop: pop the earliest event, dispatch it by kind, until a limit.

Events are (time, seq, kind, target, arg) in the event queue (events.pxd); ties break by
insertion order, so a run is bit-identical for a seed.  `run_loop` returns to the
caller (engine.Core.run) at a simulated-time or event-count limit, so Python can show
progress and stop cleanly between slices.
"""
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport (Sim, World, Event, Packet, Port, NIL, EV_ARRIVE, EV_TX,
                                 EV_FLOW_START, EV_RTO, EV_CC_TIMER, EV_ACK_TIMER, EV_COMPUTE_DONE, EV_DEADLOCK,
                                 EV_FAULT, EV_WATCHDOG, EV_PULL, PK_PAUSE, FS_ACTIVE)
from rocesim._core.events cimport ev_push, ev_pop, ev_peek
from rocesim._core.qp cimport qp_of
from rocesim._core.link cimport wire_pop, port_set_paused, __builtin_prefetch
from rocesim._core.pool cimport pkt_free
from rocesim._core.switch cimport switch_receive, switch_port_tx
from rocesim._core.nic_send cimport nic_start_flow, nic_port_tx, nic_rate_changed, sched_update
from rocesim._core.nic_recv cimport nic_receive, nic_ack_timer
from rocesim._core.nic_timeout cimport nic_rto
from rocesim._core.flows cimport flows_next_root, flow_compute_done, flow_activate
from rocesim._core.deadlock cimport deadlock_check
from rocesim._core.faults cimport fault_apply, fault_lost_arrival, fault_nic_arrival
from rocesim._core.watchdog cimport watchdog_poll
from rocesim._core.rccc cimport rccc_pace


cdef int run_loop(Sim* s, int64_t until, int64_t max_events) noexcept nogil:
    """Run events up to time `until` (inclusive) or `max_events` events; a STOP_* code."""
    cdef World* w = s.w
    cdef Event ev
    cdef int64_t n = 0
    cdef int32_t i, peer
    cdef Packet* pk
    cdef Port* p
    cdef int status = STOP_EMPTY
    cdef int64_t rate
    cdef Event* nxt
    while event_due(s, until, n, max_events, &status):
        ev = ev_pop(s)
        nxt = ev_peek(s)
        if nxt != NULL and nxt.kind <= EV_TX:
            # start fetching what the next event will touch while this one runs: at
            # thousands of ports and packets in flight they are rarely in cache (fetching
            # for the one after it too gained nothing: k=8 permutation, interleaved)
            __builtin_prefetch(&w.ports[nxt.target])
            if nxt.arg >= 0:                  # the packet arriving, or likely to be sent (port_kick)
                __builtin_prefetch(&s.pkts[nxt.arg])
        if ev.time < s.now:
            s.st.time_errors += 1
        s.now = ev.time
        n += 1
        if ev.kind <= EV_FAULT:
            s.last_work = s.now
        elif ev.kind < EV_ACK_TIMER and w.flows[ev.target].state == FS_ACTIVE:
            s.last_work = s.now             # a sender's timer, while it sends
        elif ev.kind == EV_ACK_TIMER and w.flows[ev.target].rx_finish == NIL:
            s.last_work = s.now             # a receiver's, while it receives (its own state)
        if ev.kind == EV_ARRIVE:
            peer = ev.target                  # the port it arrives at
            i = wire_pop(s, peer)
            s.st.link_crossings += 1
            pk = &s.pkts[i]
            if pk.kind >= PK_PAUSE:
                if pk.kind == PK_PAUSE:
                    port_set_paused(s, peer, pk.prio, pk.pause_on)
                else:
                    fault_lost_arrival(s, peer, i)    # its link went down while it was on it
                pkt_free(s, i)
            elif w.ports[peer].is_switch:
                switch_receive(s, peer, i)
            elif w.ports[peer].drop_mask:
                fault_nic_arrival(s, peer, i)         # a NIC that stopped draining
            else:
                nic_receive(s, w.ports[peer].node, i)
        elif ev.kind == EV_TX:
            p = &w.ports[ev.target]
            if p.tx_event != ev.time:
                continue                      # superseded by an earlier wake-up
            p.tx_event = NIL
            if p.is_switch:
                switch_port_tx(s, ev.target)
            else:
                nic_port_tx(s, ev.target)
        elif ev.kind == EV_FLOW_START:
            if ev.arg:
                flows_next_root(s)
            if w.flows[ev.target].is_compute:
                flow_activate(s, ev.target)
                ev_push(s, s.now + w.flows[ev.target].size, EV_COMPUTE_DONE, ev.target, 0)
            else:
                nic_start_flow(s, ev.target)
        elif ev.kind == EV_RTO:
            nic_rto(s, ev.target)
        elif ev.kind == EV_CC_TIMER:
            if w.flows[ev.target].qp != NIL:    # active, served (a scheme's timers start then)
                rate = qp_of(s, ev.target).rate_bps
                w.cc.on_timer(s, ev.target, ev.arg)
                nic_rate_changed(s, ev.target, rate)
                sched_update(s, ev.target)         # the scheme may have moved its window
        elif ev.kind == EV_ACK_TIMER:
            nic_ack_timer(s, ev.target, ev.time)
        elif ev.kind == EV_COMPUTE_DONE:
            flow_compute_done(s, ev.target)
        elif ev.kind == EV_FAULT:
            fault_apply(s, ev.target)
        elif ev.kind == EV_WATCHDOG:
            watchdog_poll(s)
        elif ev.kind == EV_PULL:
            rccc_pace(s, ev.target)
        elif ev.kind == EV_DEADLOCK:
            if deadlock_check(s):
                status = STOP_DEADLOCK
                break
    s.st.events += n
    return status
