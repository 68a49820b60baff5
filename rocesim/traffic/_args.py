"""Argument checks shared by the traffic generators."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import ScenarioError

MAX_PRIO = 7


def host_ids(hosts: int | object, key: str, minimum: int = 1) -> np.ndarray:
    """Host ids from a count ``n`` (hosts ``0 .. n-1``) or a sequence of distinct ids."""
    if isinstance(hosts, numbers.Integral) and not isinstance(hosts, bool):
        ids = np.arange(int(hosts), dtype=np.int32)
    else:
        array = np.asarray(hosts)
        if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
            raise ScenarioError(key, f"expected a host count or a list of host ids, got {hosts!r}")
        ids = array.astype(np.int32)
        if ids.size and ids.min() < 0:
            raise ScenarioError(key, f"host ids must not be negative, got {int(ids.min())}")
        values, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            raise ScenarioError(key, f"host {int(values[counts > 1][0])} is listed more than once")
    if ids.size < minimum:
        raise ScenarioError(key, f"needs at least {minimum} host(s), got {ids.size}")
    return ids


def host_id(value: object, key: str) -> int:
    """A single non-negative host id."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
        raise ScenarioError(key, f"expected a host id (a non-negative integer), got {value!r}")
    return int(value)


def priority(value: object, key: str) -> int:
    """An 802.1p priority, 0 .. 7."""
    if (
        not isinstance(value, numbers.Integral)
        or isinstance(value, bool)
        or not 0 <= value <= MAX_PRIO
    ):
        raise ScenarioError(key, f"priority must be an integer 0..{MAX_PRIO}, got {value!r}")
    return int(value)


def positive_number(value: object, key: str) -> float:
    """A finite number greater than zero, such as a load."""
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ScenarioError(key, f"expected a positive number, got {value!r}")
    return float(value)
