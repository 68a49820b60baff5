"""Every setting a `Simulation` takes, declared once (`rocesim.settings`): switches, NICs,
congestion control, deadlock detection, the seed, the mode, the partition and threads, the
flow mode's calibration, NCCL's settings and the memory limit.

A scenario file's own keys (its name, stop time and outputs) are declared in
`rocesim.scenario.build`; kinds (of topology, traffic, workload format and fault) are
declared beside the code that builds each one.

The YAML scenario (`switch:`, `nic:` and `deadlock:` sections) and the Python API
(`Simulation(switch={...}, nic={...}, deadlock=...)`) resolve the same declarations,
which reject unknown keys and bad values with a `ScenarioError` naming the key path,
and `rocesim keys` prints them.  Defaults follow the HPCC ns-3 fork (the reference most
RoCE results come from), except where a comment says otherwise.
"""
from __future__ import annotations

import functools

from rocesim import lb
from rocesim.errors import ScenarioError
from rocesim.settings import (REQUIRED, Boolean, Choice, Custom, Integer, ListOf, Number, Section, Setting, Size,
                              Text, Time, Word, show, whole_number)
from rocesim.units import parse_rate, parse_size

DATA_PRIORITIES = (1, 2, 3, 4, 5, 6, 7)   # priority 0 is the strict-priority control queue
DEFAULT_FLOW_PRIORITY = 3                 # the HPCC fork's data priority group
OWN_QP = -1                               # a flow's connection label when it is its own queue pair

PRIORITY = Integer(1, 7, "a data priority 1..7 (0 is the control queue)")
PRIORITIES = ListOf(PRIORITY, "priorities 1..7", as_set=True)


def _per_rate(parse, v, key):
    """'auto', one value for every port, or {rate: value} by port rate (each value read by
    `parse`, e.g. a size)."""
    if v == "auto":
        return v
    if isinstance(v, dict):
        return {parse_rate(rate, f"{key}.{rate}"): parse(value, f"{key}.{rate}") for rate, value in v.items()}
    return parse(v, key)


PER_RATE_SIZE = Custom("'auto', a size, or {rate: size} by port rate", functools.partial(_per_rate, parse_size))
PER_RATE_PROBABILITY = Custom("'auto', a probability in [0, 1], or {rate: probability} by port rate",
                              functools.partial(_per_rate, Number(0.0, 1.0, closed=True).parse))


