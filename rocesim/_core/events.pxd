# cython: language_level=3
"""The event queue: a calendar of near-future buckets in front of a 4-ary heap.

Order is (time, seq); `seq` is a global insertion counter, so events at the same
picosecond run in the order they were scheduled and every run is bit-identical.

Nearly every event is due within a few microseconds (a packet's serialization, a link's
delay), so instead of one heap of every pending event the queue keeps:

* `front`, the events of the current bucket (2**Sim.cal_shift ps) and of any event
  scheduled at or before it: small, and in cache.  A bucket's events usually arrive in
  (time, seq) order (in a synchronized fabric, often all at one time): `front` is then that
  run, stored latest first so that a pop takes the last element; otherwise, or once an
  event is scheduled into the current bucket, it is a 4-ary heap;
* the calendar, Sim.cal_n buckets (a power of two, CAL_N at most: a run in one part has
  CAL_N) for the cal_n - 1 buckets after it, each unsorted (a push is an append), with a
  bitset of the non-empty ones.  A bucket is a chain of chunks of CAL_CHUNK events, taken
  from and given back to one free list, last freed first: a push writes into memory that
  the bucket drained last left in cache, and reads one index per bucket (`cal_tail`, the
  bucket's last event) from an array small enough to stay there.  The calendar's memory
  is what its pending events need, not room for every bucket's;
* `later`, a 4-ary heap of the events beyond the calendar (timeouts, flow starts).

When `front` runs dry the queue moves to the next non-empty bucket, heapifies it into
`front`, and pulls from `later` what the calendar now covers.  Every event in `front`
precedes every event in the calendar, which precedes every event in `later`, so events
leave in exactly the (time, seq) order a single heap would give.  In a 4-ary heap the
four children of a node (4i+1 .. 4i+4, 128 bytes) are two aligned cache lines: the
arrays start 32 B before a 64-byte boundary.
"""
from libc.stdint cimport int64_t, int32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy
from posix.stdlib cimport posix_memalign
from rocesim._core.defs cimport Sim, Event, EventHeap, ERR_NOMEM
from rocesim._core.bits cimport rocesim_ctz64

cdef enum:
    CAL_N = 8192                   # buckets of a run in one part (the calendar covers 2 to 34 us)
    CAL_CHUNK = 8                  # events per chunk of a bucket (256 B: four cache lines)
    CAL_CHUNK_SHIFT = 3            # log2 of CAL_CHUNK
    CAL_CHUNKS_MAX = 1 << 28       # (event indices stay within int32)
    CAL_KEEP_GROWTH = 16           # the calendar's chunks, once all free again, go back to
                                   #   their first number if they grew more than this much
    CAL_MIN = 64                   # the fewest buckets (one word of cal_bits)
    FRONT_KEEP = 65536             # the same for `front` (2 MB), once the burst has drained
    # A part's buckets (sized for its own ports) are 2**PART_WIDER times wider than
    # ev_bucket_shift's rule, and as few as span what one part's calendar spans: on one
    # thread, 4x wider cost 3-16% less CPU than 1x (hpcc320 DCQCN at `pods`: 4.18-4.27 ->
    # 3.83 s; k=16 permutation at `leaves`: 3.66 -> 3.10 s; k=8 at `leaves`: 0.60 -> 0.50
    # s); 8x 2-3% less again (k16 leaves 2.73 -> 2.64 s, hpcc320 3.78 -> 3.69 s) and less
    # memory (k16 at `pods`: event queues 105, 63, 42, 27 MB at 1x, 2x, 4x, 8x); 16x no better.
    PART_WIDER = 3


# --- a 4-ary heap of events -------------------------------------------------------------

cdef inline bint _before(Event* a, Event* b) noexcept nogil:
    return a.time < b.time or (a.time == b.time and a.seq < b.seq)


cdef inline Event* _heap_array(int64_t cap) noexcept nogil:
    """Room for `cap` events, element 1 on a 64-byte boundary; NULL if out of memory."""
    cdef void* mem = NULL
    if posix_memalign(&mem, 64, <size_t> (cap + 1) * sizeof(Event)) != 0:
        return NULL
    return (<Event*> mem) + 1          # sizeof(Event) == 32: element 1 at mem + 64


cdef inline void _heap_release(EventHeap* h) noexcept nogil:
    if h.a != NULL:
        free(h.a - 1)
    h.a = NULL
    h.n = 0
    h.cap = 0


