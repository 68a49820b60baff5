# cython: language_level=3
from libc.stdint cimport int64_t, int32_t, uint64_t, uint8_t
from rocesim._core.defs cimport Sim

cdef struct DLRecord:       # one deadlocked cycle, as found
    int64_t formed         # ps: when the last of its queues became paused (all paused since)
    int64_t detected       # ps: the check that found it
    uint64_t key           # identity (its queues and formed time): each cycle is reported once
    int32_t prio
    int32_t port_off       # its queues (port * NPRIO + prio) in cycle order: DLState.rec_ports[...]
    int32_t n_ports
    int32_t flow_off       # flows with packets in its queues: DLState.rec_flows[flow_off ...]
    int32_t n_flows

cdef struct DLState:
    int64_t interval
    int64_t threshold
    int64_t next_at        # a run in parts: the next check's time (INT64_MAX: none); with one
                           #   part the check is an event (EV_DEADLOCK)
    int32_t stop           # stop the run at the first deadlock
    int32_t periodic       # checks run every `interval` (detection on); 0: allocated only to
                           #   look once at a stalled run (deadlock_at_stall, detection off)
    int32_t n_keys         # n_ports * NPRIO: a queue's key is port * NPRIO + prio
    int32_t* cand          # [key] -> candidate index, or -1
    int32_t* nodes         # candidates' keys
    int32_t n_nodes
    int32_t* adj_off       # wait-for edges among candidates (CSR)
    int32_t* adj
    int64_t adj_cap
    int32_t* scratch       # 6 x n_keys ints for Tarjan's SCC and the cycle search
    uint8_t* flow_mark     # one byte per flow, to list a cycle's flows once
    DLRecord* recs
    int32_t n_recs
    int32_t cap_recs
    int32_t* rec_ports
    int32_t n_rec_ports
    int32_t cap_rec_ports
    int32_t* rec_flows
    int32_t n_rec_flows
    int32_t cap_rec_flows

cdef int deadlock_init(Sim* s, int64_t interval, int64_t threshold, bint stop) noexcept nogil
cdef bint deadlock_check(Sim* s) noexcept nogil
cdef bint deadlock_check_at(Sim* s, int64_t now, bint frozen, int64_t flows_done) noexcept nogil
cdef int deadlock_at_stall(Sim* s, int64_t threshold, bint frozen, int64_t now) noexcept nogil
cdef void deadlock_free(Sim* s) noexcept nogil
