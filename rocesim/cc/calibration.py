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
gets the same numbers, which `flow:` in a scenario (`config.FLOW`) overrides.  They apply
where `flow.share` / `flow.startup` is 'auto'; the default is the bare fluid (1 and 0), which
validation/FLOW.md finds nearer the packet level on training traffic.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache

CALIBRATION_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flow_calibration.json")
UNCALIBRATED = (1.0, 0)      # (share, startup_ps) of the bare fluid: the default, and 'auto' without an entry


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
    """The `flow:` section (`config.FLOW`, resolved) with its words taken: {share, startup
    (ps), source: {share, startup}}, each value's source 'bare' (the default: the bare fluid's
    1 and 0), 'given' (a number), 'calibration' ('auto': the scheme's entry here) or 'none'
    ('auto' where the scheme has no entry, or in packet mode, where the values do nothing:
    1 and 0 as well)."""
    calibrated = flow_calibration(scheme) if mode == "flow" else None
    bare = dict(zip(("share", "startup"), UNCALIBRATED))
    auto = dict(zip(("share", "startup"), calibrated or UNCALIBRATED))
    out, source = {}, {}
    for key in ("share", "startup"):
        if flow[key] == "bare":
            out[key], source[key] = bare[key], "bare"
        elif flow[key] == "auto":
            out[key], source[key] = auto[key], "calibration" if calibrated else "none"
        else:
            out[key], source[key] = flow[key], "given"
    return {**out, "source": source}


def describe(fluid: dict, scheme: str) -> str:
    """`rocesim check`'s line on the fluid a flow-mode run uses: `fluid` as `resolved` returns
    it, each value with where it came from, and the scheme's calibration when it is not used."""
    said = {"bare": "the bare fluid's, the default", "given": "given",
            "calibration": f"{scheme}'s calibration", "none": f"auto: {scheme} has no calibration"}
    src = fluid["source"]
    line = (f"flow mode: flow.share {fluid['share']:g} ({said[src['share']]}), flow.startup "
            f"{fluid['startup'] / 1000:g} ns ({said[src['startup']]})")
    calibrated = flow_calibration(scheme)
    if calibrated is not None and "calibration" not in src.values():
        line += (f"; {scheme}'s calibration, `flow: {{share: auto, startup: auto}}`, is {calibrated[0]:g} / "
                 f"{calibrated[1] / 1000:g} ns (validation/FLOW.md: the bare fluid is nearer the packet level "
                 f"on training traffic)")
    return line
