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
from rocesim.units import parse_rate, parse_time

# the core's fault kinds (rocesim/_core/faults.pxd)
F_NIC_STOP, F_NIC_RESUME, F_LINK_DOWN, F_LINK_UP, F_LINK_RATE = range(5)

KEYS = {
    "nic_stop": (("kind", "host", "at"), ("for",)),
    "link_down": (("kind", "link", "at"), ("until", "reroute_after")),
    "link_rate": (("kind", "link", "at", "rate"), ()),
}

DOCS = {        # for `rocesim keys`: (key, default, meaning) per kind
    "nic_stop": [("host", "required", "the host whose NIC stops draining its receive side (it pauses its link)"),
                 ("at", "required", "when"), ("for", "forever", "how long; it resumes after")],
    "link_down": [("link", "required", "[a, b]: the nodes the link joins (both directions go down)"),
                  ("at", "required", "when"), ("until", "never", "when it comes back up"),
                  ("reroute_after", "0us", "routes are recomputed this long after each change; 'never': stale")],
    "link_rate": [("link", "required", "[a, b]: the nodes the link joins (both directions)"),
                  ("at", "required", "when"), ("rate", "required", "the new rate")],
}


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
    """One fault entry (a mapping) checked against the network's ports."""
    if not isinstance(d, dict):
        raise ScenarioError(key, f"expected a mapping with kind and at, got {d!r}")
    kind = d.get("kind")
    if kind not in KEYS:
        what = "missing (required)" if kind is None else f"unknown fault {kind!r}"
        raise ScenarioError(f"{key}.kind", f"{what}; valid kinds: {', '.join(KEYS)}")
    required, optional = KEYS[kind]
    for k in d:
        if k not in required + optional:
            raise ScenarioError(f"{key}.{k}", f"unknown key for {kind}; valid: {', '.join(required + optional)}")
    for k in required:
        if k not in d:
            raise ScenarioError(f"{key}.{k}", "missing (required)")
    f = Fault(kind=kind, at=parse_time(d["at"], f"{key}.at", bare_ok=True))
    if kind == "nic_stop":
        h = d["host"]
        if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < n_hosts:
            raise ScenarioError(f"{key}.host", f"{h!r} is not a host; hosts are 0..{n_hosts - 1}")
        f.host = h
        if d.get("for") is not None:
            dur = parse_time(d["for"], f"{key}.for", bare_ok=True)
            if dur <= 0:
                raise ScenarioError(f"{key}.for", "must be positive (leave it out: forever)")
            f.end = f.at + dur
        return f
    link = d["link"]
    if (not isinstance(link, (list, tuple)) or len(link) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in link)):
        raise ScenarioError(f"{key}.link", f"expected [a, b], two node ids, got {link!r}")
    f.link = (int(link[0]), int(link[1]))
    f.port = ports.between(*f.link)
    if f.port < 0:
        raise ScenarioError(f"{key}.link", f"nodes {link[0]} and {link[1]} are not linked")
    if kind == "link_rate":
        f.rate = parse_rate(d["rate"], f"{key}.rate", bare_ok=True)
        return f
    if d.get("until") is not None:
        f.end = parse_time(d["until"], f"{key}.until", bare_ok=True)
        if f.end <= f.at:
            raise ScenarioError(f"{key}.until", "must be after `at`")
    ra = d.get("reroute_after", 0)
    f.reroute_after = None if ra == "never" else parse_time(ra, f"{key}.reroute_after", bare_ok=True)
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