SWITCH = Section.of("a switch's shared buffer, PFC, ECN and lossy queues (every switch)", {
    "buffer": Setting(Size(), "32MB", "shared buffer per switch"),
    "pfc": {
        "enabled": Setting(Boolean(), True, "priority flow control (lossless) on the data priorities"),
        "priorities": Setting(PRIORITIES, DATA_PRIORITIES, "priorities that are lossless when PFC is on"),
        "threshold": Setting(Word("dynamic") | Size(), "dynamic",
                         "XOFF threshold: 'dynamic' (free buffer / 2**shift, the HPCC fork's rule; "
                         "shift 3 at host link speed, one less per doubling of port rate) or a static "
                         "size of shared buffer per (ingress port, priority)"),
        "headroom": Setting(Word("auto") | Size(), "auto",
                        "headroom per port for bytes that still arrive after XOFF; 'auto' = the larger of "
                        "3 x rate x delay (the HPCC fork's) and the worst case (3 MTU frames + the PAUSE "
                        "frames + a round trip at line rate); a size below the worst case is refused"),
        "reserve": Setting(Size(), "4KiB", "private buffer per (ingress port, priority)"),
        "resume_offset": Setting(Size(), "3KiB", "XON when shared use is this far below the threshold"),
        "bounce_priority": Setting(Word("none") | Word("next") | PRIORITY, "none",
                               "deadlock avoidance: a data packet that comes down from an upper-layer "
                               "switch and goes up again (against up-down routing: after a failure or "
                               "a stale route) moves to the 'next' priority (Tagger-style, a lossless "
                               "class per bounce) or to the priority given (a lossy one drops instead "
                               "of pausing); 'none' = off"),
        # the PFC watchdog as vendors ship it (SONiC's PFC watchdog design; Juniper's defaults:
        # polls every 100 ms, detection after 200 ms, restoration 200 ms)
        "watchdog": {
            "enabled": Setting(Boolean(), False, "the PFC watchdog on every switch port and lossless priority"),
            "poll_interval": Setting(Time(positive=True), "100ms", "time between two polls of the queues"),
            "detection_time": Setting(Time(), "200ms",
                                  "a queue paused all along with packets waiting this long is in a storm"),
            "restoration_time": Setting(Time(), "200ms",
                                    "a stormed queue is lossless again once its peer has not paused it "
                                    "for this long"),
            "action": Setting(Choice("drop", "forward"), "drop",
                          "drop: flush the queue, drop its arrivals and the peer's packets of that "
                          "priority (send it no PAUSE); forward: ignore the peer's PAUSE"),
        },
    },
    "ecn": {
        "enabled": Setting(Boolean(), True, "RED/ECN marking of data packets at egress dequeue"),
        "kmin": Setting(PER_RATE_SIZE, "auto",
                    "marking starts above this queue: a size, {rate: size}, or 'auto' "
                    "(the scheme's default; 100KB x rate/25G for most)"),
        "kmax": Setting(PER_RATE_SIZE, "auto", "marking probability reaches pmax here (above: always mark)"),
        "pmax": Setting(PER_RATE_PROBABILITY, "auto",
                    "marking probability at kmax: a probability, {rate: probability}, or 'auto' "
                    "(the scheme's; 0.2 for most)"),
        "priorities": Setting(PRIORITIES, DATA_PRIORITIES, "priorities whose packets may be marked"),
    },
    "load_balancing": Setting(Custom("a mapping: `scheme` (ecmp, flowlet, spray, adaptive), its parameters, "
                                     "`hash_seed`, `hash_qp` and `tiers` (rocesim/lb/registry.py)", lb.resolve),
                              {"scheme": "ecmp"},
                              "how a switch picks among equal-cost ports for data packets: ecmp (default, per "
                              "5-tuple hash), flowlet, spray (per packet) or adaptive (least queued bytes); per "
                              "tier with `tiers: {1: {scheme: ...}}` (1: the switches next to the hosts); "
                              "`rocesim keys` lists each scheme's parameters"),
    "lossy": {
        "dynamic": Setting(Boolean(), True, "without PFC: drop when the egress queue exceeds alpha x free buffer"),
        "alpha": Setting(Number(0.0, 1e6, closed=True), 1.0, "dynamic-threshold alpha for lossy queues"),
    },
    # packet trimming as uet-htsim's switch queue does it (compositequeue.cpp), rocesim/_core/trim.pxd
    "trimming": {
        "enabled": Setting(Boolean(), False,
                           "packet trimming (Ultra Ethernet): a data packet of a lossy priority that the buffer "
                           "would drop, or that would take its egress queue above `threshold`, goes on as its "
                           "header at `priority`; its receiver NACKs it at once and the sender sends it again "
                           "(ports.csv and flows.csv `trimmed`). For lossy fabrics: it acts on the priorities "
                           "PFC does not cover, and is refused when PFC covers every data priority"),
        "threshold": Setting(Word("auto") | Size(1), "auto",
                             "egress queue bytes (of the packet's priority) above which a data packet is "
                             "trimmed instead of queued; 'auto' = only where the buffer would drop it "
                             "(uet-htsim's trigger, compositequeue.cpp:162, whose port queue holds 1 BDP "
                             "with trimming on)"),
        "size": Setting(Size(1), "64B", "bytes of a trimmed header on the wire (uet-htsim's UEC header, "
                                        "its -trimsize default: uec.cpp:28, main_uec.cpp:81)"),
        "priority": Setting(Integer(0, 7), 0,
                            "the priority trimmed headers travel at: 0 = the strict-priority control queue "
                            "(uet-htsim serves its header queue first: compositequeue.cpp:17-18)"),
    },
})


def _power_of_two(v, key):
    value = Integer(1, 1 << 15).parse(v, key)
    if value & (value - 1):
        raise ScenarioError(key, f"expected a power of two (1, 2, 4, ... 32768), got {show(v)}")
    return value

