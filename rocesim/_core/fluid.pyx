# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The flow-level network: data flows as fluids that share link capacity max-min fairly.

`fluid_loop` replaces the packet loop (loop.pyx) when a run is in flow mode.  Everything
else is the packet core's: the flows and their release (start times, the dependency
graph, compute steps: flows.pyx), the routed paths (the same ECMP draw, `trace_path`
with the flow's hash: its queue pair's 5-tuple, so a flow takes the uplinks its packets
would) and the event queue.

Load balancing that spreads a flow's packets (a switch's scheme that splits: `spray`,
`adaptive`, marked by `fluid_split_at`; or the sender's entropy, nic.entropy_every) makes the
flow a split flow: its forward links are the set of links its packets can take, each
carrying a fixed share of its one rate (a splitting switch gives each equal-cost port an
even part of what reaches it, an ECMP switch sends all of it where its hash goes; with
entropy each window of packets has its hash, and past SPLIT_WINDOWS windows every switch
splits evenly).  The shares are the loads per unit of rate its links take in the max-min
fill below, as its ACKs take a fraction; nothing else changes.  A flow whose set would hold
more links than a slot (SLOT_LINKS with its ACKs' path) takes its one ECMP path instead
(counted: Stats.fluid_split_fallbacks).

A data flow that starts joins the fluid (after `startup` ps, a calibrated start-up cost):
it has its forward path's links and, for its ACKs, its reverse path's links.  It must
send its wire bytes W (payload plus a header per packet, as the packet level sends them)
at a rate r (wire bits/s) that loads each forward link by r and each reverse link by
r x a, a = an ACK's wire bytes over those of the ack_every full packets it acknowledges.
Rates are max-min fair under these loads, a flow with a rate limit capped by it.  A link
offers its rate, except where data flows that came over two or more different links meet
(a switch egress several ingress ports feed) and their demand exceeds it (it is their
bottleneck at full rate, the ACKs it carries left out: ACKs alone, a few percent of a
link, do not make a queue that congestion control acts on): where congestion control has
something to control, it offers its rate x `share` (a calibration per scheme, measured at the packet level:
validation/flow_calibration.py; 1 by default).  When W has left the NIC at the rates in force, the
last packet still crosses the later hops, each after the full packet before it (store
and forward), plus every link's delay: the receiver then has the last byte (children are
released, as at the packet level) and the sender its ACK after the reverse path's
latency.  Alone in an idle network this is the packet level's closed form (flows.pyx),
except that an ACK never queues behind another.

