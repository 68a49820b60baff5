# cython: language_level=3
"""Shared C structs and constants of the rocesim core.

Every module of the core works on one `Sim` struct passed by pointer; there is no
global state.  A run is held in parts (issue 20), each a `Sim` with its own queue, pools,
counters and clock, sharing one `World` (the network, the flows, the parameters: `s.w`;
engine.pyx builds them): a module acts on the part it is given (window.pyx runs several).
Nodes are numbered hosts first (0..H-1), then switches.  A *port* is
one end of a full-duplex link: it owns the egress queues and the transmitter of
one direction, and the in-flight FIFO of the packets on that direction's wire.

Time is an int64 count of picoseconds everywhere.
"""
from libc.stdint cimport int64_t, int32_t, uint64_t, uint32_t, uint16_t, uint8_t

cdef enum:
    NPRIO = 8              # priorities (queues) per port
    MAX_INT_HOPS = 5       # INT records carried by a packet (HPCC: at most 5 hops)
    NIL = -1               # end of an intrusive list / "none"

# Sim.error codes: the loop stops and the engine raises.
cdef enum:
    ERR_NONE = 0
    ERR_CALLBACK = 1       # a congestion-control scheme written in Python raised
    ERR_NOMEM = 2          # the heap or the packet pool could not grow

# Event kinds.  The event loop in loop.pyx dispatches on these.  Kinds up to
# EV_FAULT are work; timers of a flow (EV_RTO .. EV_ACK_TIMER) are work only while it is
# active; the detector's checks never are (the stall watch looks at the time of the last work).
cdef enum EventKind:
    EV_ARRIVE = 0          # the head packet of the wire into a port reaches it; target = that port,
                           #   arg = that packet (only to prefetch it: the wire's head is the truth)
    EV_TX = 1              # a port's transmitter may start a packet; target = port, arg = the packet
                           #   likely to go (a prefetch hint, link.pxd port_kick) or NIL
    EV_FLOW_START = 2      # a flow starts; target = flow
    EV_COMPUTE_DONE = 3    # a compute step of the dependency graph ends; target = flow
    EV_FAULT = 4           # a scheduled fault (faults.pyx); target = fault index
    EV_RTO = 5             # retransmission-timeout check; target = flow
    EV_CC_TIMER = 6        # congestion-control timer; target = flow, arg = timer id
    EV_ACK_TIMER = 7       # the receiver's ACK-coalescing timer (nic_recv.pyx); target = flow
    EV_DEADLOCK = 8        # deadlock detector's check (deadlock.pyx)
    EV_WATCHDOG = 9        # PFC watchdog poll (watchdog.pyx)
    EV_FLUID = 10          # the flow-level network (fluid.pyx, flow mode only); target = flow,
                           #   arg = what happens to it
    EV_PULL = 11           # a receiver's credit pacer may grant (rccc.pyx); target = host

cdef enum PacketKind:
    PK_DATA = 0
    PK_ACK = 1
    PK_NACK = 2
    PK_CNP = 3
    PK_PULL = 4            # receiver credits (RCCC, rccc.pyx): seq = the bytes granted so far
    PK_TRIMMED = 5         # a data packet a switch cut to its header (trim.pxd): routed as data, at
                           #   the trimming priority; its receiver answers with a PK_TRIM_NACK
    PK_TRIM_NACK = 6       # the receiver's answer to a trimmed header: resend that packet (nic_send.pyx)
    PK_PAUSE = 7           # (PAUSE and LOST last: kinds from PK_PAUSE on end at the wire's far end: loop.pyx)
    PK_LOST = 8            # was on a wire when its link went down: dropped where it arrives

cdef enum SchedState:      # a flow in its host's active set (active_set.pxd)
    SCHED_BLOCKED = 0      # nothing to send or window full
    SCHED_READY = 1        # may send now: its bit is set in Host.ready_bits
    SCHED_PACED = 2        # may send at Qp.paced_at: in the host's paced heap

cdef enum FlowPhase:
    FS_WAITING = 0         # not yet started (start time or parents pending)
    FS_ACTIVE = 1          # sending or waiting for ACKs
    FS_DONE = 2            # sender has the ACK of the last byte

cdef struct Sim  # forward declaration: the interfaces below take Sim*
cdef struct World
cdef struct LossState  # forward declaration: Qp points to one

cdef struct Event:
    int64_t time
    int64_t seq            # global insertion counter: ties break in insertion order
    int32_t kind
    int32_t target
    int64_t arg

cdef struct EventHeap:      # a 4-ary min-heap of events (events.pxd)
    Event* a
    int64_t n
    int64_t cap