NIC = Section.of("every NIC: packets, ACKs, loss recovery", {
    "payload": Setting(Size(1, 65536), "1000B",
                   "payload bytes per data packet (MTU payload), 1B to 64KiB"),
    "header": Setting(Size(), "48B", "header bytes of a data packet on the wire (Eth+IP+UDP+BTH)"),
    "int_header": Setting(Size(), "42B", "extra bytes on data packets when INT is on (HPCC: 5 hop slots)"),
    "ack_size": Setting(Size(), "60B", "ACK/NACK bytes on the wire (46B of headers padded to 60B)"),
    "cnp_size": Setting(Size(), "64B", "CNP bytes on the wire"),
    "pause_size": Setting(Size(), "64B", "PFC PAUSE frame bytes on the wire"),
    "ack_every": Setting(Integer(1, 255), 1, "the receiver ACKs every N in-order data packets (and the last "
                                          "byte, and at the latest ack_timeout after the first packet "
                                          "owed); the ACK echoes how many of them were ECN-marked"),
    "ack_timeout": Setting(Word("auto") | Time(), "auto",
                       "with ack_every > 1, the longest the receiver holds an ACK it owes (a coalescing "
                       "timer from the first packet the ACK covers): a sender whose window holds fewer "
                       "than ack_every packets gets its ACK then; 'auto' = the time ack_every full "
                       "data packets take on the receiver's link, so a flow arriving at line rate is "
                       "still ACKed every ack_every packets (RoCE requesters ask for an ACK with the "
                       "AckReq bit and responders answer at once: no ACK waits longer than that); 0us = "
                       "no timer (the HPCC fork's receiver: such a window then stalls for good)"),
    "ack_high_priority": Setting(Boolean(), False,
                             "true: ACK/NACK/CNP in strict-priority queue 0 (never paused); false "
                             "(default): in the flow's data priority, as at the HPCC fork's switches"),
    "cnp_interval": Setting(Time(), "50us", "at most one CNP per flow per interval (DCQCN NP)"),
    "nack_interval": Setting(Time(), "500us", "at most one NACK per flow per interval for the same gap"),
    "rto": Setting(Word("auto") | Time(), "auto",
               "retransmission timeout: no ACK progress for this long; 'auto' = none for flows on "
               "lossless (PFC) priorities, as the HPCC fork has none (a timeout firing during a long "
               "pause would turn a deadlock into retransmissions), 1ms on lossy ones, and 1ms on every "
               "priority when load balancing or the senders' entropy spreads a connection over several "
               "paths into ordered receivers (go-back-N discards reordered packets: without a timeout "
               "a flow whose last NACK the receiver held back waits for good); a time applies to every "
               "flow; 0 turns it off"),
    "loss_recovery": Setting(Choice("go_back_n", "selective_repeat"), "go_back_n",
                         "with ordered delivery: go-back-N (RoCE NICs) or IRN-style selective repeat "
                         "for lossy RoCE"),
    "delivery": Setting(Choice("ordered", "unordered"), "ordered",
                    "'ordered': the receiver takes data in order, as RoCE NICs do (out-of-order data "
                    "is NACKed as loss_recovery says: spraying a flow's packets over paths makes NACK "
                    "storms); 'unordered': direct data placement (NVIDIA's adaptive-routing NICs, "
                    "UET's reliable unordered delivery): a packet is placed on arrival, ACKs carry "
                    "the cumulative point and SACK what arrived beyond it, the sender retransmits a "
                    "hole once reorder_threshold packets above it are SACKed, or at the timeout; no "
                    "NACK (loss_recovery is not used)"),
    "reorder_threshold": Setting(Integer(0, 2**31 - 1), 3,
                             "with unordered delivery: a hole is declared lost, and sent again, once "
                             "this many packets above it were SACKed (TCP's dupthresh, RFC 6675); deeper "
                             "reordering makes spurious retransmissions (flows.csv spurious_retx_bytes); "
                             "0 = only the retransmission timeout declares losses"),
    "ttl": Setting(Integer(1, 255), 64, "hop limit of every packet (a routing loop without PFC ends)"),
    "udp_source_port": Setting(Choice("per_qp", "fixed"), "per_qp",
                           "the RoCEv2 UDP source port of a connection's queue pairs, which ECMP hashes: "
                           "'per_qp' (ConnectX derives it from the queue pair: each queue pair its own "
                           "5-tuple and path) or 'fixed' (one per host pair: the queue pairs between two "
                           "hosts share a 5-tuple, unless switch.load_balancing.hash_qp); applies to flows "
                           "on a connection (a flow without one keeps its own hash, as the HPCC fork's)"),
    "entropy_every": Setting(Word("none") | Integer(1, 1 << 30), "none",
                             "sender-side entropy (multipath RoCE): a new UDP source port every N data packets "
                             "of a queue pair, so that hashing switches spread them (1: every packet); none: "
                             "the queue pair's own port on every packet"),
    # receiver credits, UET's RCCC, as uet-htsim models it (htsim/sim/uec.cpp, datacenter/main_uec.cpp)
    "rccc": Setting(Boolean(), False,
                    "receiver credits (the Ultra Ethernet transport's RCCC): each receiver grants the flows "
                    "towards it credit, rccc_credit bytes at a time, round-robin, paced at rccc_pace of its link "
                    "rate, so each of N senders gets 1/N of it; a sender sends new data only on credit (with a "
                    "window scheme such as nscc, the smaller of the two limits), starting with rccc_speculative "
                    "BDPs of its own until its first ACK, NACK or grant; retransmissions need none. In flow mode the "
                    "fluid's max-min shares stand for it (each of N senders 1/N of the receiver's link)"),
    "rccc_credit": Setting(Size(1), "16384B",
                           "bytes per grant (uet-htsim uec.cpp: 4 x its default 4096 B MSS, whatever the MTU)"),
    "rccc_pace": Setting(Number(0.0, 1.0), 0.99,
                         "grants paced at this fraction of the receiver's link rate (uet-htsim main_uec.cpp: 0.99)"),
    "rccc_speculative": Setting(Number(0.0, 1e6, closed=True), 1.5,
                                "credit a flow starts with, in BDPs of its path (its idle RTT x its NIC's rate; "
                                "uet-htsim uec.cpp: its configured max window, 1.5 BDP of the network's RTT)"),
    "entropy": Setting(Choice("fixed", "oblivious", "reps"), "fixed",
                       "the entropy (UDP source port) each data packet carries for ECMP switches to hash: "
                       "'fixed' = the queue pair's own (with entropy_every's changes); 'oblivious' = each "
                       "packet the next of a block of entropy_values values in a random order, so ECMP "
                       "sprays (uet-htsim's oblivious, uec_mp.cpp:30-44); 'reps' = REPS: values whose "
                       "packets' ACKs came back without ECN are reused, each once, from a ring of 8, marked "
                       "or trimmed ones dropped, random ones otherwise (uet-htsim's UecMpReps and "
                       "CircularBufferREPS: uec_mp.cpp:137-196, buffer_reps.cpp:5-8)"),
    "entropy_values": Setting(Custom("a power of two, 1 to 32768", _power_of_two), 64,
                              "with entropy oblivious or reps: the values a queue pair draws from (uet-htsim's "
                              "-paths, 64 by default: main_uec.cpp:75)"),
    "serialization": Setting(Choice("exact", "whole_ns"), "exact",
                         "time a frame takes on a wire (every port) and between two packets a NIC "
                         "paces: 'exact' (bytes x 8 / rate, to the ps); 'whole_ns' rounds it down to "
                         "whole nanoseconds, as ns-3 with its 1 ns time step does (the HPCC fork's "
                         "runs: a 1048 B frame takes 83 ns at 100 Gb/s instead of 83.84, 20 ns at "
                         "400 Gb/s instead of 20.96): for comparison with such runs only, since every "
                         "link then beats its rate by up to 1 ns per frame"),
})