cdef inline int _heap_reserve(EventHeap* h, int64_t need) noexcept nogil:
    """Room for `need` events; -1 if out of memory."""
    cdef int64_t cap = h.cap if h.cap > 0 else 256
    cdef Event* a
    if need <= h.cap:
        return 0
    while cap < need:
        cap *= 2
    a = _heap_array(cap)
    if a == NULL:
        return -1
    if h.n:
        memcpy(a, h.a, h.n * sizeof(Event))
    if h.a != NULL:
        free(h.a - 1)
    h.a = a
    h.cap = cap
    return 0


cdef inline void _sift_up(Event* a, int64_t i, Event ev) noexcept nogil:
    cdef int64_t parent
    while i > 0:
        parent = (i - 1) >> 2
        if not _before(&ev, &a[parent]):
            break
        a[i] = a[parent]
        i = parent
    a[i] = ev


cdef inline void _sift_down(Event* a, int64_t n, int64_t i, Event ev) noexcept nogil:
    """Place `ev` at or below position i of a heap of n events."""
    cdef int64_t c, best, end
    while True:
        c = 4 * i + 1
        if c >= n:
            break
        best = c
        end = c + 4
        if end > n:
            end = n
        c += 1
        while c < end:
            if _before(&a[c], &a[best]):
                best = c
            c += 1
        if not _before(&a[best], &ev):
            break
        a[i] = a[best]
        i = best
    a[i] = ev


cdef inline int _heap_insert(EventHeap* h, Event* ev) noexcept nogil:
    if h.n == h.cap and _heap_reserve(h, h.n + 1) < 0:
        return -1
    h.n += 1
    _sift_up(h.a, h.n - 1, ev[0])
    return 0


cdef inline Event _heap_take(EventHeap* h) noexcept nogil:
    """Remove and return the earliest event (the heap must not be empty)."""
    cdef Event top = h.a[0]
    h.n -= 1
    if h.n > 0:
        _sift_down(h.a, h.n, 0, h.a[h.n])
    return top


# --- the calendar -----------------------------------------------------------------------

cdef inline int32_t _sum_words(int32_t cal_n) noexcept nogil:
    """Words of cal_sum (a bit per word of cal_bits, which has a bit per bucket)."""
    return ((cal_n >> 6) + 63) >> 6


cdef inline void _mark_bucket(Sim* s, int32_t slot) noexcept nogil:
    """Calendar bucket `slot` holds events: its bit, and its word's bit in cal_sum."""
    s.cal_bits[slot >> 6] |= (<uint64_t> 1) << (slot & 63)
    s.cal_sum[slot >> 12] |= (<uint64_t> 1) << ((slot >> 6) & 63)


cdef inline int _chunks_add(Sim* s, int32_t more) noexcept nogil:
    """`more` free chunks for the calendar (its events move; they are found by index);
    -1 if out of memory."""
    cdef int64_t n = <int64_t> s.cal_chunks + more
    cdef void* mem = NULL
    cdef int32_t* link
    cdef int32_t i
    if n > CAL_CHUNKS_MAX or posix_memalign(&mem, 64, <size_t> n * CAL_CHUNK * sizeof(Event)) != 0:
        return -1
    link = <int32_t*> realloc(s.cal_link, <size_t> n * sizeof(int32_t))
    if link == NULL:
        free(mem)
        return -1
    if s.cal_chunks:
        memcpy(mem, s.cal_ev, <size_t> s.cal_chunks * CAL_CHUNK * sizeof(Event))
    free(s.cal_ev)
    s.cal_ev = <Event*> mem
    s.cal_link = link
    for i in range(s.cal_chunks, <int32_t> n - 1):
        link[i] = i + 1
    link[n - 1] = s.cal_free
    s.cal_free = s.cal_chunks
    s.cal_chunks = <int32_t> n
    return 0


cdef inline int _chunks_reset(Sim* s, int32_t n) noexcept nogil:
    """The calendar's chunks, none in use, back to `n` (a burst is over); -1 if out of memory."""
    free(s.cal_ev)
    free(s.cal_link)
    s.cal_ev = NULL
    s.cal_link = NULL
    s.cal_chunks = 0
    s.cal_free = -1
    return _chunks_add(s, n)