cdef struct IntHop:
    int64_t ts             # dequeue time at the switch egress (ps)
    int64_t tx_bytes       # cumulative bytes the egress port has sent
    int32_t qlen           # egress queue bytes of the packet's priority at dequeue
    int32_t rate_mbps      # egress link rate

cdef struct Packet:
    # One 64-byte cache line (the pool is 64-byte aligned): everything a hop touches, and
    # the sequence number and timestamp the ends read.  Rarely used fields live beside the
    # pool, indexed like it: INT records (Sim.int_hops, only when INT is on) and the SACK
    # of ACKs and NACKs (Sim.pkt_sack).  A data packet's payload is its size less
    # the headers (pkt_payload in pool.pxd).
    int64_t time           # while on a wire: arrival time at the far end
    int64_t next_time      # on a wire: arrival time of the packet behind it (saves a miss)
    int64_t seq            # DATA: first payload byte; ACK/NACK: cumulative bytes received
    int64_t ts             # DATA: time the sender put it on the wire; ACK/NACK: echo of it
    int32_t next           # intrusive singly linked list (queue or wire FIFO)
    int32_t flow
    int32_t dst            # host ids
    int32_t size           # bytes on the wire, headers included
    int32_t in_port        # ingress port at the current switch (PFC accounting)
    uint8_t kind
    uint8_t prio           # queue index 0..7
    uint8_t ecn            # DATA: CE mark; ACK: how many of the packets it covers were marked
    uint8_t ttl
    uint8_t hop            # switches traversed (indexes explicit per-flow paths)
    uint8_t nhops          # valid INT records
    uint8_t pause_on       # PAUSE: 1 = XOFF, 0 = XON (priority in `prio`)
    uint8_t acked_pkts     # ACK: in-order data packets it covers (1 .. ack_every <= 255)
    uint8_t in_prio        # priority it entered the current switch with (PFC accounting): differs
                           #   from `prio` when the switch moved a bouncing packet (NetParams.bounce_priority)
    uint8_t spec           # DATA: sent on the speculative credit a flow starts with (RCCC)
    uint16_t entropy       # DATA: the sender's per-packet entropy (a UDP source port it varies), mixed
                           #   into the switches' hash; 0: none (the queue pair's 5-tuple alone)

cdef struct Port:
    # Laid out by use: the first 64-byte line holds what every packet through the port
    # reads (transmitter, wire, masks), the next two its queues, then ECN and the
    # counters a transmission bumps, then ingress PFC accounting; rarely used last.
    int64_t busy_until     # transmitter busy until (ps)
    int64_t tx_event       # time of the pending EV_TX, or NIL
    int64_t rate_bps
    int64_t delay_ps
    int32_t wire_head      # packets on the wire coming to this port, in arrival order (kept where they
    int32_t wire_tail      #   arrive: in a run in parts, by the receiving part)
    int32_t peer           # port id at the other end of the link
    uint8_t is_switch      # owning node is a switch
    uint8_t cut            # a run in parts: the link joins two parts; its packets go through
                           #   the hand-off record World.handoff[handoff] (link.pxd, window.pyx)
    uint16_t _pad_port
    uint32_t q_mask        # bit p set: queue p is not empty
    # PFC, egress side: the peer has paused priority p of this port's transmitter
    uint32_t paused_mask
    uint8_t down                 # the link is down (faults.pyx): nothing is sent
    uint8_t drop_mask            # packets of these priorities entering or leaving by this port
                                 #   are dropped (link down: all; PFC watchdog `drop`: stormed)
    uint8_t uplink               # switch port towards a higher layer (its peer is farther from the hosts)
    uint8_t pfc_pending          # bitmask: a PAUSE frame for priority p waits to go out
    int32_t rr             # round-robin position among data queues
    int32_t q_head[NPRIO]  # egress queues
    int32_t q_tail[NPRIO]
    int64_t q_bytes[NPRIO]
    # ECN (RED on egress queue bytes)
    int64_t kmin
    int64_t kmax
    double pmax
    # counters
    int64_t tx_bytes
    int64_t tx_pkts
    int32_t node
    int32_t peer_node
    # PFC, ingress side (switch ports): accounting of bytes that entered by this port
    int64_t in_bytes[NPRIO]      # bytes held in reserve + shared pool
    int64_t hdrm_bytes[NPRIO]    # bytes held in headroom
    int64_t headroom
    int32_t pfc_shift            # dynamic threshold = free / 2**pfc_shift
    uint8_t pause_sent[NPRIO]    # we have told the peer to stop priority p
    uint8_t pfc_state            # bitmask: state (1 = XOFF) that frame must carry
    uint8_t pause_ignore         # PAUSE frames for these priorities are ignored (watchdog `forward`)
    uint8_t xoff_rx              # the state the peer's last PAUSE frame carried, per priority
    int64_t paused_since[NPRIO]
    int64_t paused_ps[NPRIO]
    int64_t buffer_drops   # packets the switch buffer refused on arriving by this port
    int64_t pauses_sent
    int64_t ecn_marks
    int64_t wd_dropped           # packets the PFC watchdog dropped at this port
    int32_t wd_detections        # storms the PFC watchdog detected on this port (all priorities)
    int32_t wd_restorations
    int32_t handoff              # a cut port: its record in World.handoff (NIL: not cut)
    int32_t handoff_n            # ... the packets its part put in the record in the window
                                 #   its `Sim.sent` belongs to (link.pxd)
    int64_t trimmed              # data packets trimmed to their header at this egress port (trim.pxd);
                                 #   576 bytes: every port starts a cache line (64-byte aligned array)