DEADLOCK = Section.of("PFC deadlock detection in the core (off unless a `deadlock:` section is given)", {
    "enabled": Setting(Boolean(), False, "check for PFC deadlocks while the run goes (true as soon as a "
                                   "`deadlock:` section is given; `deadlock: true` takes the defaults)"),
    "interval": Setting(Time(positive=True), "100us", "time between two checks of the wait-for graph"),
    "threshold": Setting(Time(), "1ms", "a cycle is a deadlock when all its queues have been paused "
                                        "continuously for this long (transient pauses are not)"),
    "stop": Setting(Boolean(), False, "end the run at the first deadlock found"),
})


def resolve_deadlock(given, where="deadlock") -> dict:
    """The `deadlock:` section: true/false, or a mapping of DEADLOCK keys (on unless
    `enabled: false`)."""
    if given is None or isinstance(given, bool):
        return DEADLOCK.resolve({"enabled": bool(given)}, where)
    if isinstance(given, dict) and "enabled" not in given:
        given = {**given, "enabled": True}
    return DEADLOCK.resolve(given, where)


SEED = Setting(Integer(0, 2**63 - 1), 1, "seeds ECMP hashing, ECN marking and the traffic's random draws: the "
                                         "same seed gives the same run, bit for bit")


# What `partition: auto` runs at: a ToR with its servers per part, every other switch alone,
# the level measured best (docs/parallel_core.md, sections 9 and 13: 1.8-2.0x on 2 threads
# on the k=16 permutation, the fork's 320-host run and gpt_1024, where `pods` gains nothing
# on rail-optimized fabrics).  Flow mode runs in one part.  The one place to change it.
AUTO_PARTITION = "leaves"