cdef inline int32_t _bucket_room(Sim* s, int32_t slot, int32_t t) noexcept nogil:
    """Where bucket `slot`'s next event goes, its last one at t (-1: the bucket is empty):
    the place after t in its chunk, else the first of a free chunk, now the bucket's last
    (a chunk is taken from the free list's head: the one freed last, still in cache).
    -1 if no chunk is free."""
    cdef int32_t c
    if (t + 1) & (CAL_CHUNK - 1):
        return t + 1
    c = s.cal_free
    if c < 0:
        return -1
    s.cal_free = s.cal_link[c]
    if t < 0:
        s.cal_link[c] = -1
        _mark_bucket(s, slot)
    else:
        s.cal_link[c] = t >> CAL_CHUNK_SHIFT
    s.cal_used += 1
    return c << CAL_CHUNK_SHIFT


cdef inline int _bucket_append(Sim* s, int64_t b, Event* ev) noexcept nogil:
    cdef int32_t slot = <int32_t> (b & (s.cal_n - 1))
    cdef int32_t t = _bucket_room(s, slot, s.cal_tail[slot])
    if t < 0:
        if _chunks_add(s, s.cal_chunks) < 0:
            return -1
        t = _bucket_room(s, slot, s.cal_tail[slot])
    s.cal_ev[t] = ev[0]
    s.cal_tail[slot] = t
    return 0


cdef inline int64_t _bucket_count(Sim* s, int32_t t) noexcept nogil:
    """Events in the bucket whose last event is at t (>= 0)."""
    cdef int64_t n = (t & (CAL_CHUNK - 1)) + 1
    cdef int32_t c = s.cal_link[t >> CAL_CHUNK_SHIFT]
    while c >= 0:
        n += CAL_CHUNK
        c = s.cal_link[c]
    return n


cdef inline bint _bucket_to_front(Sim* s, int32_t t, int64_t n) noexcept nogil:
    """The n events of the bucket whose last event is at t into s.front.a (room for n),
    last pushed first, freeing its chunks; True if that is latest first (the bucket was
    pushed in (time, seq) order: `front` is then a sorted run)."""
    cdef Event* a = s.front.a
    cdef Event* src
    cdef int32_t c = t >> CAL_CHUNK_SHIFT, j = t & (CAL_CHUNK - 1), up
    cdef int64_t i = 0
    cdef bint in_order = True
    while True:
        src = &s.cal_ev[<int64_t> c << CAL_CHUNK_SHIFT]
        while j >= 0:
            a[i] = src[j]
            if i:
                in_order = in_order and _before(&a[i], &a[i - 1])
            i += 1
            j -= 1
        up = s.cal_link[c]
        s.cal_link[c] = s.cal_free
        s.cal_free = c
        s.cal_used -= 1
        if up < 0:
            return in_order
        c = up
        j = CAL_CHUNK - 1


cdef inline int _place(Sim* s, Event* ev) noexcept nogil:
    """Put `ev` where it belongs: front, a calendar bucket, or later."""
    cdef int64_t b = ev.time >> s.cal_shift
    if b <= s.cal_cur:
        if s.front_sorted:
            _front_to_heap(s)
        return _heap_insert(&s.front, ev)
    if b < s.cal_cur + s.cal_n:
        return _bucket_append(s, b, ev)
    return _heap_insert(&s.later, ev)


cdef inline int32_t _next_word(Sim* s, int32_t w) noexcept nogil:
    """The first non-empty word of cal_bits from word w on (wrapping), or -1 (none)."""
    cdef int32_t j = w >> 6, k, n_sum = _sum_words(s.cal_n)
    cdef uint64_t m = s.cal_sum[j] & ((~(<uint64_t> 0)) << (w & 63))
    for k in range(n_sum + 1):
        if m:
            return (j << 6) + rocesim_ctz64(m)
        j = (j + 1) % n_sum
        m = s.cal_sum[j]
    return -1


cdef inline int64_t _next_bucket(Sim* s) noexcept nogil:
    """The first non-empty bucket after the current one, or -1 (calendar empty)."""
    cdef int32_t start = <int32_t> ((s.cal_cur + 1) & (s.cal_n - 1))
    cdef int32_t w = start >> 6, j
    cdef uint64_t m = s.cal_bits[w] & ((~(<uint64_t> 0)) << (start & 63))
    if m == 0:
        w = _next_word(s, (w + 1) & ((s.cal_n >> 6) - 1))
        if w < 0:
            return -1
        m = s.cal_bits[w]               # (if w wrapped back to the start word, its bits
                                        #   below `start` are the calendar's last buckets)
    j = (w << 6) + rocesim_ctz64(m)
    return s.cal_cur + 1 + ((j - start) & (s.cal_n - 1))