cdef struct Switch  # forward declaration: lb_pick_fn takes one

# Load balancing (lb_*.pyx, one scheme per file): a switch's choice among the `cnt` equal-cost
# egress ports route_ports[off ..] towards destination class `cls` for packet `pk` (data, or an
# ACK, NACK or CNP: a switch cannot tell them apart), whose 5-tuple hash (a data packet's with
# its entropy mixed in, a control packet's reverse one) is `hash`; returns the index 0..cnt-1.
# NULL: ECMP on the hash.
ctypedef int32_t (*lb_pick_fn)(Sim* s, Switch* sw, int32_t off, int32_t cnt, int32_t cls, uint32_t hash,
                               Packet* pk) noexcept nogil

cdef struct Switch:
    int32_t node
    int32_t port_off       # ports of this switch: port_off .. port_off + n_ports - 1
    int32_t n_ports
    uint32_t seed          # ECMP hash seed
    lb_pick_fn lb_pick     # the load-balancing scheme's choice for data packets (NULL: ECMP)
    void* lb_state         # its state at this switch (one block, freed with the world), or NULL
    int64_t buffer
    int64_t used           # all bytes held
    int64_t shared_used    # bytes held above the per-queue reserves, outside headroom
    int64_t total_hdrm
    int64_t total_rsrv
    int64_t _pad_sw[7]     # 128 bytes in a 64-byte aligned array: the buffer counters a packet bumps
                           #   share no cache line with another switch's (another part's, on
                           #   another core, in a run in parts)

cdef struct PacedEntry:   # a paced flow's next sending time (active_set.pxd)
    int64_t time
    int32_t flow

cdef struct Host:
    int32_t port
    int32_t rr             # round-robin position in `active`
    int32_t n_active
    int32_t cap_active
    int32_t* active        # flows of this host with data to send
    int32_t prio_active[NPRIO]   # how many of them use each priority
    uint64_t* ready_bits   # bit per position of `active`: that flow may send now
    uint64_t* ready_sum    # bit per word of ready_bits: the word is not zero
    PacedEntry* paced[NPRIO]     # min-heaps by time of the paced flows, per priority
    int32_t n_paced[NPRIO]
    int32_t cap_paced[NPRIO]
    # receiver credits (RCCC, rccc.pyx): the flows towards this host that still want credit,
    # granted round-robin by one pacer
    int32_t* pull_flows
    int32_t n_pull
    int32_t pull_rr        # the next to serve
    int64_t cap_pull
    uint8_t pull_armed     # an EV_PULL is pending
    int64_t pull_free      # the pacer may grant again from this time (ps)
    int64_t _pad_host[2]   # 256 bytes in a 64-byte aligned array: the fields a packet bumps
                           #   share no cache line with another host's (another part's, on
                           #   another core, in a run in parts)

cdef union FlowSlot:       # one int32 whose meaning follows the flow's phase
    int32_t deps_left      # FS_WAITING: parents not yet satisfied
    int32_t act_pos        # FS_ACTIVE: position in its host's active set (NIL: not listed)