PARTITION = Setting(Choice("auto", "none", "leaves", "pods"), "auto",
                    "how the packet core cuts the network into parts that run in windows of the lookahead "
                    "(the smallest delay of a link between two parts), on `threads` threads: 'none' (one "
                    "part: the engine as always), 'leaves' (a ToR with its servers per part, every other "
                    "switch alone), 'pods' (a pod with its servers per part); 'auto' = "
                    f"{AUTO_PARTITION!r} in packet mode, one part in flow mode. The results depend on the partition (a dependency "
                    "between parts takes effect at least a lookahead after its parent; the parts' own "
                    "random streams), never on the threads; summary.json records it (`rocesim check` "
                    "prints the parts)")


def _threads(v, key):
    """'auto' or a whole number >= 1 (0, 1.5, true and words are refused, never rounded)."""
    if isinstance(v, str) and v == "auto":
        return v
    if not whole_number(v) or v < 1:
        raise ScenarioError(key, f"expected 'auto' or a whole number >= 1, got {show(v)}")
    return int(v)


THREADS = Setting(Custom("'auto' or a whole number >= 1", _threads), "auto",
                  "threads that run the parts of a run (at most one per part; a scheme written in "
                  "Python runs on 1): the outputs are the same for any number, only the wall time "
                  "changes; 'auto' = the cores this process may use (a sweep runs each run on 1 unless "
                  "its file sets `threads`)")


# What the flow mode cannot express, by the key that asks for it, and why: `mode: flow`
# with any of these is refused at `check` (and by `Simulation`), never silently ignored.
# (rocesim has no per-link loss or error rate to refuse: a SimAI or HPCC topology file's
# error_rate must already be 0.)  Packet settings with nothing to act on in flow mode
# (switch buffers, PFC and ECN thresholds, NIC payload and ACKs, a built-in scheme's
# parameters) are accepted and have no effect, so one base scenario runs in both modes.
FLOW_MODE_REFUSES = {
    "cc.scheme": "a congestion-control scheme written in Python reacts to packets (ACKs, CNPs, "
                 "timers) and flows in flow mode send none",
    "deadlock": "deadlock detection looks for cycles of PFC pauses, and flows in flow mode are "
                "never paused (no queues, no PFC)",
    "switch.pfc.watchdog.enabled": "the PFC watchdog watches paused queues, and flow mode has "
                                   "no queues and no PFC",
    "faults": "faults act on packets in flight and queued, and on routes in the middle of a run; "
              "flow mode has no packets and keeps every flow on its path",
    "output.sample_interval": "sampling reads switch queues and senders' packet rates, and flow "
                              "mode has no queues",
    "switch.trimming.enabled": "trimming cuts packets in switch queues, and flow mode has neither; its "
                               "fluid would lose nothing where trimming retransmits",
}


def check_nic_switch(nic: dict, switch: dict) -> None:
    """What the resolved `nic` and `switch` sections refuse together: trimming with no lossy
    data priority to act on, and entropy_every beside an entropy other than fixed."""
    pfc = switch["pfc"]
    if switch["trimming"]["enabled"] and pfc["enabled"] and set(DATA_PRIORITIES) <= set(pfc["priorities"]):
        raise ScenarioError("switch.trimming.enabled",
                            "trimming is for lossy fabrics, and PFC makes every data priority lossless "
                            "(nothing is ever dropped, so nothing would be trimmed): set switch.pfc.enabled: "
                            "false, or leave the flows' priorities out of switch.pfc.priorities")
    if nic["entropy"] != "fixed" and nic["entropy_every"] != "none":
        raise ScenarioError("nic.entropy_every", f"changes the entropy of nic.entropy: fixed only, and "
                                                 f"nic.entropy is {nic['entropy']!r}")

MODE = Setting(Choice("packet", "flow"), "packet",
               "packet: every data packet, ACK, CNP and PFC frame is simulated (queues, ECN, PFC, "
               "congestion control); flow: each network flow is a fluid sharing link capacity "
               "max-min fairly with the others, its rate recomputed when a flow starts or ends "
               "(compute steps, dependencies, collectives and workloads are the same; "
               "no queues, so no packet counters: OUTPUTS.md says which outputs are empty). "
               "Refused with flow (they act on packets, queues or PFC; `rocesim check` says why): "
               + ", ".join(FLOW_MODE_REFUSES) + " (cc.scheme: one written in Python)")