Rates are recomputed only where they can change: when flows start or end at time t, one
solve at t (after every event already due at t) takes the links they touch, the flows on
those links and, transitively, the links of those flows (a max-min allocation depends on
nothing outside that connected part), and fills it progressively: every unfrozen flow's
rate rises together until a link is full (its remaining capacity over its unfrozen
flows' loads is the smallest, taken from a heap whose keys only grow) or a flow reaches
its cap; those flows freeze (Bertsekas & Gallager, Data Networks, 6.5.2).  A flow whose
rate changed gets a new send-completion time; the event at the old one is skipped when
it comes (its time no longer matches), as EV_TX is in the packet loop.

Not modelled (the flow mode refuses the features that need them, rocesim.simulation):
queues, ECN, PFC, losses, priorities (every flow shares every link it crosses).
"""
from libc.stdint cimport int64_t, int32_t, uint16_t, uint32_t, uint64_t, uint8_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
cdef extern from "<stdlib.h>" nogil:
    int posix_memalign(void** p, size_t alignment, size_t size)
from libc.math cimport ceil, llround, INFINITY
from rocesim._core.defs cimport (Sim, World, Event, RouteGroup, NIL, ERR_NOMEM, EV_FLOW_START, EV_COMPUTE_DONE,
                                 EV_FLUID)
from rocesim._core.events cimport ev_push, ev_pop
from rocesim._core.link cimport tx_time
from rocesim._core.growth cimport room_for_one
from rocesim._core.routing cimport flow_hash, flow_rhash, flow_path_off, ecmp_index, with_entropy
from rocesim._core.flows cimport (trace_path, flows_next_root, flow_activate, flow_finish,
                                  flow_compute_done, flow_delivered)
from rocesim._core.loop cimport STOP_EMPTY, event_due
from rocesim._core.bits cimport rocesim_ctz64

cdef enum:
    LADDER = 48            # _fill: octaves of the links' first levels told apart (the last takes the rest)
    MAX_HOPS = 32          # links of one direction of a path (a longer one is treated as none)
    SLOT_LINKS = 2 * MAX_HOPS   # at most 64: FluidSlot.multi has a bit per link
    SPLIT_ITEMS = 256      # _path_set: the (link, hash) pairs one hop of a split flow's paths may hold
    SPLIT_WINDOWS = 16     # _path_set: the most entropy windows told apart (more: an even split)

# an entry's tag in Fluid.mem and Fluid.fent (index << 2 | tag): what load per unit of rate it takes
cdef enum:
    T_DATA = 0             # a one-path flow's data link: 1
    T_ACK = 1              # a link of its ACKs: the flow's ack_coef
    T_SPLIT = 2            # a split flow's data link: its share (beside it in mem_w or fent_w)

# what an EV_FLUID event (target: a flow, or 0 for a solve) means
cdef enum:
    FL_SENT = 0            # the flow's last byte leaves its NIC at the rates in force (superseded
                           #   when the rates changed: the slot's sent_at no longer matches)
    FL_DELIVERED = 1       # the last byte reaches the receiver
    FL_ACKED = 2           # its ACK reaches the sender
    FL_JOIN = 3            # the start-up cost has elapsed: the flow joins the fluid
    FL_SOLVE = 4           # recompute the rates where flows started or ended

cdef double PS_PER_BIT = 1e12      # bits / (bits/s) x this = ps
cdef double REL_SAME = 1e-9        # a new rate this close to the old one changes nothing
cdef double REL_TIE = 1e-6         # pass 1: what a link where flows meet offers beyond its rate


cdef inline Fluid* _fd(Sim* s) noexcept nogil:
    return <Fluid*> s.w.fluid


cdef int fluid_init(Sim* s, double share, int64_t startup_ps) noexcept:
    """The flow-level network for `s` (its ports and flows built); -1 when out of memory."""
    cdef World* w = s.w
    cdef Fluid* fd = <Fluid*> calloc(1, sizeof(Fluid))
    cdef int32_t i, P = w.n_ports
    if fd == NULL:
        return -1
    w.fluid = fd
    fd.share = share
    fd.startup = startup_ps
    fd.solve_at = NIL
    fd.free_slot = NIL
    if posix_memalign(<void**> &fd.ls, 64, max(P, 1) * sizeof(LinkSet)) != 0:   # a LinkSet per cache line half
        fd.ls = NULL
        return -1
    memset(fd.ls, 0, max(P, 1) * sizeof(LinkSet))
    fd.queue = <int32_t*> malloc(max(P, 1) * sizeof(int32_t))
    fd.dirty = <int32_t*> malloc(max(P, 1) * sizeof(int32_t))
    fd.is_dirty = <uint8_t*> calloc(max(P, 1), sizeof(uint8_t))
    fd.slot_of = <int32_t*> malloc(max(w.n_flows, 1) * sizeof(int32_t))
    if fd.ls == NULL or fd.queue == NULL or fd.dirty == NULL or fd.is_dirty == NULL or fd.slot_of == NULL:
        return -1
    for i in range(P):
        fd.ls[i].capacity = w.ports[i].rate_bps
    for i in range(w.n_flows):
        fd.slot_of[i] = NIL
    return 0


cdef int fluid_split_at(Sim* s, int32_t switch) noexcept:
    """The fluid splits flows evenly over the equal-cost ports of `switch` (0..n_switches-1),
    whose load-balancing scheme spreads packets; -1 when out of memory."""
    cdef World* w = s.w
    cdef Fluid* fd = _fd(s)
    if fd.split_at == NULL:
        fd.split_at = <uint8_t*> calloc(max(w.n_nodes - w.n_hosts, 1), sizeof(uint8_t))
        if fd.split_at == NULL:
            return -1
    fd.split_at[switch] = 1
    return 0


cdef void fluid_free(Sim* s) noexcept:
    cdef World* w = s.w
    cdef Fluid* fd = _fd(s)
    cdef int32_t i
    if fd == NULL:
        return
    if fd.ls != NULL:
        for i in range(w.n_ports):
            free(fd.ls[i].ent)
    free(fd.ls)
    free(fd.queue)
    free(fd.dirty)
    free(fd.is_dirty)
    free(fd.slot_of)
    free(fd.slots)
    free(fd.rest)
    free(fd.links)
    free(fd.pos)
    free(fd.weight)
    free(fd.prev)
    free(fd.sk)
    free(fd.sf)
    free(fd.mem)
    free(fd.mem_w)
    free(fd.fent)
    free(fd.fent_w)
    free(fd.split_at)
    free(fd.heap.a)
    free(fd.owns.a)
    free(fd.ladder.a)
    free(fd)
    w.fluid = NULL


# --- a 4-ary heap of (key, id) with the smallest on top ------------------------------

cdef extern from *:
    """
    /* a comes before b (fluid.pxd HeapItem): key first, ties by id.  Keys are doubles >= 0
       (never -0 or NaN), whose bits order as they do; with 128-bit integers this is one
       comparison without branches (the heap's child choices are unpredictable). */
    static inline int rocesim_heap_before(const void* a, const void* b) {
    #if defined(__SIZEOF_INT128__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        unsigned __int128 x, y;
        __builtin_memcpy(&x, a, 16);
        __builtin_memcpy(&y, b, 16);
        return x < y;
    #else
        double ka = *(const double*) ((const char*) a + 8), kb = *(const double*) ((const char*) b + 8);
        unsigned int ta = *(const unsigned int*) ((const char*) a + 4), tb = *(const unsigned int*) ((const char*) b + 4);
        return ka < kb || (ka == kb && ta < tb);
    #endif
    }
    """
    bint _heap_before "rocesim_heap_before"(const void* a, const void* b) noexcept nogil


cdef inline HeapItem _item(double key, int32_t id, int32_t loc) noexcept nogil:
    """Ties go by id, so that the order of equal keys, and so which link freezes a flow,
    does not depend on what else the heap holds."""
    cdef HeapItem it
    it.key = key
    it.tie = (<uint32_t> id) ^ 0x80000000u
    it.loc = <uint32_t> loc
    return it


cdef inline int32_t _id(HeapItem* it) noexcept nogil:
    return <int32_t> (it.tie ^ 0x80000000u)


cdef inline int32_t _octave(double key) noexcept nogil:
    """The exponent bits of a key (>= 0): keys of a higher octave are larger."""
    cdef uint64_t bits
    memcpy(&bits, &key, 8)
    return <int32_t> (bits >> 52)


cdef inline double _octave_floor(int32_t octave) noexcept nogil:
    """The least key of that octave (infinity past the last)."""
    cdef uint64_t bits = (<uint64_t> min(octave, 0x7FF)) << 52
    cdef double key
    memcpy(&key, &bits, 8)
    return key


cdef int _heap_push(Heap* h, double key, int32_t id, int32_t loc) noexcept nogil:
    cdef int64_t i, up
    cdef HeapItem* a
    cdef HeapItem it = _item(key, id, loc)
    if room_for_one(<void**> &h.a, h.n, &h.cap, sizeof(HeapItem), 64) < 0:
        return -1
    a = h.a
    i = h.n
    h.n += 1
    while i > 0:
        up = (i - 1) >> 2
        if not _heap_before(&it, &a[up]):
            break
        a[i] = a[up]
        i = up
    a[i] = it
    return 0


cdef HeapItem _heap_pop(Heap* h) noexcept nogil:
    """The top item out."""
    cdef HeapItem top = h.a[0]
    h.n -= 1
    if h.n > 0:
        _heap_sift(h, h.a[h.n])
    return top


cdef void _heap_sift(Heap* h, HeapItem last) noexcept nogil:
    """`last` in the place of the top item.  The hole left at the top goes down to a leaf
    along the least children, and `last` climbs back from there: it belongs near the
    bottom, so this takes fewer comparisons than sifting it down from the top (Floyd's
    bottom-up heap)."""
    cdef HeapItem* a = h.a
    cdef int64_t i = 0, c, up, n = h.n
    cdef int64_t c1, c2
    while True:
        c = 4 * i + 1
        if c + 3 < n:                                # the least of four children, without branches
            c1 = c + _heap_before(&a[c + 1], &a[c])
            c2 = c + 2 + _heap_before(&a[c + 3], &a[c + 2])
            c = c2 if _heap_before(&a[c2], &a[c1]) else c1
        elif c >= n:
            break
        else:
            for c2 in range(c + 1, n):
                if _heap_before(&a[c2], &a[c]):
                    c = c2
        a[i] = a[c]
        i = c
    while i > 0:
        up = (i - 1) >> 2
        if not _heap_before(&last, &a[up]):
            break
        a[i] = a[up]
        i = up
    a[i] = last


# --- flows on links ------------------------------------------------------------------

cdef inline void _mark(Fluid* fd, int32_t port) noexcept nogil:
    if not fd.is_dirty[port]:
        fd.is_dirty[port] = 1
        fd.dirty[fd.n_dirty] = port
        fd.n_dirty += 1


cdef void _request_solve(Sim* s, Fluid* fd) noexcept nogil:
    if fd.solve_at != s.now:
        fd.solve_at = s.now
        ev_push(s, s.now, EV_FLUID, 0, FL_SOLVE)


cdef inline int _resize(void** arr, size_t size) noexcept nogil:
    """*arr reallocated to `size` bytes; -1 when out of memory (*arr unchanged)."""
    cdef void* p = realloc(arr[0], size)
    if p == NULL:
        return -1
    arr[0] = p
    return 0


cdef int32_t _slot_alloc(Fluid* fd) noexcept nogil:
    cdef int32_t sl, cap
    cdef void* p
    if fd.free_slot != NIL:
        sl = fd.free_slot
        fd.free_slot = fd.rest[sl].next_free
        return sl
    if fd.n_slots == fd.cap_slots:
        cap = max(64, 2 * fd.cap_slots)
        if posix_memalign(&p, 64, cap * sizeof(FluidSlot)) != 0:
            return NIL
        if fd.slots != NULL:
            memcpy(p, fd.slots, fd.n_slots * sizeof(FluidSlot))
        free(fd.slots)
        fd.slots = <FluidSlot*> p
        if (_resize(<void**> &fd.rest, cap * sizeof(FluidSlotRest)) < 0
                or _resize(<void**> &fd.links, <size_t> cap * SLOT_LINKS * sizeof(int32_t)) < 0
                or _resize(<void**> &fd.pos, <size_t> cap * SLOT_LINKS * sizeof(int32_t)) < 0
                or _resize(<void**> &fd.weight, <size_t> cap * SLOT_LINKS * sizeof(double)) < 0
                or _resize(<void**> &fd.prev, <size_t> cap * SLOT_LINKS * sizeof(int32_t)) < 0):
            return NIL
        fd.cap_slots = cap
    sl = fd.n_slots
    fd.n_slots += 1
    return sl


cdef inline void _set_multi(Fluid* fd, int32_t entry, bint on) noexcept nogil:
    """The entry's link now carries other entries too (`on`), or its flow alone: the flow's
    own limit is to recompute (_own)."""
    cdef FluidSlot* x = &fd.slots[entry // SLOT_LINKS]
    cdef uint64_t bit = (<uint64_t> 1) << (entry % SLOT_LINKS)
    x.multi = (x.multi | bit) if on else (x.multi & ~bit)
    x.own_stale = 1


cdef int _link_add(Fluid* fd, int32_t port, int32_t entry) noexcept nogil:
    cdef LinkSet* L = &fd.ls[port]
    cdef int64_t cap = L.cap
    if room_for_one(<void**> &L.ent, L.n, &cap, sizeof(int32_t), 4) < 0:
        return -1
    L.cap = <int32_t> cap                    # at most the slots' entries: an int32_t
    fd.pos[entry] = L.n
    L.ent[L.n] = entry
    L.n += 1
    if L.n == 2:
        _set_multi(fd, L.ent[0], 1)
    if L.n >= 2:
        _set_multi(fd, entry, 1)
    _mark(fd, port)
    return 0


cdef void _link_remove(Fluid* fd, int32_t port, int32_t entry) noexcept nogil:
    cdef LinkSet* L = &fd.ls[port]
    cdef int32_t i = fd.pos[entry], moved = L.ent[L.n - 1]
    L.ent[i] = moved
    fd.pos[moved] = i
    L.n -= 1
    if L.n == 1:
        _set_multi(fd, L.ent[0], 0)
    _mark(fd, port)


cdef inline int64_t _wire_bytes(Sim* s, int64_t size, int64_t* packets) noexcept nogil:
    """Bytes flow data of `size` puts on each link: payload and a header per packet."""
    cdef World* w = s.w
    cdef int64_t n = (size + w.p.payload - 1) // w.p.payload
    packets[0] = n
    return size + n * (w.p.header + (w.p.int_header if w.p.int_enabled else 0))


cdef inline int64_t _ack_wire(Sim* s) noexcept nogil:
    cdef World* w = s.w
    return w.p.ack_int_size if w.p.int_enabled else w.p.ack_size


cdef inline int64_t _acks(Sim* s, int64_t packets) noexcept nogil:
    """ACKs of a flow of `packets` packets: one every ack_every, and one for the last."""
    cdef World* w = s.w
    return (packets + w.p.ack_every - 1) // w.p.ack_every


cdef struct PathItem:      # _path_set: a part of a flow's packets at one hop
    int32_t port           # the link they take
    int32_t came           # the link before it (NIL at the first hop; -2: several)
    uint32_t hash          # the ECMP hash they carry (0 when every switch splits)
    double share           # of the flow's bytes


cdef inline int32_t _item_add(PathItem* items, int32_t n, int32_t port, int32_t came, uint32_t hash,
                              double share) noexcept nogil:
    """`share` of the packets of hash `hash` on `port` after `came`, merged with the item of the
    same link and hash if there is one; the items' number, or -1 when SPLIT_ITEMS are full."""
    cdef int32_t i
    for i in range(n):
        if items[i].port == port and items[i].hash == hash:
            items[i].share += share
            if items[i].came != came:
                items[i].came = -2
            return n
    if n == SPLIT_ITEMS:
        return -1
    items[n].port = port
    items[n].came = came
    items[n].hash = hash
    items[n].share = share
    return n + 1


cdef int32_t _path_set(Sim* s, Fluid* fd, int32_t f, int64_t packets, int32_t* links, double* weight,
                       int32_t* prev, int32_t cap, uint32_t* last_hash) noexcept nogil:
    """Flow f's forward links as its packets spread over them, hop by hop: a switch of
    Fluid.split_at gives each equal-cost port an even part of what reaches it, any other sends
    it where ECMP sends its hash; with the sender's entropy each window of entropy_every
    packets has a hash of its own (past SPLIT_WINDOWS windows every switch splits evenly).
    Fills `links` with each link's share of the flow (`weight`) and the link before it
    (`prev`, -2: several), and `last_hash` with the last packet's hash; returns how many
    links, -1 when a path has no route, -2 when they would be more than `cap`."""
    cdef World* w = s.w
    cdef PathItem a[SPLIT_ITEMS]
    cdef PathItem b[SPLIT_ITEMS]
    cdef PathItem* cur = a
    cdef PathItem* nxt = b
    cdef PathItem* tmp
    cdef PathItem* it
    cdef RouteGroup g
    cdef int32_t n_cur = 0, n_next, n = 0, i, j, c, cnt, hop, node, port, level
    cdef int32_t dst = w.flows[f].dst, first = w.hosts[w.flows[f].src].port
    cdef int64_t E = w.p.entropy_every, windows = 1
    cdef uint32_t hash = flow_hash(w, f)
    cdef bint even
    if E > 0:
        windows = (packets + E - 1) // E
    even = windows > SPLIT_WINDOWS
    if even:
        n_cur = _item_add(cur, 0, first, NIL, 0, 1.0)
    else:
        for j in range(windows):            # window j: packets j*E .. (its entropy: nic_send.pyx)
            n_cur = _item_add(cur, n_cur, first, NIL, with_entropy(hash, <uint16_t> (1 + j % 65535)) if E > 0 else hash,
                              <double> (min(packets, (j + 1) * E) - j * E) / packets if E > 0 else 1.0)
    last_hash[0] = cur[n_cur - 1].hash
    for hop in range(MAX_HOPS):
        level = n
        for i in range(n_cur):                 # this hop's links, one entry per link
            it = &cur[i]
            for j in range(level, n):
                if links[j] == it.port:
                    weight[j] += it.share
                    if prev[j] != it.came:
                        prev[j] = -2
                    break
            else:
                if n == cap:
                    return -2
                links[n] = it.port
                weight[n] = it.share
                prev[n] = it.came
                n += 1
        n_next = 0
        for i in range(n_cur):                 # the next hop's
            it = &cur[i]
            node = w.ports[it.port].peer_node
            if node == dst:
                continue
            if node < w.n_hosts:
                return -1
            g = w.route_groups[(node - w.n_hosts) * w.n_route_classes + w.route_class[dst]]
            cnt = g.cnt
            if cnt == 0:
                return -1
            if cnt < 0 or cnt == 1:
                port = w.route_ports[g.off + (dst if cnt < 0 else 0)]
                n_next = _item_add(nxt, n_next, port, it.port, it.hash, it.share)
            elif even or (fd.split_at != NULL and fd.split_at[node - w.n_hosts]):
                for c in range(cnt):
                    n_next = _item_add(nxt, n_next, w.route_ports[g.off + c], it.port, it.hash, it.share / cnt)
                    if n_next < 0:
                        break
            else:
                port = w.route_ports[g.off + ecmp_index(it.hash, w.sw[node - w.n_hosts].seed, cnt)]
                n_next = _item_add(nxt, n_next, port, it.port, it.hash, it.share)
            if n_next < 0:
                return -2
        if n_next == 0:
            return n
        tmp = cur
        cur = nxt
        nxt = tmp
        n_cur = n_next
    return -1                                  # longer than MAX_HOPS hops: a loop


cdef inline bint _one_path(double* weight, int32_t n) noexcept nogil:
    """Does every link of a path set carry the whole flow (it is one path)?"""
    cdef int32_t k
    for k in range(n):
        if weight[k] < 1 - 1e-9:
            return 0
    return 1


cdef void _join(Sim* s, Fluid* fd, int32_t f) noexcept:
    """Flow f joins the fluid: its paths' links, its bytes, no rate until the next solve."""
    cdef World* w = s.w
    cdef int32_t fwd[MAX_HOPS]
    cdef int32_t rev[MAX_HOPS]
    cdef int32_t links[SLOT_LINKS]
    cdef int32_t prev[SLOT_LINKS]
    cdef double weight[SLOT_LINKS]
    cdef int32_t h, hr, k, sl, n_set = 0, path_off = flow_path_off(s, f)
    cdef int64_t packets, W, full, last, lat = 0
    cdef uint32_t hash = flow_hash(w, f)
    cdef FluidSlot* x
    cdef FluidSlotRest* y
    W = _wire_bytes(s, w.flows[f].size, &packets)
    hr = trace_path(s, w.flows[f].dst, w.flows[f].src, flow_rhash(w, f), NIL, rev, MAX_HOPS)
    if hr > 0 and path_off == NIL and (fd.split_at != NULL or w.p.entropy_every > 0):
        n_set = _path_set(s, fd, f, packets, links, weight, prev, SLOT_LINKS - hr, &hash)
        if n_set == -2:                       # too many links for a slot: its one ECMP path
            s.st.fluid_split_fallbacks += 1
            hash = flow_hash(w, f)
            n_set = 0
        elif n_set > 0 and _one_path(weight, n_set):
            n_set = 0                         # one path, the last packet's (`hash`)
    # the last packet's path: the flow's own, or, split, the one its hash takes (its latency)
    h = trace_path(s, w.flows[f].src, w.flows[f].dst, hash, path_off, fwd, MAX_HOPS) if n_set >= 0 else -1
    if h <= 0 or hr <= 0:
        s.st.no_route_drops += 1          # it never finishes: the run stalls, as with packets
        return
    sl = _slot_alloc(fd)
    if sl == NIL:
        s.error = ERR_NOMEM
        return
    fd.slot_of[f] = sl
    x = &fd.slots[sl]
    y = &fd.rest[sl]
    y.flow = f
    x.split = n_set > 0
    x.n_fwd = n_set if x.split else h
    x.n_links = x.n_fwd + hr
    x.stamp = 0
    x.multi = 0
    x.own_stale = 1
    x.rate = 0
    y.t_last = s.now
    y.sent_at = NIL
    x.remaining = <double> W
    full = w.p.payload + (W - w.flows[f].size) // packets
    x.ack_coef = <double> _ack_wire(s) / <double> (w.p.ack_every * full)    # while it streams
    y.cap = <double> w.flow_rate_limit[f] if w.flow_rate_limit != NULL else 0.0
    # the last packet trails the full one before it through each later hop (store and forward)
    last = full if packets > 1 else W
    for k in range(h):
        lat += w.ports[fwd[k]].delay_ps + (tx_time(last, w.ports[fwd[k]].rate_bps) if k > 0 else 0)
    y.lat_fwd = lat
    lat = 0
    for k in range(hr):
        lat += w.ports[rev[k]].delay_ps + tx_time(_ack_wire(s), w.ports[rev[k]].rate_bps)
    y.lat_ack = lat
    if x.split:
        for k in range(n_set):
            fd.links[sl * SLOT_LINKS + k] = links[k]
            fd.weight[sl * SLOT_LINKS + k] = weight[k]
            fd.prev[sl * SLOT_LINKS + k] = prev[k]
    else:
        for k in range(h):
            fd.links[sl * SLOT_LINKS + k] = fwd[k]
    for k in range(hr):
        fd.links[sl * SLOT_LINKS + x.n_fwd + k] = rev[k]
    for k in range(x.n_links):
        if _link_add(fd, fd.links[sl * SLOT_LINKS + k], sl * SLOT_LINKS + k) < 0:
            s.error = ERR_NOMEM
            return
    _request_solve(s, fd)


cdef inline int64_t _split_bytes(Fluid* fd, int32_t e, int64_t W, double* cum) noexcept nogil:
    """The bytes of a flow's W the split slot's link `e` carries: its share of W, rounded so
    that the links of one hop (whose shares make 1, in order) carry W exactly (`cum`: the
    share of the hop's links before it, carried from one call to the next)."""
    cdef double before = cum[0]
    cum[0] += fd.weight[e]
    cdef int64_t b = llround(W * cum[0]) - llround(W * before)
    if cum[0] >= 1 - 1e-9:
        cum[0] = 0
    return b


cdef void _sent(Sim* s, Fluid* fd, int32_t f) noexcept:
    """Flow f's last byte left its NIC: it leaves the fluid; delivery and ACK follow."""
    cdef World* w = s.w
    cdef int32_t sl = fd.slot_of[f], k, port
    cdef FluidSlot* x = &fd.slots[sl]
    cdef int64_t packets, W = _wire_bytes(s, w.flows[f].size, &packets)
    cdef int64_t acks = _acks(s, packets) * _ack_wire(s)
    cdef double cum = 0
    for k in range(x.n_links):
        port = fd.links[sl * SLOT_LINKS + k]
        _link_remove(fd, port, sl * SLOT_LINKS + k)
        if k >= x.n_fwd:
            w.ports[port].tx_bytes += acks
        else:
            w.ports[port].tx_bytes += _split_bytes(fd, sl * SLOT_LINKS + k, W, &cum) if x.split else W
    cdef FluidSlotRest* y = &fd.rest[sl]
    ev_push(s, s.now + y.lat_fwd, EV_FLUID, f, FL_DELIVERED)
    ev_push(s, s.now + y.lat_fwd + y.lat_ack, EV_FLUID, f, FL_ACKED)
    fd.slot_of[f] = NIL
    y.flow = NIL
    y.next_free = fd.free_slot
    fd.free_slot = sl
    _request_solve(s, fd)


# --- max-min fair rates --------------------------------------------------------------

cdef inline int32_t _tag(FluidSlot* x, int32_t k) noexcept nogil:
    """The tag (T_*) of slot x's k-th link."""
    if k >= x.n_fwd:
        return T_ACK
    return T_SPLIT if x.split else T_DATA


cdef inline double _coef(Fluid* fd, FluidSlot* x, int32_t e) noexcept nogil:
    """The load per unit of rate of slot x's entry `e` (slot * SLOT_LINKS + k) on its link."""
    cdef int32_t k = e % SLOT_LINKS
    if k >= x.n_fwd:
        return x.ack_coef
    return fd.weight[e] if x.split else 1.0


cdef inline double _coef_of(SolveFlow* F, int32_t tagged, double* shares, int64_t i) noexcept nogil:
    """The load per unit of rate of an entry tagged `... << 2 | T_*` at index i of Fluid.mem or
    fent (`shares`: mem_w or fent_w beside it)."""
    cdef int32_t tag = tagged & 3
    if tag == T_DATA:
        return 1.0
    return F.ack_coef if tag == T_ACK else shares[i]


cdef inline int _room_at(void** arr, int64_t i, int64_t* cap, size_t elem) noexcept nogil:
    """Make *arr (capacity *cap) hold an element at index i; -1 when out of memory."""
    while i >= cap[0]:
        if room_for_one(arr, cap[0], cap, elem, 256) < 0:
            return -1
    return 0


cdef void _own(Fluid* fd, int32_t sl) noexcept nogil:
    """Slot sl's own limit: its rate limit, and each link that carries it alone (it limits
    this flow only, at a level no freeze changes: one heap item per flow, not per link)."""
    cdef FluidSlot* x = &fd.slots[sl]
    cdef int32_t k
    cdef double c, capacity
    x.own = fd.rest[sl].cap if fd.rest[sl].cap > 0 else INFINITY
    for k in range(x.n_links):
        if (x.multi >> k) & 1:
            continue
        c = _coef(fd, x, sl * SLOT_LINKS + k)
        capacity = fd.ls[fd.links[sl * SLOT_LINKS + k]].capacity
        if c > 0 and capacity / c < x.own:
            x.own = capacity / c
    x.own_stale = 0


cdef void _freeze(Fluid* fd, int32_t f, double rate, bint data_only_meets) noexcept nogil:
    """Solve flow `f` keeps `rate`; its links lose its load (their keys grow: _fill).  With
    `data_only_meets` (_fill's pass 1) its ACKs weigh nothing where data flows meet (and its
    data its share there, as the link's load counts data only)."""
    cdef SolveFlow* F = &fd.sf[f]
    cdef SolveLink* K
    cdef int32_t i, e
    cdef double c
    F.frozen = 1
    F.new_rate = rate
    fd.unfrozen -= 1
    for i in range(F.e0, F.e1):
        e = fd.fent[i]
        K = &fd.sk[e >> 2]
        if data_only_meets and K.meets:
            c = 0.0 if e & 3 == T_ACK else _coef_of(F, e, fd.fent_w, i)
            K.load -= c
            if c > 0 and K.load <= K.data0 * 1e-12:     # its last data flow (a whole one counts 1;
                fd.undecided -= 1                        # shares of a split one may leave a residue)
        else:
            c = _coef_of(F, e, fd.fent_w, i)
            K.load -= c
        K.rem -= c * rate
        if K.rem < 0:
            K.rem = 0
        K.unfrozen -= 1


cdef int _fill_start(Fluid* fd, int32_t nk, int pass_, int32_t* start, int32_t* low) noexcept nogil:
    """Each link of the solve at the start of pass `pass_` of _fill (what it offers, the load
    of its unfrozen flows), and those with a load on a ladder of octaves: rung b holds
    fd.ladder.a[start[b] .. start[b + 1]], from the octave `low` up.  -1 when out of memory."""
    cdef int32_t i, j, b, nl = 0
    cdef int32_t at[LADDER]
    cdef SolveLink* K
    cdef HeapItem* loose
    fd.undecided = 0
    if 2 * nk > fd.ladder.cap:                      # the rungs, then the links as they come
        free(fd.ladder.a)
        fd.ladder.cap = 4 * nk
        fd.ladder.a = <HeapItem*> malloc(fd.ladder.cap * sizeof(HeapItem))
        if fd.ladder.a == NULL:
            fd.ladder.cap = 0
            return -1
    loose = &fd.ladder.a[nk]
    low[0] = 0x7FF
    for j in range(nk):
        K = &fd.sk[j]
        K.load = K.load0
        K.unfrozen = K.m1 - K.m0
        K.rem = K.capacity
        if pass_ == 1:
            K.bound = 0
            if K.meets:
                K.rem = K.capacity * (1 + REL_TIE)
                K.load = K.data0
                fd.undecided += 1
        elif pass_ == 2 and K.meets and K.bound:
            K.rem = K.capacity * fd.share
        if K.load > 0:
            loose[nl] = _item(K.rem / K.load, K.port, j)
            low[0] = min(low[0], _octave(loose[nl].key))
            nl += 1
    # The links wait on a ladder of octaves (counting sort), a rung joining the heap when its
    # top reaches the rung's floor: a link all of whose flows froze by then would only come
    # out to be skipped (nothing revives it), so it stays out.  The order is the same.
    for b in range(LADDER + 1):
        start[b] = 0
    for i in range(nl):
        start[min(_octave(loose[i].key) - low[0], LADDER - 1) + 1] += 1
    for b in range(LADDER):
        start[b + 1] += start[b]
        at[b] = start[b]
    for i in range(nl):
        b = min(_octave(loose[i].key) - low[0], LADDER - 1)
        fd.ladder.a[at[b]] = loose[i]
        at[b] += 1
    return 0


cdef inline int _rung_in(Fluid* fd, int32_t* start, int32_t rung) noexcept nogil:
    """Rung `rung` of the ladder joins the heap: its links that still have flows to freeze.
    -1 when out of memory."""
    cdef int32_t i
    cdef SolveLink* K
    for i in range(start[rung], start[rung + 1]):
        K = &fd.sk[fd.ladder.a[i].loc]
        if K.unfrozen > 0 and K.load > 0 and _heap_push(&fd.heap, fd.ladder.a[i].key,
                                                         K.port, fd.ladder.a[i].loc) < 0:
            return -1
    return 0


cdef inline int _owns_in(Fluid* fd, int32_t nf) noexcept nogil:
    """The own limits of the flows not frozen yet join their heap.  -1 when out of memory."""
    cdef int32_t i
    for i in range(nf):
        if not fd.sf[i].frozen and fd.sf[i].own < INFINITY:
            if _heap_push(&fd.owns, fd.sf[i].own, -1 - fd.sf[i].slot, i) < 0:
                return -1
    return 0


cdef inline bint _freeze_at(Fluid* fd, SolveLink* K, double level, int pass_) noexcept nogil:
    """Link K binds at `level`: its flows not frozen yet freeze at it (in pass 1, where flows
    meet, its ACK entries do not count).  True when it froze one."""
    cdef int32_t i, m
    cdef bint froze = 0
    for i in range(K.m0, K.m1):
        m = fd.mem[i]
        if not fd.sf[m >> 2].frozen and not (pass_ == 1 and K.meets and m & 3 == T_ACK):
            froze = 1
            _freeze(fd, m >> 2, level, pass_ == 1)
    return froze


cdef int _fill(Fluid* fd, int32_t nk, int32_t nf, int pass_) noexcept nogil:
    """Progressive filling of the part a solve collected (fd.sk[:nk], fd.sf[:nf]).

    Pass 0: every link offers its rate (share 1).  Pass 1 finds the bottlenecks: a link
    where flows meet offers a hair more (REL_TIE), so that when it ties with a link where
    they do not (the senders' own NICs, at an all-to-all's perfect balance) the other one
    is the bottleneck, and it counts its data flows only: it is bound when it freezes data
    flows, the data alone being more than it carries.  The ACKs it carries are left out
    because they would otherwise decide ties that are not congestion: on a ring whose hop
    crosses the spines over two of them (ECMP), the receiver's link carries exactly the
    data its one sender's NIC sends, and which of the two binds depends only on the
    neighbouring hops' ACKs (a few percent).  Pass 2 offers rate x share at the links
    where flows meet that pass 1 found bound: where the demand exceeds the link, as where
    a scheme acts at the packet level (no CNP is sent where no queue builds).  Returns how
    many links where flows meet pass 1 found bound, or -1 when out of memory."""
    cdef int32_t i, bound_meets = 0
    cdef SolveLink* K
    cdef HeapItem* top
    cdef HeapItem item
    cdef double level, next_floor = 0, own_min = INFINITY
    cdef bint owns_in = 0
    cdef int32_t start[LADDER + 1]
    cdef int32_t rung = 0, low
    fd.heap.n = 0
    fd.owns.n = 0
    if _fill_start(fd, nk, pass_, start, &low) < 0:
        return -1
    for i in range(nf):
        fd.sf[i].frozen = 0
        if fd.sf[i].own < own_min:
            own_min = fd.sf[i].own
    fd.unfrozen = nf
    # Items come out in (key, id) order: the links' levels, and each flow's own limit (id
    # -1 - slot), which freezes it if nothing did before.  Most flows freeze at a link first:
    # their own limits enter a heap of their own only once a link's level reaches the least
    # of them, and only those of flows still unfrozen then (the others would do nothing).
    while fd.unfrozen > 0:                           # the links left then have no flow to freeze
        if bound_meets > 0 and fd.undecided == 0:
            # pass 1 has found every link where flows meet bound or not (the data flows of one
            # it did not bind all froze elsewhere: it never will); pass 2 recomputes every rate
            break
        while rung < LADDER and (fd.heap.n == 0 or fd.heap.a[0].key >= next_floor):
            if _rung_in(fd, start, rung) < 0:
                return -1
            rung += 1
            next_floor = _octave_floor(low + rung)
        top = &fd.heap.a[0] if fd.heap.n > 0 else NULL
        if not owns_in and (top == NULL or top.key >= own_min):
            owns_in = 1
            if _owns_in(fd, nf) < 0:
                return -1
        if fd.owns.n > 0 and (top == NULL or _heap_before(&fd.owns.a[0], top)):
            item = _heap_pop(&fd.owns)
            if not fd.sf[item.loc].frozen:
                _freeze(fd, item.loc, item.key, pass_ == 1)
            continue
        if top == NULL:
            break
        K = &fd.sk[top.loc]
        if K.unfrozen == 0 or K.load <= 0:
            _heap_pop(&fd.heap)
            continue
        level = K.rem / K.load
        if level > top.key:                          # stale: its key grew as flows froze (lazily
            _heap_sift(&fd.heap, _item(level, _id(top), top.loc))   # updated: a link's key only grows,
            continue                                 # so the top is the true smallest once current)
        _heap_pop(&fd.heap)
        if _freeze_at(fd, K, level, pass_) and pass_ == 1:
            K.bound = 1
            bound_meets += K.meets
    return bound_meets


cdef bint _overfull(Fluid* fd, int32_t nk) noexcept nogil:
    """Pass 1 left out the ACKs where flows meet: do its rates, ACKs counted, exceed such a
    link?  If not, they are pass 0's rates (max-min fair under looser constraints, and
    feasible under the true ones, up to the REL_TIE a link where flows meet offers in pass
    1); if so, pass 0 must run."""
    cdef int32_t i, j, m
    cdef SolveLink* K
    cdef SolveFlow* F
    cdef double used
    for j in range(nk):
        K = &fd.sk[j]
        if not K.meets or K.load0 <= K.data0:
            continue
        used = 0
        for i in range(K.m0, K.m1):
            m = fd.mem[i]
            F = &fd.sf[m >> 2]
            used += _coef_of(F, m, fd.mem_w, i) * F.new_rate
        if used > K.capacity:
            return 1
    return 0


cdef inline int _visit(Fluid* fd, int32_t port, int32_t stamp, int32_t* nq, int32_t* nk) noexcept nogil:
    """Queue `port` in the solve under way, once; a SolveLink when it has two entries or
    more.  -1 when out of memory."""
    cdef LinkSet* L = &fd.ls[port]
    cdef SolveLink* K
    if L.stamp == stamp:
        return 0
    L.stamp = stamp
    fd.queue[nq[0]] = port
    nq[0] += 1
    if L.n >= 2:
        if room_for_one(<void**> &fd.sk, nk[0], &fd.cap_sk, sizeof(SolveLink), 64) < 0:
            return -1
        L.loc = nk[0]
        K = &fd.sk[nk[0]]
        K.port = port
        K.capacity = L.capacity
        nk[0] += 1
    return 0


cdef int _meet(Fluid* fd, int32_t sl, int32_t stamp, int32_t* nq, int32_t* nk, int32_t* nf,
               int32_t* ne) noexcept nogil:
    """Slot sl, met for the first time in the solve under way: a SolveFlow, and its links
    that carry others queued (those that carry it alone lead to no other flow: the order
    flows are met in is the same as when the queue took every link).  -1 when out of memory."""
    cdef FluidSlot* x = &fd.slots[sl]
    cdef SolveFlow* F
    cdef uint64_t m = x.multi
    cdef int32_t k, q, tag
    if room_for_one(<void**> &fd.sf, nf[0], &fd.cap_sf, sizeof(SolveFlow), 64) < 0:
        return -1
    x.stamp = stamp
    x.loc = nf[0]
    F = &fd.sf[nf[0]]
    nf[0] += 1
    F.slot = sl
    F.ack_coef = x.ack_coef
    F.new_rate = x.new_rate
    if x.own_stale:
        _own(fd, sl)
    F.own = x.own
    F.e0 = ne[0]
    while m:
        k = rocesim_ctz64(m)
        m &= m - 1
        q = fd.links[sl * SLOT_LINKS + k]
        if _visit(fd, q, stamp, nq, nk) < 0 or room_for_one(
                <void**> &fd.fent, ne[0], &fd.cap_fent, sizeof(int32_t), 256) < 0:
            return -1
        tag = _tag(x, k)
        fd.fent[ne[0]] = fd.ls[q].loc << 2 | tag
        if tag == T_SPLIT:
            if _room_at(<void**> &fd.fent_w, ne[0], &fd.cap_fent_w, sizeof(double)) < 0:
                return -1
            fd.fent_w[ne[0]] = fd.weight[sl * SLOT_LINKS + k]
        ne[0] += 1
    F.e1 = ne[0]
    return 0


cdef int _solve(Sim* s, Fluid* fd) noexcept nogil:
    """Max-min fair rates for the flows connected to the links touched since the last solve."""
    cdef int32_t stamp, nq = 0, qi = 0, nk = 0, nf = 0, port, sl, k, i, e, came, bound_meets, tag
    cdef int32_t nm = 0, ne = 0, m0, before
    cdef bint acks_meet = 0
    cdef LinkSet* L
    cdef SolveLink* K
    cdef FluidSlot* x
    cdef FluidSlotRest* y
    cdef double r, load0, data0, c
    fd.stamp += 1
    stamp = fd.stamp
    s.st.fluid_solves += 1
    for i in range(fd.n_dirty):
        port = fd.dirty[i]
        fd.is_dirty[port] = 0
        if _visit(fd, port, stamp, &nq, &nk) < 0:
            return -1
    fd.n_dirty = 0
    # the connected part: links -> their flows -> those flows' links
    while qi < nq:
        L = &fd.ls[fd.queue[qi]]
        qi += 1
        load0 = 0
        data0 = 0
        m0 = nm
        came = NIL                                   # the link its data flows came over; -2: several
        for i in range(L.n):
            e = L.ent[i]
            sl = e // SLOT_LINKS
            x = &fd.slots[sl]
            if x.stamp != stamp:
                if _meet(fd, sl, stamp, &nq, &nk, &nf, &ne) < 0:
                    return -1
            if L.n >= 2:                             # its entries, in order
                k = e - sl * SLOT_LINKS
                c = _coef(fd, x, e)
                load0 += c
                if k < x.n_fwd:
                    data0 += c
                if 0 < k < x.n_fwd and came != -2:
                    before = fd.prev[e] if x.split else fd.links[e - 1]
                    came = before if came == NIL or came == before else -2
                if room_for_one(<void**> &fd.mem, nm, &fd.cap_mem, sizeof(int32_t), 256) < 0:
                    return -1
                tag = _tag(x, k)
                fd.mem[nm] = x.loc << 2 | tag
                if tag == T_SPLIT:
                    if _room_at(<void**> &fd.mem_w, nm, &fd.cap_mem_w, sizeof(double)) < 0:
                        return -1
                    fd.mem_w[nm] = c
                nm += 1
        if L.n >= 2:
            K = &fd.sk[L.loc]                        # (only now: _meet may have moved fd.sk)
            K.load0 = load0
            K.data0 = data0
            K.m0 = m0
            K.m1 = nm
            K.meets = came == -2
            if K.meets and K.load0 > K.data0:
                acks_meet = 1
    bound_meets = _fill(fd, nk, nf, 1 if fd.share < 1 else 0)
    if bound_meets < 0:
        return -1
    if bound_meets > 0:
        if _fill(fd, nk, nf, 2) < 0:
            return -1
    elif fd.share < 1 and acks_meet and _overfull(fd, nk) and _fill(fd, nk, nf, 0) < 0:
        return -1
    # new send-completion times where rates changed
    for i in range(nf):
        x = &fd.slots[fd.sf[i].slot]
        y = &fd.rest[fd.sf[i].slot]
        r = fd.sf[i].new_rate
        x.new_rate = r
        if x.rate > 0 and r >= x.rate * (1 - REL_SAME) and r <= x.rate * (1 + REL_SAME):
            continue
        if x.rate > 0:
            x.remaining -= x.rate * <double> (s.now - y.t_last) / (8 * PS_PER_BIT)
        if x.remaining < 0:
            x.remaining = 0
        y.t_last = s.now
        x.rate = r
        if r > 0:
            y.sent_at = s.now + <int64_t> ceil(x.remaining * 8 * PS_PER_BIT / r)
            ev_push(s, y.sent_at, EV_FLUID, y.flow, FL_SENT)
        else:
            y.sent_at = NIL
    return 0


# --- the loop ------------------------------------------------------------------------

cdef int fluid_loop(Sim* s, int64_t until, int64_t max_events) noexcept:
    """Run the flow-level network up to time `until` (inclusive) or `max_events` events;
    a STOP_* code (loop.pxd)."""
    cdef World* w = s.w
    cdef Fluid* fd = _fd(s)
    cdef int64_t n = 0
    cdef int status = STOP_EMPTY
    cdef int32_t f
    cdef Event ev
    while event_due(s, until, n, max_events, &status):
        ev = ev_pop(s)
        n += 1
        f = ev.target
        if ev.kind == EV_FLUID and ev.arg == FL_SENT and (fd.slot_of[f] == NIL
                                                          or fd.rest[fd.slot_of[f]].sent_at != ev.time):
            continue        # superseded by a rate change: a no-op, and it does not move the clock
                            # (after the last flow such events, up to the slowest rate's, would run
                            # it on with nothing happening, which the run loop takes for a stall)
        if ev.time < s.now:
            s.st.time_errors += 1
        s.now = ev.time
        if ev.kind == EV_FLOW_START:
            s.last_work = s.now
            if ev.arg:
                flows_next_root(s)
            flow_activate(s, f)
            if w.flows[f].is_compute:
                ev_push(s, s.now + w.flows[f].size, EV_COMPUTE_DONE, f, 0)
            elif fd.startup > 0:
                ev_push(s, s.now + fd.startup, EV_FLUID, f, FL_JOIN)
            else:
                _join(s, fd, f)
        elif ev.kind == EV_COMPUTE_DONE:
            s.last_work = s.now
            flow_compute_done(s, f)
        elif ev.kind == EV_FLUID:
            if ev.arg == FL_SENT:
                s.last_work = s.now
                _sent(s, fd, f)
            elif ev.arg == FL_SOLVE:
                fd.solve_at = NIL
                if _solve(s, fd) < 0:
                    s.error = ERR_NOMEM
            elif ev.arg == FL_DELIVERED:
                s.last_work = s.now
                w.flows[f].rx_finish = s.now
                s.st.data_bytes_delivered += w.flows[f].size
                flow_delivered(s, f)
            elif ev.arg == FL_ACKED:
                s.last_work = s.now
                flow_finish(s, f)
            elif ev.arg == FL_JOIN:
                _join(s, fd, f)
    s.st.events += n
    return status