cdef struct Flow:
    # The record every flow has, from the core's build to its end: 64 bytes, whatever its
    # state.  What a flow needs only while it sends and receives (sequence numbers, rates,
    # timers, the scheme's state) is its queue pair (`Qp`, below), taken from a pool when
    # the NIC first sends for it and returned when it is done (qp.pxd).  ECMP hashes come from the flow id
    # (routing.flow_hash: of its queue pair's 5-tuple, World.flow_hash, or of the flow id),
    # explicit paths and rate limits are side arrays (World.flow_path_off, World.flow_rate_limit:
    # NULL when no flow has one).
    int32_t src
    int32_t dst
    int32_t qp             # its queue pair (FS_ACTIVE data flows once the NIC served them), or NIL
    FlowSlot slot
    int32_t child_off      # children: child_idx[child_off .. flows[f + 1].child_off] (the array
                           #   holds a sentinel record at n_flows)
    uint8_t prio
    uint8_t state          # FlowPhase
    uint8_t is_compute     # a compute step (no packets) of `size` ps
    uint8_t _pad
    int64_t size           # payload bytes; a compute step (is_compute): its duration (ps)
    int64_t due            # before release: a flow without parents, its start time (ps); with
                           #   parents, the delay after the last one (ps)
    int64_t released       # ps, when the flow was released (NIL before)
    int64_t finish         # ps, sender got the ACK of the last byte (NIL until then)
    int64_t rx_finish      # ps, receiver got the last byte (NIL until then)

cdef struct Qp:
    # A queue pair: the sender and receiver state of one active data flow (both ends live in
    # one record, as the simulation needs no second copy).  The scheme's per-flow state
    # follows it in the pool (Sim.qp_stride bytes per slot; qp.cc_flow_state).  What only
    # loss recovery needs is apart (LossState, allocated on the flow's first loss).  When
    # receivers keep their own records (World.flow_rx, for a run in parts: qp.rx_of), a
    # receive record is a slot of the receiver's part's pool of which only the receiver
    # fields (and the LossState's) are used, marked `is_rx`.
    int32_t flow           # the flow it serves, NIL while the slot is free
    int32_t next_free      # free list of the pool
    int32_t sched          # SchedState while listed in its host's active set
    int32_t last_size      # wire bytes of the last packet sent (with last_send: a rate change
                           #   re-times next_send from them, as the fork's ChangeRate)
    int64_t paced_at       # SCHED_PACED: the time of its entry in the paced heap
    # sender
    int64_t snd_nxt        # next byte to send
    int64_t snd_una        # first byte not acknowledged
    int64_t snd_max        # highest byte ever sent (+1)
    int64_t next_send      # pacing: earliest time of the next packet (ps)
    int64_t last_send      # when the last packet left
    int64_t rate_bps       # set by congestion control
    int64_t window         # bytes in flight allowed (0: no window)
    int64_t line_rate      # host link rate when the flow started
    int64_t rto_deadline
    uint8_t rto_armed
    uint8_t is_rx          # 1: a receive record (qp.rx_open), not a queue pair
    uint8_t speculating    # sender, RCCC: still on the credit it started with (until the first
                           #   ACK, NACK or PULL)
    uint8_t pull_listed    # receiver, RCCC: in its host's pacer (Host.pull_flows)
    int64_t credit         # sender, RCCC: bytes of new data it may still send (may fall below 0
                           #   by less than a packet)
    int64_t credit_seen    # sender, RCCC: bytes granted by the PULLs seen so far
    int64_t rcv_granted    # receiver, RCCC: bytes granted to the flow so far
    int64_t rcv_spec       # receiver, RCCC: payload bytes received sent on speculative credit
    int64_t rcv_regrant    # receiver, RCCC: payload bytes of credited packets trimmed on the way,
                           #   to grant again for their resends
    # receiver
    int32_t unacked        # data packets received since the last ACK
    int32_t unacked_marked # ... of which CE-marked (echoed by the ACK that covers them)
    int32_t ack_held       # the newest of them (pool index), kept until the ACK that covers it
                           #   goes (the coalescing timer's ACK is built from it); NIL: none
    int64_t rcv_nxt
    int64_t ack_due        # the owed ACK goes at this time at the latest (the first packet it
                           #   covers + NetParams.ack_timeout)
    int64_t ack_timer      # time of the pending EV_ACK_TIMER, or NIL
    int64_t last_cnp       # NIL: none sent yet
    LossState* loss        # allocated on the flow's first loss (loss.pxd), else NULL

cdef struct LossRec:       # a flow's loss counts, kept past its queue pair (qp.pxd): its sender's
    int32_t flow           #   (at qp_close) or its receiver's (at its last byte, and for each late
    int32_t n_timeouts     #   duplicate after it); the readback sums a flow's records
    int64_t retx_bytes
    int64_t reordered      # receiver: data packets that arrived with a gap below them
    int64_t spurious_bytes # receiver: payload bytes that arrived again, already held
    int64_t trimmed        # receiver: trimmed headers of the flow that arrived

