# cython: language_level=3
"""A sender's receiver credits (RCCC, the Ultra Ethernet transport's receiver-driven
congestion control; rccc.pyx is the receiver's side): with `nic.rccc` on, a queue pair sends
new data only while its credit is above zero, each packet spending its payload (so the
credit may end below zero by less than a packet, as uet-htsim's, uec.cpp).  A flow starts
with `rccc_speculative` BDPs of its own path (its idle RTT x its NIC's rate; at least one
packet) and its packets say they were sent on it; its first ACK, NACK or PULL ends that
speculation and what is left of it goes (uet-htsim discards a positive rest; here any rest,
so that the bytes the receiver grants, the flow's size less what came speculatively, are
exactly what the sender still needs).  A trimmed packet's resend waits for credit and
spends it as new data does (uet-htsim's sendIfPermitted, uec.cpp: any packet needs credit
above zero); its receiver grants its bytes again (rccc.pyx).  Other retransmissions (after a
timeout or a declared loss) need no credit: the grants cover each byte once otherwise.
With a window scheme (nscc) both limits hold: the window is the smaller of the two.
Header-only: nic_send.pyx reads it per packet."""
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim, World, Qp, Packet
from rocesim._core.flows cimport flow_base_rtt


cdef inline void credit_open(Sim* s, int32_t f, Qp* fl) noexcept nogil:
    """Flow f's queue pair opens: its speculative credit."""
    cdef int32_t hops
    cdef double rtt = <double> flow_base_rtt(s, f, &hops)
    fl.speculating = 1
    fl.credit = <int64_t> (s.w.p.rccc_speculative * rtt * fl.line_rate / 8e12)
    if fl.credit < 1:
        fl.credit = 1


cdef inline bint credit_allows(World* w, Qp* fl, int64_t seq, bint trimmed) noexcept nogil:
    """Whether the byte at `seq` may go now as far as credit goes: new data and a trimmed
    packet's resend (`trimmed`) wait for credit (RCCC on), other retransmissions never do."""
    return not w.p.rccc or fl.credit > 0 or (seq < fl.snd_max and not trimmed)


cdef inline void credit_spend(World* w, Qp* fl, Packet* pk, int64_t seq, int64_t payload,
                              bint trimmed) noexcept nogil:
    """Data packet pk (`payload` bytes from `seq`) goes: new data and a trimmed packet's
    resend (`trimmed`) spend its payload of credit and say whether it went on speculative
    credit."""
    pk.spec = 0
    if w.p.rccc and (seq >= fl.snd_max or trimmed):
        fl.credit -= payload
        pk.spec = fl.speculating


cdef inline void credit_feedback(Qp* fl) noexcept nogil:
    """The sender heard from its receiver (an ACK, NACK or PULL): speculation is over."""
    if fl.speculating:
        fl.speculating = 0
        fl.credit = 0