# The default is the bare fluid, not each scheme's calibration: on the training traffic of
# validation/FLOW.md (its platform and training rows) the bare fluid is within 5% of the packet
# level on more rows (33 of 72 against 31; the training rows alone: 6 of 28 each, the bare
# fluid nearer on 14 of them, the calibrated one on 9)
FLOW = Section(
    "flow mode's calibration: what the fluid misses of the schemes' packet-level behaviour "
    "(mode: flow only; ignored in packet mode)",
    share=Setting(Word("bare") | Word("auto") | Number(0.0, 1.0), "bare",
                  "the fraction of a link's capacity the fluid flows may use where flows arriving over "
                  "two links or more meet and their demand exceeds it (the steady-state utilisation "
                  "the scheme reaches at the packet level); 'bare' = 1, the bare max-min fluid (nearer "
                  "the packet level on training traffic: validation/FLOW.md); 'auto' = the scheme's "
                  "calibration (rocesim/cc/flow_calibration.json, made by validation/flow_calibration.py; "
                  "1 for a scheme it has no entry for)"),
    startup=Setting(Word("bare") | Word("auto") | Time(), "bare",
                    "the delay before each data flow joins the fluid (the start-up cost the scheme shows at "
                    "the packet level beyond the closed form); 'bare' = 0; 'auto' = the scheme's "
                    "calibration (0 for a scheme it has no entry for)"),
)


def refuse_in_flow_mode(mode: str, key: str, given: str) -> None:
    """When `mode` is flow, raise the ScenarioError of FLOW_MODE_REFUSES for `key` (or for
    the list `key` is an entry of: faults[0]); `given` says what the user asked."""
    if mode == "flow":
        raise ScenarioError(key, f"{given}, which mode: flow refuses: {FLOW_MODE_REFUSES[key.split('[')[0]]}; "
                                 f"use mode: packet")


NCCL_MAXCHANNELS = 64                   # NCCL's src/include/device.h: MAXCHANNELS

NCCL = Section(
    "how NCCL runs collectives (the nccl_ring algorithm): channels, buffer, per-step latency, connections "
    "and their queue pairs",
    channels=Setting(Word("auto") | Integer(1, NCCL_MAXCHANNELS), "auto",
                     "channels (rings) per communicator; 'auto' = as NCCL picks: 4 per NIC the communicator's "
                     f"GPUs of a server use (at most {NCCL_MAXCHANNELS}), fewer for small messages (NCCL_MIN/MAX_NCHANNELS)"),
    buffer=Setting(Size(64 * 1024, 1 << 30), "4MiB",
                   "NCCL_BUFFSIZE of the Simple protocol: a ring step moves buffer / 8 x 4 bytes (a chunk) per "
                   "rank and loop, in two slices"),
    step_latency=Setting(Time(), "1us", "software latency before each slice is sent (NCCL's per-step "
                                        "synchronisation; SimAI's per-flow send latency AS_SEND_LAT is 6us by default)"),
    min_message=Setting(Size(), "0B", "a slice smaller than this is sent as this many bytes (SimAI: 4096B)"),
    qps_per_connection=Setting(Integer(1, 128), 1, "NCCL_IB_QPS_PER_CONNECTION: queue pairs per connection "
                                                   "between servers, over which the nccl_ring slices are spread "
                                                   "(qp_spread; the other algorithms use one)"),
    qp_spread=Setting(Choice("split", "round_robin"), "split",
                      "how nccl_ring spreads a connection's slices over its queue pairs: 'split' (each slice cut "
                      "into equal parts, one per queue pair: NCCL_IB_SPLIT_DATA_ON_QPS=1) or 'round_robin' (whole "
                      "slices on the queue pairs in turn, as Meta runs it: NCCL_IB_SPLIT_DATA_ON_QPS=0); the "
                      "streams of pipeline: stream give each queue pair an equal part either way"),
    connections=Setting(Choice("per_flow", "persistent"), "persistent",
                        "the queue pairs collectives and workloads ride: 'persistent' (the default, NCCL's: a "
                        "connection per communicator, channel and peer pair, set up once, with "
                        "qps_per_connection queue pairs, each a 5-tuple that keeps its ECMP path across slices, "
                        "collectives and iterations, so a collision lasts the job's life; a communicator is a "
                        "job's rank group for an algorithm) or 'per_flow' (each flow its own queue pair, hashed "
                        "from its id: every slice draws a new path, as SimAI's ns-3 front end does and as rocesim "
                        "did before connections)"),
    pipeline=Setting(Choice("auto", "slices", "stream"), "auto",
                     "how a ring collective's pipeline is built: 'slices' (NCCL's loops, steps and slices, each "
                     "waiting for what it needs), 'stream' (each hop of each channel one transfer of all its bytes, "
                     "the steps' synchronisation added in closed form: far fewer nodes); 'auto' = slices at the "
                     "packet level, stream in flow mode"),
    max_transfers=Setting(Integer(1000), 1_000_000,
                          "the most slices (transfers) one collective is cut into: above it, NCCL's duplicate "
                          "channels of a NIC merge into one and slices and chunks grow (fewer, larger flows: the "
                          "same bytes on the same NICs and rings, a coarser pipeline), so that 1024-GPU jobs fit"),
)