cdef struct LossState:
    # What a flow needs only once it has lost a packet (both ends), allocated then: flows
    # that never lose one pay one NULL pointer for it.  Bitmaps: one bit per packet.
    uint8_t* rx_bits       # receiver, selective repeat or unordered delivery: packets received
    int64_t rx_bits_len    #   beyond rcv_nxt
    uint8_t* sack_bits     # sender, selective repeat or unordered delivery: packets the receiver
                           #   reported out of order (SACKed)
    int64_t sack_bits_len
    int64_t sack_high      # sender: one past the highest SACKed byte
    int64_t retx_nxt       # sender: next hole to retransmit in recovery (unordered delivery: every
                           #   hole below it was sent again since the last timeout)
    int64_t recovery_end   # sender: in recovery until snd_una reaches this (NIL: not); unordered
                           #   delivery: set by a timeout, every unSACKed byte below it is lost
    int64_t last_nack      # receiver, go-back-N: when it last NACKed (NIL: never) ...
    int64_t last_nack_seq  #   ... and for which rcv_nxt
    int64_t retx_bytes     # sender: payload bytes sent more than once
    int32_t n_timeouts     # sender: retransmission timeouts
    int32_t _pad_loss
    int64_t sacked         # sender, unordered delivery: bytes SACKed at or above snd_una (not in flight)
    int64_t loss_told      # sender, unordered delivery: holes below it were told to the scheme as
                           #   losses (on_nack once per hole the threshold declares; a timeout: on_timeout)
    int64_t reordered      # receiver: data packets that arrived with a gap below them
    int64_t spurious_bytes # receiver: payload bytes that arrived again while held (or after the last byte)
    int64_t trimmed        # receiver: trimmed headers of the flow that arrived
    # sender, selective repeat or unordered delivery: packets the receiver NACKed as trimmed (loss.pxd's
    # trim_*): to send again (`trim_todo`, `trims_todo` of them, none below `trim_lo`), and every one
    # NACKed since the last timeout (`trim_bits`: the recovery cursor leaves them to their NACK)
    uint8_t* trim_todo
    int64_t trim_todo_len
    uint8_t* trim_bits
    int64_t trim_bits_len
    int64_t trims_todo
    int64_t trim_lo

cdef struct AckInfo:
    int64_t acked          # bytes newly acknowledged
    int64_t seq            # cumulative ack
    int64_t rtt            # now - echoed send timestamp (ps)
    int32_t ecn            # ECN echo: some packet the ACK covers was CE-marked
    int32_t packets        # data packets the ACK covers (ack_every, fewer at the end)
    int32_t marked         # how many of them were CE-marked
    int32_t nhops
    IntHop* hops

# Congestion-control interface: one scheme per simulation, called per event of a flow.
ctypedef void (*cc_flow_fn)(Sim* s, int32_t f) noexcept nogil
ctypedef void (*cc_ack_fn)(Sim* s, int32_t f, AckInfo* a) noexcept nogil
ctypedef void (*cc_timer_fn)(Sim* s, int32_t f, int64_t arg) noexcept nogil
ctypedef void (*cc_free_fn)(void* state) noexcept nogil

cdef struct CCOps:
    cc_flow_fn on_start    # set rate_bps / window before the first packet
    cc_ack_fn on_ack
    cc_flow_fn on_nack
    cc_flow_fn on_cnp
    cc_flow_fn on_timeout
    cc_timer_fn on_timer
    cc_free_fn free_state  # releases `state` when the simulation is freed (may be NULL)
    void* state            # scheme-owned state (parameters)
    int32_t flow_state_size  # bytes of per-flow state the scheme keeps beside each queue pair
    int32_t needs_cnp      # receivers answer ECN-marked data with CNPs

cdef enum LossRecovery:   # NetParams.loss_recovery: nic.loss_recovery (params.LOSS_RECOVERY, in this order)
    GO_BACK_N = 0
    SELECTIVE_REPEAT = 1

cdef enum EntropyMode:    # NetParams.entropy: nic.entropy (params.ENTROPY, in this order; entropy.pxd)
    ENTROPY_FIXED = 0      # the queue pair's 5-tuple (and nic.entropy_every's port changes)
    ENTROPY_OBLIVIOUS = 1  # each packet the next of a block of values, in a random order
    ENTROPY_REPS = 2       # values whose packets came back unmarked are reused (REPS)

cdef enum Delivery:       # NetParams.delivery: nic.delivery (params.DELIVERY, in this order)
    ORDERED = 0            # in order: go-back-N or selective repeat, as loss_recovery says
    UNORDERED = 1          # placed on arrival, SACKed; the sender declares holes lost (nic_recv.pyx)

