# cython: language_level=3
"""The sender's entropy: the value each data packet carries for switches to hash with its
queue pair's 5-tuple (a UDP source port it varies; routing.with_entropy), `nic.entropy`.

* fixed (the default): the queue pair's own 5-tuple, or a new port every
  `nic.entropy_every` packets (nic_send.pyx); no state.
* oblivious: each packet the next value of a block of `entropy_values` values (a counter
  XOR a random mask, the mask drawn again at each block), so that a block uses every value
  once in a random order and ECMP switches spread a queue pair's packets over their paths
  (uet-htsim's UecMpOblivious, uec_mp.cpp:30-44).  Feedback is not used.
* reps: Recycled Entropy Packet Spraying (uet-htsim's UecMpReps, uec_mp.cpp:137-196, and
  its CircularBufferREPS, buffer_reps.cpp).  The value an ACK echoes (the packet it
  answers: nic_recv.pyx) goes into a ring of REPS_SLOTS values when the ACK is unmarked;
  a marked ACK's value, and a trimmed packet's (its NACK), are not kept.  A packet reuses
  the earliest value in the ring not reused yet (each once), or draws a new one at random
  in [0, entropy_values) when there is none (so the first window is random).  A timeout
  freezes the ring for REPS_FREEZE_US: values are then reused round-robin whether reused
  before or not; at the first feedback after it the ring is emptied and the next
  REPS_EXPLORE packets draw at random.  Simplifications: one ring per queue pair (a flow),
  not per connection; an ACK that covers several packets (nic.ack_every > 1) counts as
  marked if any of them was (the value is the newest one's); a trimmed packet's value is
  never kept (uet-htsim keeps one trimmed at the last hop, which is not the path's fault).

The state lives in the queue pair's pool slot, after the scheme's (qp.qp_entropy_state);
each queue pair draws from a random stream of its own (the run's seed and the flow), so the
values do not depend on the partition or the threads.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint64_t
from rocesim._core.defs cimport Sim, World, Qp, NIL, ENTROPY_OBLIVIOUS, ENTROPY_REPS
from rocesim._core.qp cimport qp_entropy_state
from rocesim._core.rng cimport rng_next, mix64

cdef enum:
    REPS_SLOTS = 8             # values the ring holds (buffer_reps.cpp:5, repsBufferSize)
    REPS_EXPLORE = 16          # random values after a freeze (uec_mp.cpp:167)
    REPS_FREEZE_US = 10000     # a timeout freezes the ring for 10 ms (buffer_reps.cpp:8)


cdef struct EntropyState:
    uint64_t rng               # this queue pair's random stream
    int64_t frozen_until       # reps: frozen (after a timeout) until then; NIL: not frozen
    uint16_t ring[REPS_SLOTS]  # reps: values whose packets came back unmarked
    uint16_t next              # oblivious: position in the block
    uint16_t mask              # oblivious: the block's XOR mask
    uint8_t fresh_bits         # reps: bit per slot: not reused yet
    uint8_t head               # reps: the slot the next good value goes to
    uint8_t count              # reps: slots written (at most REPS_SLOTS)
    uint8_t fresh              # reps: values not reused yet: the last `fresh` written
    uint8_t frozen_next        # reps, frozen: the slot reused next
    uint8_t explore            # reps: random values still to draw before reusing


cdef inline int32_t entropy_state_size(int32_t mode) noexcept nogil:
    """Bytes of entropy state per queue pair for NetParams.entropy `mode`."""
    return sizeof(EntropyState) if mode == ENTROPY_OBLIVIOUS or mode == ENTROPY_REPS else 0


cdef inline void entropy_open(Sim* s, int32_t f, Qp* fl) noexcept nogil:
    """Flow f's queue pair opens (its slot is zeroed): its random stream and first block."""
    cdef World* w = s.w
    cdef EntropyState* e
    if w.entropy_state_size == 0:
        return
    e = <EntropyState*> qp_entropy_state(s, fl)
    e.rng = mix64(w.p.entropy_seed ^ mix64(<uint64_t> f + <uint64_t> 0x9E3779B9))
    e.frozen_until = NIL
    e.mask = <uint16_t> (rng_next(&e.rng) & <uint64_t> (w.p.entropy_values - 1))


cdef inline uint16_t _random_value(World* w, EntropyState* e) noexcept nogil:
    return <uint16_t> (rng_next(&e.rng) & <uint64_t> (w.p.entropy_values - 1))


cdef inline uint16_t _oblivious(World* w, EntropyState* e) noexcept nogil:
    cdef uint16_t v = (e.next ^ e.mask) & <uint16_t> (w.p.entropy_values - 1)
    e.next += 1
    if e.next == w.p.entropy_values:
        e.next = 0
        e.mask = _random_value(w, e)
    return v


cdef inline uint16_t _reps(Sim* s, EntropyState* e) noexcept nogil:
    cdef int32_t k
    if e.explore > 0:
        e.explore -= 1
        return _random_value(s.w, e)
    if e.frozen_until != NIL:                      # frozen: the ring round-robin
        if e.count == 0:
            return _random_value(s.w, e)
        k = e.frozen_next % e.count
        e.frozen_next = <uint8_t> ((k + 1) % e.count)
        if (e.fresh_bits >> k) & 1:
            e.fresh_bits &= <uint8_t> ~(1 << k)
            e.fresh -= 1
        return e.ring[k]
    if e.fresh == 0:
        return _random_value(s.w, e)
    k = (e.head + REPS_SLOTS - e.fresh) % REPS_SLOTS      # the earliest fresh value
    e.fresh_bits &= <uint8_t> ~(1 << k)
    e.fresh -= 1
    return e.ring[k]


cdef inline uint16_t entropy_next(Sim* s, Qp* fl) noexcept nogil:
    """The entropy of the queue pair's next data packet (oblivious or reps)."""
    cdef EntropyState* e = <EntropyState*> qp_entropy_state(s, fl)
    if s.w.p.entropy == ENTROPY_REPS:
        return _reps(s, e)
    return _oblivious(s.w, e)


cdef inline void entropy_feedback(Sim* s, Qp* fl, uint16_t value, bint good) noexcept nogil:
    """REPS: an ACK (`good`: unmarked) or a trimmed packet's NACK echoed `value`."""
    cdef EntropyState* e = <EntropyState*> qp_entropy_state(s, fl)
    if e.frozen_until != NIL and s.now > e.frozen_until:     # the freeze is over: explore again
        e.frozen_until = NIL
        e.fresh_bits = e.head = e.count = e.fresh = e.frozen_next = 0
        e.explore = REPS_EXPLORE
    if not good:
        return
    if not (e.fresh_bits >> e.head) & 1:
        e.fresh += 1                               # (overwriting a fresh value keeps the count)
    e.ring[e.head] = value
    e.fresh_bits |= <uint8_t> (1 << e.head)
    e.head = (e.head + 1) % REPS_SLOTS
    if e.count < REPS_SLOTS:
        e.count += 1


cdef inline void entropy_timeout(Sim* s, Qp* fl) noexcept nogil:
    """REPS: the queue pair timed out: freeze the ring (unless frozen or exploring)."""
    cdef EntropyState* e = <EntropyState*> qp_entropy_state(s, fl)
    if e.frozen_until == NIL and e.explore == 0:
        e.frozen_until = s.now + <int64_t> REPS_FREEZE_US * 1000000
