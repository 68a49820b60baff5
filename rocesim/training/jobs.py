"""Several training jobs on one platform: each gets a disjoint set of GPU ranks.

`place` picks the ranks of a job of `gpus` GPUs among the ranks no other job holds,
whole servers first: `packed` takes the lowest free servers (a job's servers share rail
leaves and pods), `spread` takes free servers evenly spaced over the platform (a job's
traffic crosses more of the fabric and mixes with the other jobs'), the way a cluster
scheduler with or without topology awareness would place it.
"""
from __future__ import annotations

import numpy as np

from rocesim.errors import ScenarioError

PLACEMENTS = ("packed", "spread")


def place(platform, gpus: int, placement: str, taken: np.ndarray, key: str = "gpus") -> np.ndarray:
    """Ranks for a job of `gpus` GPUs; `taken` is a boolean mask over ranks already held."""
    if placement not in PLACEMENTS:
        raise ScenarioError(key.rsplit(".", 1)[0] + ".placement",
                            f"unknown placement {placement!r}; valid: {', '.join(PLACEMENTS)}")
    G = platform.gpus_per_server
    free = ~taken.reshape(platform.servers, G)
    whole = np.flatnonzero(free.all(axis=1))
    need = -(-gpus // G)
    if need > whole.size:
        raise ScenarioError(key, f"{gpus} GPUs need {need} free servers of {G} GPUs; "
                                 f"{whole.size} of the {platform.servers} servers are free")
    if placement == "packed":
        servers = whole[:need]
    else:
        servers = whole[np.floor(np.arange(need) * whole.size / need).astype(np.int64)]
    return (servers[:, None] * G + np.arange(G)[None, :]).ravel()[:gpus]