cdef struct NetParams:
    # The network's parameters, one field per row of params.NET (params.py: the setting each
    # comes from, its conversion, its range); Core fills it from the dict params.core_params
    # makes, by name.  Sizes in bytes, times in ps.
    int32_t payload        # nic.payload: payload bytes per data packet
    int32_t header         # nic.header: header bytes of a data packet
    int32_t int_header     # nic.int_header: extra bytes of a data packet when INT is on
    int32_t ack_size       # nic.ack_size: ACK/NACK without INT
    int32_t ack_int_size   # ACK/NACK echoing INT records
    int32_t cnp_size
    int32_t pause_size
    int32_t ack_every
    int64_t ack_timeout    # ps an ACK may be owed (ack_every > 1): > 0 that time; -1 auto (ack_every
                           #   full packets at the receiver's link rate); 0 never (the HPCC fork)
    int32_t ack_high_priority  # ACK/NACK/CNP in priority 0 (strict high priority), else the flow's
    int32_t loss_recovery  # LossRecovery (ordered delivery only)
    int32_t delivery       # Delivery
    int32_t reorder_threshold  # unordered delivery: a hole is lost once this many packets above it
                           #   were SACKed (0: only the timeout declares losses)
    int32_t sack_carried   # ACKs and NACKs carry a SACK beside them (Sim.pkt_sack): selective repeat
                           #   or unordered delivery
    int32_t ttl
    int64_t cnp_interval
    int64_t nack_interval
    int64_t rto
    uint32_t rto_mask      # priorities whose flows arm the timeout (nic.rto: auto = the lossy ones)
    int64_t reserve        # per (port, queue) bytes
    int64_t resume_offset
    uint32_t pfc_mask      # priorities with PFC on
    int32_t pfc_dynamic    # 1: alpha x free buffer; 0: the static pfc_threshold
    int64_t pfc_threshold  # static threshold, bytes of shared use per (port, queue)
    uint32_t ecn_mask      # priorities that get ECN marks
    int32_t lossy_dynamic  # lossy queues limited to lossy_alpha x free buffer
    double lossy_alpha
    int32_t int_enabled
    int64_t tx_quantum     # ps: wire and pacing times rounded down to a multiple of this (0: exact)
    int32_t entropy_every  # a new entropy (UDP source port) every N data packets of a queue pair (0: none)
    int32_t rccc           # nic.rccc: receivers grant credits, senders send new data only on them
    int64_t rccc_credit    # nic.rccc_credit: bytes per grant
    double rccc_pace       # nic.rccc_pace: grants paced at this fraction of the receiver's link rate
    double rccc_speculative  # nic.rccc_speculative: credit a flow starts with, in its BDPs
    int32_t entropy        # EntropyMode: how a sender picks each data packet's entropy (entropy.pxd)
    int32_t entropy_values # oblivious and REPS: the values a queue pair draws from (a power of two)
    uint64_t entropy_seed  # the run's seed: each queue pair's entropy draws are its own stream of it
    uint32_t trim_mask     # priorities whose data packets a switch trims instead of dropping (trim.pxd;
                           #   switch.trimming, the lossy priorities), 0: trimming off
    int32_t trim_size      # bytes of a trimmed header on the wire
    int64_t trim_threshold # egress queue bytes (of the packet's priority) above which data is trimmed;
                           #   0: only what the buffer would drop
    int32_t trim_priority  # the priority trimmed headers travel at (0: the strict-priority control queue)
    int32_t bounce_priority  # deadlock avoidance: a data packet entering a switch from an uplink and
                           #   leaving by an uplink (a bounce, against up-down routing) moves to
                           #   this priority; -1: next priority up (Tagger-style); 0: off

cdef struct RouteGroup:    # the equal-cost egress ports of a (switch, destination class)
    int32_t off            # first of them in World.route_ports
    int32_t cnt            # how many; -1: direct delivery, the port is route_ports[off + dst]

cdef struct PauseRec:      # one interval during which a port's priority was paused
    int64_t start          # ps
    int64_t end            # ps
    int32_t port           # the port whose transmitter was paused (its peer sent the PAUSE)
    int32_t prio

cdef struct Stats:
    int64_t events
    int64_t link_crossings
    int64_t buffer_drops   # packets a switch buffer refused (the other causes: the *_drops below)
    int64_t ttl_drops
    int64_t pauses
    int64_t resumes
    int64_t cnps
    int64_t nacks
    int64_t acks
    int64_t timeouts
    int64_t retx_bytes
    int64_t data_pkts_sent
    int64_t data_bytes_delivered
    int64_t flows_done
    int64_t time_errors    # events found earlier than the clock (must stay 0)
    int64_t link_drops     # packets lost with a link that went down (on its wire or queued for it)
    int64_t watchdog_drops # packets dropped by the PFC watchdog's `drop` action
    int64_t nic_drops      # data a stopped NIC could not take (its buffer full: faults.pyx)
    int64_t no_route_drops # packets a switch had no route for
    int64_t fluid_solves   # flow mode: rate recomputations (fluid.pyx)
    int64_t reordered      # data packets that arrived with a gap below them
    int64_t spurious_bytes # payload bytes that arrived again while their receiver held them
    int64_t ecn_echoes     # ACKs that reached their sender's scheme echoing a CE mark (nic_send.pyx)
    int64_t cnps_received  # CNP packets that reached their sender's scheme
    int64_t fluid_split_fallbacks  # flow mode: flows whose equal-cost paths had more links than a
                           #   fluid flow holds, sent on their one ECMP path instead (fluid.pyx)
    int64_t trimmed        # data packets switches trimmed to their header

