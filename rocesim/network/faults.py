"""Faults scheduled in a scenario: checked here, applied by the core (rocesim/_core/faults.pyx).

    faults:
      - {kind: nic_stop, host: 3, at: 100us, for: 1ms}       # `for` left out: forever
      - {kind: link_down, link: [9, 12], at: 200us, until: 1ms, reroute_after: 0us}
      - {kind: link_rate, link: [9, 12], at: 300us, rate: 25Gbps}

* `nic_stop`: the host's NIC stops draining its receive side: it pauses every lossless
  priority of its link until it resumes (the PFC storm of Guo et al., SIGCOMM 2016).
* `link_down`: both directions of the link between nodes a and b go down at `at` (and
  come back at `until`, if given); packets on it and queued for it are lost.  Routes are
  recomputed `reroute_after` the change (default 0us: at once, as converged ECMP;
  `never`: the tables stay stale).  Explicit `routes` overrides and flow `path`s are
  static: they are never rerouted.
* `link_rate`: both directions of the link run at `rate` from `at` on.

Every fault appears in faults.csv and in summary.json (`faults`) with its times.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.settings import REQUIRED, Custom, Kinds, Rate, Section, Setting, Time, Word, show

# the core's fault kinds (rocesim/_core/faults.pxd)
F_NIC_STOP, F_NIC_RESUME, F_LINK_DOWN, F_LINK_UP, F_LINK_RATE = range(5)

AT = Setting(Time(bare_ok=True), REQUIRED, "when it happens")
LINK = Setting(Custom("[a, b]: the two nodes a link joins"), REQUIRED, "the link (both directions)")

FAULTS = Kinds(
    "fault",
    "faults scheduled in the run (times as `1us`, or picoseconds from the Python API)",
    nic_stop=Section("the host's NIC stops draining its receive side: it pauses its link (a PFC storm)",
                     host=Setting(Custom("a host id"), REQUIRED, "the host"), at=AT,
                     **{"for": Setting(Time(positive=True, bare_ok=True), None,
                                       "how long before it resumes (default: forever)")}),
    link_down=Section("both directions of a link go down; packets on it and queued for it are lost",
                      link=LINK, at=AT, until=Setting(Time(bare_ok=True), None, "when it comes back (default never)"),
                      reroute_after=Setting(Word("never") | Time(bare_ok=True), "0us",
                                            "routes are recomputed this long after each change; 'never': stale")),
    link_rate=Section("both directions of a link run at a new rate", link=LINK, at=AT,
                      rate=Setting(Rate(bare_ok=True), REQUIRED, "the new rate")),
)


@dataclass
class Fault:
    kind: str
    at: int                       # ps
    end: int | None = None        # ps: nic_stop's end, link_down's until
    host: int | None = None
    link: tuple | None = None     # (a, b) node ids
    port: int | None = None       # the port at a towards b
    rate: int | None = None
    reroute_after: int | None = 0  # ps; None: never

    def record(self) -> dict:
        """For summary.json and faults.csv."""
        target = f"host {self.host}" if self.host is not None else f"{self.link[0]}-{self.link[1]}"
        detail = ""
        if self.kind == "link_rate":
            detail = f"rate {self.rate} bps"
        elif self.kind == "link_down":
            detail = "never rerouted" if self.reroute_after is None else \
                f"rerouted {self.reroute_after / 1000:g} ns after each change"
        return dict(kind=self.kind, at_ns=self.at / 1000, end_ns=None if self.end is None else self.end / 1000,
                    target=target, detail=detail)


def parse(d, key, ports, n_hosts) -> Fault:
    """One fault entry (a mapping, checked against FAULTS) on the network's ports."""
    kind, v = FAULTS.resolve(d, key)
    f = Fault(kind=kind, at=v["at"])
    if kind == "nic_stop":
        h = v["host"]
        if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < n_hosts:
            raise ScenarioError(f"{key}.host", f"{show(h)} is not a host; hosts are 0..{n_hosts - 1}")
        f.host = h
        if v["for"] is not None:
            f.end = f.at + v["for"]
        return f
    link = v["link"]
    if (not isinstance(link, (list, tuple)) or len(link) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in link)):
        raise ScenarioError(f"{key}.link", f"expected [a, b], two node ids, got {show(link)}")
    f.link = (int(link[0]), int(link[1]))
    f.port = ports.between(*f.link)
    if f.port < 0:
        raise ScenarioError(f"{key}.link", f"nodes {link[0]} and {link[1]} are not linked")
    if kind == "link_rate":
        f.rate = v["rate"]
        return f
    if v["until"] is not None:
        f.end = v["until"]
        if f.end <= f.at:
            raise ScenarioError(f"{key}.until", "must be after `at`")
    f.reroute_after = None if v["reroute_after"] == "never" else v["reroute_after"]
    return f


def core_schedule(faults, nic_room) -> tuple:
    """Arrays (time, kind, target, value) of the core's fault events; `nic_room[host]` is
    what a stopped NIC's buffer still takes in (its link's headroom)."""
    rows = []
    for f in faults:
        if f.kind == "nic_stop":
            rows.append((f.at, F_NIC_STOP, f.host, int(nic_room[f.host])))
            if f.end is not None:
                rows.append((f.end, F_NIC_RESUME, f.host, 0))
        elif f.kind == "link_down":
            rows.append((f.at, F_LINK_DOWN, f.port, 0))
            if f.end is not None:
                rows.append((f.end, F_LINK_UP, f.port, 0))
        else:
            rows.append((f.at, F_LINK_RATE, f.port, f.rate))
    rows.sort(key=lambda r: r[0])           # stable: equal times keep the scenario's order
    cols = list(zip(*rows)) if rows else [(), (), (), ()]
    return tuple(np.asarray(c, dt) for c, dt in zip(cols, (np.int64, np.int32, np.int32, np.int64)))


def route_updates(faults, ports) -> list[tuple[int, np.ndarray]]:
    """(time, alive ports) at which the routing tables change: a link counts as down for
    routing from `at + reroute_after` until `until + reroute_after`."""
    known = []
    for f in faults:
        if f.kind == "link_down" and f.reroute_after is not None:
            end = None if f.end is None else f.end + f.reroute_after
            known.append((f.at + f.reroute_after, end, f.port))
    times = sorted({t for a, b, _ in known for t in (a, b) if t is not None})
    out = []
    for t in times:
        alive = np.ones(len(ports.node), bool)
        for a, b, port in known:
            if a <= t and (b is None or t < b):
                alive[port] = alive[ports.peer[port]] = False
        out.append((t, alive))
    return out
