"""RED/ECN marking per port: Kmin, Kmax and Pmax from the `switch.ecn` settings, each a
value for every port, a value per link rate, or 'auto' (the congestion-control scheme's
thresholds for the port's rate)."""
from __future__ import annotations

import numpy as np

from rocesim.errors import ScenarioError


def port_arrays(ports, ecn: dict, scheme, cc_params: dict) -> dict:
    """kmin, kmax (bytes) and pmax per port, as the core takes them; `scheme` (a
    `rocesim.cc.Scheme`) gives the 'auto' ones for a port's rate."""
    rates = ports.rate_bps
    n = len(rates)
    kmin, kmax, pmax = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.float64)
    for i, r in enumerate(rates):
        dmin, dmax, dp = scheme.ecn_defaults(int(r), cc_params)
        kmin[i] = _per_rate(ecn["kmin"], int(r), dmin, "switch.ecn.kmin")
        kmax[i] = _per_rate(ecn["kmax"], int(r), dmax, "switch.ecn.kmax")
        pmax[i] = _per_rate(ecn["pmax"], int(r), dp, "switch.ecn.pmax")
    if np.any(kmax < kmin):
        raise ScenarioError("switch.ecn.kmax", "must not be below kmin")
    return dict(port_kmin=kmin, port_kmax=kmax, port_pmax=pmax)


def _per_rate(value, rate: int, default, key: str):
    """A per-rate setting's value for ports of `rate` bps: 'auto' -> `default`, a mapping by
    rate, or one value for every port."""
    if value == "auto":
        return default
    if isinstance(value, dict):
        if rate not in value:
            raise ScenarioError(key, f"no value for ports of rate {rate} bps; give one per link rate")
        return value[rate]
    return value