cdef struct Handoff:
    # A cut port's crossing (issue 20, a run in parts; link.pxd, window.pyx).  The sender's
    # part copies every packet it puts on the port's wire into `pk` (its INT records into
    # `hops`, its SACK into `sack`) during a window; the receiving part takes them into its
    # own pool, in send order, onto the wire of the link's far end (`peer`, whose wire
    # holds the packets coming to it), whose head its EV_ARRIVE pops.  The buffers keep
    # their capacity from window to window.  A record is read, not written, by both parts
    # (but when a buffer grows): how many packets it holds is counted in the sender's port
    # (Port.handoff_n) and told to the receiver by window.pyx (`Windows.noted`), so that the
    # line stays in both cores' caches; a line of its own (the records are 64-byte aligned).
    Packet* pk
    IntHop* hops           # MAX_INT_HOPS per packet (INT on), else NULL
    int64_t* sack          # per packet (NetParams.sack_carried), else NULL
    int32_t cap
    int32_t port           # the cut port (the sender's end)
    int32_t peer           # its peer (the receiving end), which keeps the wire
    int32_t _pad[7]

cdef struct DepMsg:
    # A dependency across parts (issue 20): a parent completed in this part, its child
    # starts in another; the child may start no earlier than `time` (flows.pyx).
    int64_t time
    int32_t child
    int32_t _pad

ctypedef void (*ack_fn)(Sim* s, int32_t i) noexcept nogil   # World.on_ack

cdef struct World:
    # What every part of a run shares (issue 20), built once and owned by the Core
    # (engine.pyx): the network, the flows and their per-flow arrays, routing, the
    # parameters, the scheme, the monitors' and faults' state, the hand-off records and the
    # list of parts.  A part reaches it as `s.w` (hot code keeps a local `World* w = s.w`);
    # each entry of `ports`, `hosts`, `flows` is written only by the part that owns it
    # (parts.pxd).
    int32_t n_hosts
    int32_t n_nodes
    int32_t n_ports
    int32_t n_flows
    Port* ports
    Switch* sw             # indexed by node - n_hosts
    Host* hosts
    Flow* flows            # n_flows records and a sentinel (Flow.child_off)
    int32_t* flow_path_off # explicit per-flow path: offset in path_ports, or NIL (NULL: none)
    int64_t* flow_rate_limit  # the user's cap on a flow's pacing rate, 0 none (NULL: none)
    uint32_t* flow_hash    # per flow, the ECMP hash of its queue pair's 5-tuple, forward (its data)
    uint32_t* flow_rhash   #   and reverse (its ACKs, NACKs, CNPs); NULL: each flow its own QP, hashed
                           #   from its id (routing.flow_hash; rocesim/world/connections.py)
    int32_t* flow_rx       # receivers' own records (a run in parts): per flow, the slot of its
                           #   receive record in its receiver's part's pool, or NIL; NULL: the
                           #   receiver uses the sender's queue pair (qp.rx_of)
    # routing (rocesim.network.routing.RouteTables): (switch, destination class) -> equal-cost
    # egress ports; cnt -1 = direct delivery by route_ports[off + dst]
    int32_t* route_class   # [dst host]: its destination class
    int32_t n_route_classes
    RouteGroup* route_groups   # [(node - n_hosts) * n_route_classes + class]
    int32_t* route_ports
    int32_t* path_ports    # explicit per-flow paths (egress port per switch hop)
    int32_t n_path_ports
    int32_t* child_idx     # the dependency graph's children, flow by flow (Flow.child_off)
    NetParams p
    CCOps cc
    ack_fn on_ack          # what an ACK or NACK does at its sender, chosen with the parameters (engine.pyx):
                           #   nic_send.nic_on_ack, or with unordered delivery nic_on_unordered_ack
    int32_t entropy_state_size  # bytes of each queue pair's entropy state, after the scheme's in its
                           #   pool slot (entropy.pxd; 0 with fixed entropy)
    void* deadlock         # the deadlock detector's state (deadlock.pxd), NULL when off
    void* faults           # scheduled faults (faults.pxd), NULL when none
    void* watchdog         # the PFC watchdog's state (watchdog.pxd), NULL when off
    void* fluid            # the flow-level network (fluid.pxd), NULL in packet mode
    # a run in parts (with one part: n_parts 1, no hand-offs, node_part NULL, lookahead 0);
    # Core.run runs several in windows (window.pyx)
    Sim** parts            # every part, by index
    int32_t n_parts
    Handoff* handoff       # one record per cut port (NULL with one part)
    int32_t n_handoff
    int32_t* node_part     # each node's part, hosts first (NULL with one part)
    int64_t lookahead      # ps: the smallest delay of a cut link (0 with one part)

