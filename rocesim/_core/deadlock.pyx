# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""PFC deadlock detection: cycles in the wait-for graph of paused queues.

Run as an event of its own (EV_DEADLOCK) every `interval`; nothing is scheduled when the
detector is off.  At each check:

* The nodes are the switch egress queues (port, priority) that hold packets, are paused
  by the peer, and have stayed paused continuously for at least `threshold` (a queue
  paused that long has sent nothing at that priority all along).
* An edge runs from queue (e, p) at switch S to queue (f, p') at the switch T that paused
  it, when T's ingress (peer of e, p) has XOFF set and packets that entered by it wait
  in (f, p') (p' = p unless T moved them to another priority): e cannot send until f
  drains.  This is the wait-for graph of a cyclic buffer
  dependency (Hu et al., "Deadlocks in datacenter networks: why do they form, and how to
  avoid them", HotNets 2016; Shpiner et al., "Unlocking credit loop deadlock", HotNets 2016).
* Every strongly connected component of two or more queues (or one waiting on itself) is
  a deadlock: all its queues wait on one another and have been paused for longer than
  the threshold.  One cycle through it is reported (its first queue in port order, then
  the shortest way round), with the time it formed (the last of its pauses began), the
  priority, and the flows with packets in its queues.  A cycle is reported once.

A cyclic buffer dependency whose pauses come and go never has all its queues paused for
the threshold at once, so it is not reported.  When no other event is left the network is
frozen for good: any cycle then present is reported whatever the threshold, and the
detector stops.  The cost is one pass over the ports per check, plus work proportional to
the queues that have been paused for the threshold (none in a healthy network).

A run that stalls (engine.Core.deadlocks_at_stall: no event left, or nothing delivered for
a long time) is looked at once, the same way, whether detection is on or off: the state is
allocated then if it was off (`periodic` 0), and no event is ever scheduled for it.

A run in parts (issue 20): the checks are not events but run between windows, over every
part's ports (monitors.pyx), at `next_at`; a queue's packets are in its port's part's pool
(parts.pxd).
"""
from libc.stdint cimport int64_t, int32_t, uint32_t, uint64_t, uint8_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from rocesim._core.defs cimport Sim, World, Port, NIL, NPRIO, ERR_NOMEM, EV_DEADLOCK
from rocesim._core.events cimport ev_push
from rocesim._core.rng cimport mix64
from rocesim._core.parts cimport port_sim


cdef DLState* _alloc(Sim* s, int64_t threshold) noexcept nogil:
    """The detector's state, with no check scheduled; NULL if out of memory (what was
    allocated is in w.deadlock: deadlock_free releases it)."""
    cdef World* w = s.w
    cdef DLState* st = <DLState*> calloc(1, sizeof(DLState))
    cdef int32_t k
    if st == NULL:
        return NULL
    w.deadlock = st
    st.threshold = threshold
    st.next_at = INT64_MAX
    st.n_keys = w.n_ports * NPRIO
    st.cand = <int32_t*> malloc(max(st.n_keys, 1) * sizeof(int32_t))
    st.nodes = <int32_t*> malloc(max(st.n_keys, 1) * sizeof(int32_t))
    st.adj_off = <int32_t*> malloc((st.n_keys + 1) * sizeof(int32_t))
    st.scratch = <int32_t*> malloc(6 * max(st.n_keys, 1) * sizeof(int32_t))
    st.flow_mark = <uint8_t*> calloc(max(w.n_flows, 1), 1)
    st.adj_cap = 64
    st.adj = <int32_t*> malloc(st.adj_cap * sizeof(int32_t))
    if (st.cand == NULL or st.nodes == NULL or st.adj_off == NULL or st.scratch == NULL
            or st.flow_mark == NULL or st.adj == NULL):
        return NULL
    for k in range(st.n_keys):
        st.cand[k] = NIL
    return st


cdef int deadlock_init(Sim* s, int64_t interval, int64_t threshold, bint stop) noexcept nogil:
    """Allocate the detector and schedule its first check (an event; in parts, `next_at`);
    0 on success, -1 out of memory."""
    cdef DLState* st = _alloc(s, threshold)
    if st == NULL:
        return -1
    st.interval = interval
    st.stop = stop
    st.periodic = 1
    if s.w.node_part != NULL:
        st.next_at = s.now + interval
        return 0
    ev_push(s, s.now + interval, EV_DEADLOCK, 0, 0)
    s.n_monitors += 1
    return 0


cdef void deadlock_free(Sim* s) noexcept nogil:
    cdef World* w = s.w
    cdef DLState* st = <DLState*> w.deadlock
    if st == NULL:
        return
    free(st.cand)
    free(st.nodes)
    free(st.adj_off)
    free(st.adj)
    free(st.scratch)
    free(st.flow_mark)
    free(st.recs)
    free(st.rec_ports)
    free(st.rec_flows)
    free(st)
    w.deadlock = NULL


cdef inline bint _holds_from(Sim* s, int32_t port, int32_t prio, int32_t in_port,
                             int32_t in_prio) noexcept nogil:
    """Queue (port, prio) holds a packet that entered its switch by `in_port` at `in_prio`."""
    cdef int32_t i = s.w.ports[port].q_head[prio]
    s = port_sim(s, port)                 # (its packets are in its part's pool)
    while i != NIL:
        if s.pkts[i].in_port == in_port and s.pkts[i].in_prio == in_prio:
            return True
        i = s.pkts[i].next
    return False


cdef inline bint _grow(void** arr, int32_t* cap, int32_t need, size_t item) noexcept nogil:
    cdef int32_t c = cap[0]
    cdef void* grown
    if need <= c:
        return True
    while c < need:
        c = 16 if c == 0 else 2 * c
    grown = realloc(arr[0], c * item)
    if grown == NULL:
        return False
    arr[0] = grown
    cap[0] = c
    return True


cdef int _build_edges(Sim* s, DLState* st) noexcept nogil:
    """Wait-for edges among the candidates (CSR in adj_off/adj); -1 if out of memory."""
    cdef World* w = s.w
    cdef int32_t a, b, n = st.n_nodes, e, f, q, peer, T
    cdef int64_t m = 0
    cdef int32_t* grown
    for a in range(n):
        st.adj_off[a] = <int32_t> m
        e = st.nodes[a] // NPRIO
        q = st.nodes[a] % NPRIO
        peer = w.ports[e].peer
        T = w.ports[e].peer_node
        if T < w.n_hosts or not w.ports[peer].pause_sent[q]:
            continue                          # a host paused it, or the XOFF is not ours
        for b in range(n):
            f = st.nodes[b] // NPRIO
            if w.ports[f].node != T:
                continue
            if not _holds_from(s, f, st.nodes[b] % NPRIO, peer, q):
                continue
            if m == st.adj_cap:
                grown = <int32_t*> realloc(st.adj, 2 * st.adj_cap * sizeof(int32_t))
                if grown == NULL:
                    return -1
                st.adj = grown
                st.adj_cap *= 2
            st.adj[m] = b
            m += 1
    st.adj_off[n] = <int32_t> m
    return 0


cdef int32_t _cycle_from(DLState* st, int32_t root, int32_t* comp, int32_t c, int32_t* prev,
                         int32_t* queue, int32_t* out) noexcept nogil:
    """Shortest cycle through `root` inside component c (comp[v] == c): its nodes in order
    (root first) in `out`; returns its length.  BFS from root back to root."""
    cdef int32_t head = 0, tail = 0, v, w, k, n = 0, last = NIL
    for v in range(st.n_nodes):
        prev[v] = -2                           # not reached
    queue[tail] = root
    tail += 1
    prev[root] = NIL
    while head < tail and last == NIL:
        v = queue[head]
        head += 1
        for k in range(st.adj_off[v], st.adj_off[v + 1]):
            w = st.adj[k]
            if comp[w] != c:
                continue
            if w == root:
                last = v
                break
            if prev[w] == -2:
                prev[w] = v
                queue[tail] = w
                tail += 1
    if last == NIL:
        return 0
    v = last                                   # walk back root <- ... <- last, then reverse
    while v != NIL:
        out[n] = v
        n += 1
        v = prev[v]
    for k in range(n // 2):
        v = out[k]
        out[k] = out[n - 1 - k]
        out[n - 1 - k] = v
    return n


cdef int _record(Sim* s, DLState* st, int32_t* cyc, int32_t n, int64_t now) noexcept nogil:
    """Report the cycle cyc[0..n) (candidate indices), found at `now`, unless already
    reported: 1 if new, 0 if known, -1 out of memory."""
    cdef World* w = s.w
    cdef int64_t formed = 0, since
    cdef uint64_t key = 0
    cdef int32_t k, port, prio, i, r
    cdef DLRecord* rec
    cdef Sim* ps
    for k in range(n):
        port = st.nodes[cyc[k]] // NPRIO
        prio = st.nodes[cyc[k]] % NPRIO
        since = w.ports[port].paused_since[prio]
        if since > formed:
            formed = since
        key += mix64(<uint64_t> st.nodes[cyc[k]] + 1)
    key = mix64(key ^ <uint64_t> formed)
    for r in range(st.n_recs):
        if st.recs[r].key == key:
            return 0
    if not (_grow(<void**> &st.recs, &st.cap_recs, st.n_recs + 1, sizeof(DLRecord))
            and _grow(<void**> &st.rec_ports, &st.cap_rec_ports, st.n_rec_ports + n, sizeof(int32_t))):
        return -1
    rec = &st.recs[st.n_recs]
    rec.formed = formed
    rec.detected = now
    rec.key = key
    rec.prio = st.nodes[cyc[0]] % NPRIO
    rec.port_off = st.n_rec_ports
    rec.n_ports = n
    rec.flow_off = st.n_rec_flows
    rec.n_flows = 0
    for k in range(n):
        st.rec_ports[st.n_rec_ports] = st.nodes[cyc[k]]          # port * NPRIO + prio
        st.n_rec_ports += 1
    # the flows with packets in the cycle's queues, each once
    for k in range(n):
        port = st.nodes[cyc[k]] // NPRIO
        ps = port_sim(s, port)            # (its packets are in its part's pool)
        i = w.ports[port].q_head[st.nodes[cyc[k]] % NPRIO]
        while i != NIL:
            if not st.flow_mark[ps.pkts[i].flow]:
                st.flow_mark[ps.pkts[i].flow] = 1
                if not _grow(<void**> &st.rec_flows, &st.cap_rec_flows, st.n_rec_flows + 1, sizeof(int32_t)):
                    return -1
                st.rec_flows[st.n_rec_flows] = ps.pkts[i].flow
                st.n_rec_flows += 1
                rec.n_flows += 1
            i = ps.pkts[i].next
    for k in range(rec.flow_off, st.n_rec_flows):
        st.flow_mark[st.rec_flows[k]] = 0
    st.n_recs += 1
    return 1


cdef int32_t _components(DLState* st, int32_t* comp) noexcept nogil:
    """Tarjan's strongly connected components of the candidate graph, without recursion:
    comp[v] = component id; returns the number of components."""
    cdef int32_t n = st.n_nodes
    cdef int32_t* index = st.scratch + st.n_keys
    cdef int32_t* low = st.scratch + 2 * st.n_keys
    cdef int32_t* stack = st.scratch + 3 * st.n_keys
    cdef int32_t* call = st.scratch + 4 * st.n_keys       # DFS path
    cdef int32_t* cursor = st.scratch + 5 * st.n_keys     # next edge of each node on the path
    cdef int32_t counter = 0, sp = 0, cp = 0, ncomp = 0, root, v, w, k
    for v in range(n):
        index[v] = -1
        comp[v] = -1                          # -1: not assigned; -3: on the stack
    for root in range(n):
        if index[root] != -1:
            continue
        w = root
        while True:
            if w != NIL:                      # enter w
                index[w] = counter
                low[w] = counter
                counter += 1
                stack[sp] = w
                sp += 1
                comp[w] = -3
                call[cp] = w
                cursor[w] = st.adj_off[w]
                cp += 1
                w = NIL
            if cp == 0:
                break
            v = call[cp - 1]
            k = cursor[v]
            if k < st.adj_off[v + 1]:
                cursor[v] = k + 1
                if index[st.adj[k]] == -1:
                    w = st.adj[k]
                elif comp[st.adj[k]] == -3 and index[st.adj[k]] < low[v]:
                    low[v] = index[st.adj[k]]
                continue
            cp -= 1                            # leave v
            if cp > 0 and low[v] < low[call[cp - 1]]:
                low[call[cp - 1]] = low[v]
            if low[v] == index[v]:
                while True:
                    sp -= 1
                    comp[stack[sp]] = ncomp
                    if stack[sp] == v:
                        break
                ncomp += 1
    return ncomp


cdef int _scan(Sim* s, DLState* st, bint frozen, int64_t now) noexcept nogil:
    """Look for deadlocked cycles at `now` (every paused queue holding packets is a candidate
    when the network is `frozen`, else those paused for the threshold) and record the new
    ones: how many, or -1 (s.error set) if out of memory."""
    cdef World* w = s.w
    cdef int32_t i, q, n = 0, c, ncomp, v, k, length, r, found = 0
    cdef uint32_t m
    cdef Port* p
    cdef int32_t* comp
    cdef int32_t* prev
    cdef int32_t* queue
    cdef int32_t* out
    cdef int32_t* seen
    for i in range(w.n_ports):
        p = &w.ports[i]
        m = p.paused_mask & p.q_mask
        if m == 0 or not p.is_switch:
            continue
        for q in range(1, NPRIO):
            if (m >> q) & 1 and (frozen or now - p.paused_since[q] >= st.threshold):
                st.cand[i * NPRIO + q] = n
                st.nodes[n] = i * NPRIO + q
                n += 1
    st.n_nodes = n
    if n > 0:
        if _build_edges(s, st) < 0:
            s.error = ERR_NOMEM
        elif st.adj_off[n] > 0:
            comp = st.scratch
            ncomp = _components(st, comp)
            # per component: its first node (lowest port), a cycle through it if it has one
            prev = st.scratch + st.n_keys           # index/low/stack/call are free again
            queue = st.scratch + 2 * st.n_keys
            out = st.scratch + 3 * st.n_keys
            seen = st.scratch + 4 * st.n_keys
            for c in range(ncomp):
                seen[c] = 0
            for v in range(n):
                c = comp[v]
                if seen[c]:
                    continue
                seen[c] = 1
                length = _cycle_from(st, v, comp, c, prev, queue, out)
                if length > 0:
                    r = _record(s, st, out, length, now)
                    if r < 0:
                        s.error = ERR_NOMEM
                        found = -1
                        break
                    found += r
        for k in range(n):
            st.cand[st.nodes[k]] = NIL
    return found


cdef bint deadlock_check_at(Sim* s, int64_t now, bint frozen, int64_t flows_done) noexcept nogil:
    """One check at `now`, the network `frozen` (no event left but the monitors') or not,
    `flows_done` flows finished: records the new cycles and sets `next_at`, the next
    check's time (INT64_MAX: none; none once frozen or every flow is done).  True when the
    run should stop (a new deadlock, and the detector stops at the first)."""
    cdef World* w = s.w
    cdef DLState* st = <DLState*> w.deadlock
    cdef int found = _scan(s, st, frozen, now)
    st.next_at = now + st.interval if not frozen and flows_done < w.n_flows else INT64_MAX
    return found > 0 and st.stop


cdef bint deadlock_check(Sim* s) noexcept nogil:
    """One check (an EV_DEADLOCK event, one part).  True when the run should stop."""
    cdef DLState* st = <DLState*> s.w.deadlock
    cdef bint stop
    if st == NULL:
        return False
    stop = deadlock_check_at(s, s.now, s.n_events == s.n_monitors - 1, s.st.flows_done)
    s.n_monitors -= 1
    if st.next_at != INT64_MAX:
        ev_push(s, st.next_at, EV_DEADLOCK, 0, 0)
        s.n_monitors += 1
        st.next_at = INT64_MAX            # (the event holds it)
    return stop


cdef int deadlock_at_stall(Sim* s, int64_t threshold, bint frozen, int64_t now) noexcept nogil:
    """The run has stalled (flows unfinished, nothing moves them): record the cycles that
    hold it, as a check at `now` would, detection on or off.  With no event left (monitors
    apart: `frozen`) every paused queue counts; else (timers still tick) those paused for
    the detector's threshold, or `threshold` when detection is off.  The new cycles'
    count, or -1 if out of memory."""
    cdef DLState* st = <DLState*> s.w.deadlock
    if st == NULL:
        st = _alloc(s, threshold)
        if st == NULL:
            s.error = ERR_NOMEM
            return -1
    return _scan(s, st, frozen, now)