cdef inline void _front_reverse(Sim* s, int64_t n) noexcept nogil:
    """Reverse the first n events of `front`."""
    cdef int64_t i = 0, j = n - 1
    cdef Event t
    while i < j:
        t = s.front.a[i]
        s.front.a[i] = s.front.a[j]
        s.front.a[j] = t
        i += 1
        j -= 1


cdef inline void _front_to_heap(Sim* s) noexcept nogil:
    """Make a sorted `front` a heap: reversed, earliest first, a sorted array is one."""
    _front_reverse(s, s.front.n)
    s.front_sorted = False


cdef inline Event* _front_top(Sim* s) noexcept nogil:
    """The earliest event of `front` (which must not be empty)."""
    if s.front_sorted:
        return &s.front.a[s.front.n - 1]
    return &s.front.a[0]


cdef inline int _advance(Sim* s) noexcept nogil:
    """`front` is empty and events remain: make the next bucket with events current."""
    cdef int64_t b = _next_bucket(s), i, n
    cdef int32_t slot, t
    cdef Event ev
    s.front_sorted = False
    if b < 0:
        b = s.later.a[0].time >> s.cal_shift    # nothing in the calendar: jump ahead
        s.cal_cur = b
    else:
        s.cal_cur = b
        slot = <int32_t> (b & (s.cal_n - 1))
        t = s.cal_tail[slot]
        n = _bucket_count(s, t)
        if s.front.cap > FRONT_KEEP and n <= FRONT_KEEP:
            _heap_release(&s.front)              # a burst (a million flows released at once) is over
        if _heap_reserve(&s.front, n) < 0:
            return -1
        s.front.n = n
        if _bucket_to_front(s, t, n):
            s.front_sorted = True
        else:
            i = (n - 2) >> 2                     # heapify: sift down every parent
            while i >= 0:
                _sift_down(s.front.a, s.front.n, i, s.front.a[i])
                i -= 1
        s.cal_tail[slot] = -1
        s.cal_bits[slot >> 6] &= ~((<uint64_t> 1) << (slot & 63))
        if s.cal_bits[slot >> 6] == 0:
            s.cal_sum[slot >> 12] &= ~((<uint64_t> 1) << ((slot >> 6) & 63))
        if s.cal_used == 0 and s.cal_chunks > _chunks_initial(s.cal_n) * CAL_KEEP_GROWTH:
            if _chunks_reset(s, _chunks_initial(s.cal_n)) < 0:   # the calendar's memory
                return -1                                         #   follows what it holds
    while s.later.n and (s.later.a[0].time >> s.cal_shift) < s.cal_cur + s.cal_n:
        ev = _heap_take(&s.later)                 # the calendar now reaches these
        if _place(s, &ev) < 0:
            return -1
    return 0


# --- the queue ---------------------------------------------------------------------------

cdef inline void _ev_set(Event* e, int64_t time, int64_t seq, int32_t kind, int32_t target,
                        int64_t arg) noexcept nogil:
    e.time = time
    e.seq = seq
    e.kind = kind
    e.target = target
    e.arg = arg


cdef inline void ev_push(Sim* s, int64_t time, int32_t kind, int32_t target,
                         int64_t arg) noexcept nogil:
    cdef int64_t b = time >> s.cal_shift
    cdef int32_t slot, t
    if b > s.cal_cur and b < s.cal_cur + s.cal_n:
        # the common case, kept small enough to inline: into a calendar bucket, with room
        # in its last chunk or a free chunk (what _place would do, without its other paths)
        slot = <int32_t> (b & (s.cal_n - 1))
        t = _bucket_room(s, slot, s.cal_tail[slot])
        if t >= 0:
            _ev_set(&s.cal_ev[t], time, s.seq, kind, target, arg)
            s.cal_tail[slot] = t
            s.seq += 1
            s.n_events += 1
            return
    _ev_push_placed(s, time, kind, target, arg)


cdef inline void _ev_push_placed(Sim* s, int64_t time, int32_t kind, int32_t target,
                                 int64_t arg) noexcept nogil:
    cdef Event ev
    _ev_set(&ev, time, s.seq, kind, target, arg)
    s.seq += 1
    if _place(s, &ev) < 0:
        s.error = ERR_NOMEM
        return
    s.n_events += 1


cdef inline Event* ev_next(Sim* s) noexcept nogil:
    """The earliest pending event (s.n_events must be > 0), left in the queue; NULL (and
    s.error set) if out of memory."""
    if s.front.n == 0 and _advance(s) < 0:
        s.error = ERR_NOMEM
        return NULL
    return _front_top(s)