cdef struct Sim:
    # One part of a run (issue 20; with one part, the whole run): its own clock and seq,
    # event queue, packet and queue-pair pools, losses, roots, counters (st), RNG, PFC
    # timeline, dependency messages and error; everything else is the world it shares.
    World* w
    int64_t now
    int64_t last_work      # time of the last event that did something (not a stale timer)
    int64_t seq
    # event queue (events.pxd): the current bucket, the calendar, the far future
    EventHeap front
    bint front_sorted      # front is a run sorted latest first (its earliest event last),
                           #   not a heap (events.pxd)
    int32_t* cal_tail      # each calendar bucket's last event (its index in cal_ev), or -1: empty
    Event* cal_ev          # the calendar's events, in chunks of CAL_CHUNK (64-byte aligned)
    int32_t* cal_link      # per chunk: its bucket's chunk before it (-1: the first), or for a
                           #   free chunk, the next free one (-1: the last)
    int32_t cal_free       # the first free chunk, or -1
    int32_t cal_chunks     # chunks in cal_ev
    int32_t cal_used       # chunks in use
    uint64_t* cal_bits     # non-empty calendar buckets
    uint64_t* cal_sum      # non-empty words of cal_bits
    int64_t cal_cur        # the current bucket (time >> cal_shift)
    int32_t cal_shift      # log2 of a bucket's width in ps
    int32_t cal_n          # buckets: a power of two, 64 .. CAL_N (events.pxd)
    EventHeap later
    int64_t n_events       # pending events
    # packet pool
    Packet* pkts
    IntHop* int_hops       # MAX_INT_HOPS records per packet of the pool (NULL: INT off)
    int64_t* pkt_sack      # per packet of the pool when ACKs carry a SACK (NetParams.sack_carried,
                           #   else NULL): the seq of the data packet the ACK or NACK answers
    int32_t pool_cap
    int32_t pool_free      # the last freed packet (a chain through Packet.next), or NIL
    int32_t pool_fresh     # the first slot never used (pool.pxd)
    bint pool_mapped       # the pool is a mapping of its own (a part's, pool.pxd), not malloc'd
    int32_t pool_used
    int32_t pool_peak
    # queue-pair pool: the active flows' queue pairs, each followed by the scheme's state
    char** qp_chunks       # slots in chunks that never move (qp.pxd)
    int32_t n_qp_chunks
    int64_t qp_stride      # bytes per slot: a Qp and the scheme's state (set with the first chunk)
    int32_t qp_cap
    int32_t qp_free
    int32_t qp_used
    int32_t qp_peak
    int32_t rx_used        # receive records in use (qp.rx_open; not in qp_used / qp_peak)
    LossRec* losses        # flows done with retransmissions or timeouts (their counts)
    int64_t n_losses
    int64_t cap_losses
    # start order of this part's flows without parents (those of its hosts)
    int32_t* start_order
    int32_t n_roots
    int32_t next_root
    Stats st
    uint64_t rng
    # PFC timeline: append-only record of finished pause intervals (timeline.pxd)
    PauseRec* tl
    int64_t tl_n
    int64_t tl_cap
    int64_t tl_lost        # intervals not recorded (beyond the cap, or out of memory)
    int32_t n_monitors     # pending events of the deadlock detector and the watchdog: with no
                           #   other event left the network is frozen for good
    int32_t error          # set by a Python callback that raised: the loop stops
    int32_t part           # this part's index in w.parts
    int32_t* sent          # the cut ports whose hand-off records this part wrote in window
    int32_t n_sent         #   `sent_window`, in the order first written (room for all its
                           #   outgoing cut ports; window.pyx)
    int64_t sent_window
    DepMsg* deps           # dependency messages to other parts sent in the open window
    int64_t n_deps         #   (flows.pyx), applied at its end in (part, append order)
    int64_t cap_deps       #   (window.pyx); the buffer keeps its capacity
