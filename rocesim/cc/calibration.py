"""The flow mode's calibration per built-in scheme: what the fluid misses, measured.

The flow mode (`mode: flow`, rocesim/_core/fluid.pyx) runs data flows as fluids sharing
link capacity max-min fairly: it knows nothing of a scheme's queues, rate cuts or window
ramp-up.  Two numbers per scheme stand for what it misses (the core's `fluid_share` and
`fluid_startup_ps`): `share`, the fraction of a link's capacity the fluid flows may use
where flows arriving over two links or more meet and their demand exceeds it (the scheme's
steady-state utilisation of a shared bottleneck), and `startup_ps`, a delay
before each data flow joins the fluid (its start-up cost beyond the closed form).

They are data, `flow_calibration.json` next to this module, written by
`python validation/flow_calibration.py` from packet-level and flow-mode runs of canonical
cases (lone flows, incasts, flows sharing a bottleneck, a permutation on a fat tree), with
how they were fitted, every case's figures before and after, the rocesim version and commit
(validation/FLOW_CALIBRATION.md is the same run as tables).  Each scheme is calibrated with
its default parameters and the default NIC and switch: a scheme run with other parameters
gets the same numbers, which `flow:` in a scenario (`config.FLOW`) overrides.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache

CALIBRATION_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flow_calibration.json")
UNCALIBRATED = (1.0, 0)      # (share, startup_ps) of a scheme without an entry: the bare fluid


@lru_cache(maxsize=None)
def calibration_table() -> dict:
    """The whole calibration file (schemes, cases, how it was made), as read."""
    with open(CALIBRATION_FILE, encoding="utf-8") as f:
        return json.load(f)


def flow_calibration(scheme: str) -> tuple[float, int] | None:
    """(share, startup_ps) the flow mode uses for built-in `scheme` by default, or None when
    the calibration has no entry for it (the flow mode then uses `UNCALIBRATED`)."""
    entry = calibration_table()["schemes"].get(scheme)
    if entry is None:
        return None
    return float(entry["share"]), int(entry["startup_ps"])


def resolved(flow: dict, mode: str, scheme: str) -> dict:
    """The `flow:` section (`config.FLOW`, resolved) with its 'auto' values taken: {share,
    startup (ps), source: {share, startup}}, each value's source 'given', 'calibration' (the
    scheme's entry here) or 'none' (the scheme has no entry, or packet mode, where the values
    do nothing: the bare fluid's 1 and 0)."""
    calibrated = flow_calibration(scheme) if mode == "flow" else None
    auto = dict(zip(("share", "startup"), calibrated or UNCALIBRATED))
    out, source = {}, {}
    for key in ("share", "startup"):
        given_here = flow[key] != "auto"
        out[key] = flow[key] if given_here else auto[key]
        source[key] = "given" if given_here else "calibration" if calibrated else "none"
    return {**out, "source": source}