cdef inline Event* ev_peek(Sim* s) noexcept nogil:
    """The earliest event of the current bucket, left in the queue; NULL if there is none
    (the next may be in a later bucket)."""
    if s.front.n == 0:
        return NULL
    return _front_top(s)


cdef inline Event ev_pop(Sim* s) noexcept nogil:
    """Remove and return the earliest event (after ev_next returned it)."""
    s.n_events -= 1
    if s.front_sorted:
        s.front.n -= 1
        return s.front.a[s.front.n]
    return _heap_take(&s.front)


cdef inline int32_t ev_bucket_shift(int64_t n_ports, int32_t wider=0) noexcept nogil:
    """log2 of the bucket width (ps) for a network of n_ports ports: about 100 ns / n_ports,
    between 256 ps and 4 ns (8192 buckets then span 2 to 34 us).  Measured in instructions
    and cache misses (cachegrind): 1 ns beats 8 ns on a 32-host leaf-spine, and 256 ps
    and 1 ns are even on a k=8 fat tree.  `wider`: buckets 2**wider times as wide (a part
    of a run in parts: PART_WIDER)."""
    cdef int32_t shift = 8
    while shift < 12 and (<int64_t> 1 << (shift + 1)) * n_ports <= 100000:
        shift += 1
    return shift + wider


cdef inline int32_t ev_calendar_size(int32_t shift, int32_t span_shift) noexcept nogil:
    """Buckets for a queue of 2**shift-ps buckets to look as far ahead as CAL_N buckets of
    2**span_shift ps (a part of a run in parts, its buckets sized for its own ports, spans
    what the whole network's calendar would): a power of two, CAL_MIN .. CAL_N."""
    cdef int32_t n = CAL_N
    while shift > span_shift and n > CAL_MIN:
        n >>= 1
        shift -= 1
    return n


cdef inline int32_t _chunks_initial(int32_t cal_n) noexcept nogil:
    """The calendar's chunks to begin with: room for a quarter as many events as buckets."""
    return max(16, cal_n // (4 * CAL_CHUNK))


cdef inline int ev_init(Sim* s, int32_t shift, int32_t cal_n) noexcept nogil:
    """An empty queue with `cal_n` buckets (a power of two, CAL_MIN .. CAL_N) of 2**shift
    ps; -1 if out of memory."""
    cdef int32_t i, words = cal_n >> 6, sums = _sum_words(cal_n)
    s.cal_shift = shift
    s.cal_n = cal_n
    s.cal_tail = <int32_t*> realloc(NULL, cal_n * sizeof(int32_t))
    s.cal_bits = <uint64_t*> realloc(NULL, words * sizeof(uint64_t))
    s.cal_sum = <uint64_t*> realloc(NULL, sums * sizeof(uint64_t))
    s.cal_ev = NULL
    s.cal_link = NULL
    s.cal_chunks = 0
    s.cal_free = -1
    s.cal_used = 0
    if s.cal_tail == NULL or s.cal_bits == NULL or s.cal_sum == NULL:
        return -1
    for i in range(cal_n):
        s.cal_tail[i] = -1
    for i in range(words):
        s.cal_bits[i] = 0
    for i in range(sums):
        s.cal_sum[i] = 0
    s.cal_cur = 0
    s.n_events = 0
    s.front_sorted = False
    if (_chunks_add(s, _chunks_initial(cal_n)) < 0 or _heap_reserve(&s.front, 256) < 0
            or _heap_reserve(&s.later, 256) < 0):
        return -1
    return 0


cdef inline int64_t ev_bytes(Sim* s) noexcept nogil:
    """Memory the queue holds (its arrays' capacity)."""
    return ((s.front.cap + s.later.cap + <int64_t> s.cal_chunks * CAL_CHUNK) * sizeof(Event)
            + (<int64_t> s.cal_chunks + s.cal_n) * sizeof(int32_t) + s.cal_n // 8)


cdef inline void ev_free(Sim* s) noexcept nogil:
    free(s.cal_tail)
    free(s.cal_ev)
    free(s.cal_link)
    free(s.cal_bits)
    free(s.cal_sum)
    s.cal_tail = NULL
    s.cal_ev = NULL
    s.cal_link = NULL
    s.cal_bits = NULL
    s.cal_sum = NULL
    s.cal_chunks = 0
    s.cal_free = -1
    _heap_release(&s.front)
    _heap_release(&s.later)
