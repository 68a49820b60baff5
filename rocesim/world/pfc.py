"""PFC's physics per port: the headroom a lossless priority needs, the headroom each port
gets, the dynamic threshold's shift, and the check that a switch's buffer holds them."""
from __future__ import annotations

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.units import format_size


def frame_bytes(nic: dict, int_on: bool) -> int:
    """The largest data frame on the wire: payload, headers and, with INT on, its header."""
    return nic["payload"] + nic["header"] + (nic["int_header"] if int_on else 0)


def headroom_needed(ports, nic: dict, int_on: bool, n_lossless: int) -> np.ndarray:
    """Per port: the most bytes that can still arrive on one lossless priority after the
    switch decides XOFF for it (numpy int64; what `headroom: auto` guarantees).

    Store-and-forward, the decision is taken when a packet has fully arrived, and that
    packet may itself land in headroom (one frame).  The PAUSE then waits for the frame
    the port is transmitting (one frame at the port's rate) and for PAUSE frames of the
    other lossless priorities, is serialized, and crosses the wire; meanwhile the peer
    keeps sending at its rate, and the bytes it sent are still on the wire coming back
    (a round trip of propagation); when the PAUSE arrives the peer finishes the frame it
    has started (one frame).  So, with r_in the peer's rate and r_out this port's:

        frame + r_in x (frame / r_out + n_lossless x pause / r_out + d_out + d_in) + frame

    (the accounting of IEEE 802.1Qbb's delay-value annex and of vendors' headroom
    calculators, e.g. Cisco's "PFC headroom" and SONiC's buffer calculation: MTU terms
    for the frames in progress at both ends plus the cable's round trip).
    """
    frame = frame_bytes(nic, int_on)
    r_out = ports.rate_bps.astype(np.float64)
    r_in = ports.rate_bps[ports.peer].astype(np.float64)
    rtt_ps = (ports.delay_ps + ports.delay_ps[ports.peer]).astype(np.float64)
    waiting = (frame + n_lossless * nic["pause_size"]) * r_in / r_out      # bytes at r_in
    # + 1 byte per term that tx_time rounds up (three serializations: a few ps each)
    need = 2 * frame + np.ceil(waiting + r_in * rtt_ps / 8e12) + 3
    return need.astype(np.int64)


def port_headroom(ports, pfc: dict, need: np.ndarray, n_hosts: int) -> np.ndarray:
    """Each port's headroom (int64 bytes): with `headroom: auto` the HPCC fork's 3 x rate x
    delay, raised to `need` where that is short (short links: 3 x rate x delay forgets the
    frames in progress); a size given is refused where a switch port needs more."""
    if pfc["headroom"] == "auto":
        # (in floating point: rate x delay in bit-picoseconds overflows int64 at 400G x 10us)
        fork = np.floor(3.0 * ports.rate_bps * ports.delay_ps / 8e12).astype(np.int64)
        return np.maximum(fork, need)
    headroom = np.full(len(ports.node), pfc["headroom"], np.int64)
    short = np.flatnonzero((headroom < need) & (ports.node >= n_hosts))
    if pfc["enabled"] and short.size:
        i = int(short[np.argmax(need[short])])
        raise ScenarioError(
            "switch.pfc.headroom",
            f"{format_size(int(headroom[i]))} cannot hold what may still arrive after a PAUSE "
            f"is decided on the port of switch {int(ports.node[i])} towards node "
            f"{int(ports.peer_node[i])} ({format_size(int(need[i]))}: three frames, the PAUSE "
            "frames and a round trip at line rate); raise it or use 'auto'")
    return headroom


def port_arrays(ports, switch: dict, nic: dict, int_on: bool, n_hosts: int, n_switches: int) -> dict:
    """Each port's headroom and dynamic-threshold shift, as the core takes them; a lossless
    switch's buffer checked against them."""
    need = headroom_needed(ports, nic, int_on, len(switch["pfc"]["priorities"]))
    headroom = port_headroom(ports, switch["pfc"], need, n_hosts)
    if switch["pfc"]["enabled"]:
        check_buffer(ports, headroom, switch, n_hosts, n_switches)
    host_rate = int(ports.rate_bps[ports.host_port].min())
    return dict(port_headroom=headroom.astype(np.int64), port_pfc_shift=threshold_shift(ports, host_rate))


def threshold_shift(ports, host_rate: int) -> np.ndarray:
    """The dynamic XOFF threshold's shift per port: 3 at host speed, one less per doubling
    above it (HPCC fork third.cc: alpha 1/8 at NIC rate, doubling with each doubling of
    rate; the fork halves the rate until it is at most the host's: ceil of log2 of the ratio)."""
    doublings = np.ceil(np.log2(np.maximum(ports.rate_bps / host_rate, 1.0)) - 1e-9)
    return np.maximum(3 - doublings, 0).astype(np.int32)


def check_buffer(ports, headroom: np.ndarray, switch: dict, n_hosts: int, n_switches: int) -> None:
    """A lossless switch must hold every port's headroom and reserve, with room to spare."""
    on_switch = ports.node >= n_hosts
    need = np.bincount(ports.node[on_switch] - n_hosts, weights=headroom[on_switch], minlength=n_switches)
    need += np.bincount(ports.node[on_switch] - n_hosts, minlength=n_switches) * switch["pfc"]["reserve"]
    worst = int(np.argmax(need)) if need.size else 0
    if need.size and need[worst] >= switch["buffer"]:
        raise ScenarioError(
            "switch.buffer", f"{format_size(switch['buffer'])} cannot hold the PFC headroom and "
            f"reserve of switch {n_hosts + worst} ({format_size(int(need[worst]))}); raise the buffer or "
            "lower switch.pfc.headroom")