# What each `transport:` selects, as key paths of the sections it fills (cc, nic, switch):
# each a default under the scenario's own keys, which win.  One line per part (issue 32);
# the parts still to come add theirs here as they land, e.g. "nic.delivery": "unordered",
# "nic.entropy": "reps", "switch.trimming.enabled": True and "switch.pfc.enabled": False
# (lossy switches, once trimming recovers what they drop).
TRANSPORTS = {
    "roce": {},                          # today's defaults: every setting as declared
    "uet": {                             # the Ultra Ethernet transport (UET 1.0)
        "cc.scheme": "nscc",
        "nic.rccc": True,
        "nic.entropy": "reps",               # packets sprayed over entropies, REPS recycling them
        "nic.delivery": "unordered",         # reliable unordered delivery: each packet placed on arrival
        "nic.reorder_threshold": 0,          # loss known by trims and timeouts only, not by reordering
        "nic.ack_high_priority": True,       # ACKs ahead of data (a lossy fabric would drop them)
        "switch.pfc.enabled": False,         # a lossy fabric ...
        "switch.trimming.enabled": True,     # ... whose switches trim what they would drop
    },
}
TRANSPORT_SECTIONS = ("cc", "nic", "switch")

TRANSPORT = Setting(Choice(*TRANSPORTS), "roce",
                    "a set of congestion control, NIC and switch settings chosen together, each a default the "
                    "scenario's own keys override: 'roce' (the settings as declared) or 'uet' (the Ultra "
                    "Ethernet transport: " + ", ".join(f"{k}: {v}" for k, v in TRANSPORTS["uet"].items()) + ")")


def transport_sections(transport: str, given: dict, key: str = "transport") -> dict:
    """The sections `given` ({"cc": ..., "nic": ..., "switch": ...}, each a mapping or None as a
    scenario or `Simulation` gives it) with transport `transport`'s settings (`TRANSPORTS`) filled
    in where they leave them out; before validation, which then sees one scenario."""
    name = TRANSPORT.parse(transport, key)
    out = dict(given)
    for path, value in TRANSPORTS[name].items():
        section, *keys = path.split(".")
        out[section] = _with_default(out.get(section), keys, value)
    return out


def _with_default(node, keys: list, value):
    """A copy of mapping `node` (None: empty) with `value` at `keys` unless set; a node that is
    not a mapping is left for validation to refuse."""
    if node is None:
        node = {}
    if not isinstance(node, dict):
        return node
    head, rest = keys[0], keys[1:]
    if not rest:
        return node if head in node else {**node, head: value}
    return {**node, head: _with_default(node.get(head), rest, value)}


LIMITS = Section("limits checked before anything is built",
                 memory=Setting(Size(1), None, "the most memory the topology and flows may need, estimated before "
                                               "building (default: 75% of this machine's memory)"))
CC = Section("congestion control",
             scheme=Setting(Text("a scheme name"), REQUIRED, "the scheme (none when `cc:` is left out): a built-in one (`rocesim schemes` lists them and their "
                                            "parameters) or package.module:Class, a scheme written in Python"),
             params=Setting(Custom("a mapping of the scheme's parameters (`rocesim schemes NAME`)"), None,
                            "the scheme's parameters, by the paper's symbols"))
