"""ASTRA-sim's ring (all-reduce, reduce-scatter, all-gather, all-to-all), with its system
layer's chunks: what ASTRA-sim 2.0 runs for an implementation ``ring`` of its system file.

ASTRA-sim (astra-sim/system/Sys.cc `generate_collective`, collective_algorithm/Ring.cc,
PacketBundle.cc, MemBus.cc):

* a collective of `size` bytes is cut into `chunks` streams (the system file's
  ``preferred-dataset-splits``), of which a rank runs at most `active_chunks`
  (``active-chunks-per-dimension``) at a time, in order: stream s starts on a rank when
  stream s - active_chunks has ended there;
* each stream is a ring around the ranks, every step one message from each rank to the
  next, sent once the previous step's message has been received and processed:
  all-reduce 2(p-1) steps and reduce-scatter p-1 steps of stream/p, all-gather p-1 steps of
  stream/p (size being the gathered output, as rocesim counts it), all-to-all p(p-1)/2
  steps of stream/p (every block relayed around the ring to its destination);
* processing a received message takes ``endpoint-delay`` (ns), plus, for a reduction (the
  reduce-scatter steps, also those of an all-reduce), a write and two reads of it at
  ``local-mem-bw`` (GB/s, 10^9 B/s): 3 x message / local_mem_bw; a stream's first message
  also waits the endpoint delay, and a stream ends once its last message is processed.

Its options (`Plan.options`, from the system file: `rocesim.training.workloads.astra_system`):
`active_chunks` (default: every chunk at once), `endpoint_delay_ps` (default 10 ns, ASTRA-sim's
own) and `local_mem_bw` (bytes/s; default none: reductions take no time).  Messages go whole
(one piece each); the network carries them as flows.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.training.algorithms.registry import Algorithm, Plan
from rocesim.training.algorithms.ring import RING_OPS, ring_steps
from rocesim.training.chunks import split_bytes
from rocesim.training.transfers import Transfers

__all__ = ["ASTRA_RING", "ACTIVE_CHUNKS", "ENDPOINT_DELAY_PS", "LOCAL_MEM_BW", "DEFAULT_ENDPOINT_DELAY_PS"]

ACTIVE_CHUNKS, ENDPOINT_DELAY_PS, LOCAL_MEM_BW = "active_chunks", "endpoint_delay_ps", "local_mem_bw"
DEFAULT_ENDPOINT_DELAY_PS = 10_000          # Sys.cc: communication_delay = 10 (ns) unless the file says
PS_PER_S = 10**12


def _steps(op: str, p: int) -> int:
    """The ring steps of one stream: Ring.cc's stream_count."""
    return p * (p - 1) // 2 if op == "alltoall" else ring_steps(op, p)


def _reduces(op: str, step: int, p: int) -> bool:
    """Whether the message received at `step` is reduced (Ring.cc's `processed`)."""
    return op == "reducescatter" or (op == "allreduce" and step < p - 1)


def _option(plan: Plan, key: str, default, low):
    v = plan.options.get(key, default)
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= low):
        raise ScenarioError(f"options.{key}", f"expected a number >= {low}, got {v!r}")
    return v


def _astra_ring(t: Transfers, plan: Plan) -> None:
    p, op = t.ranks.size, plan.op
    active = int(_option(plan, ACTIVE_CHUNKS, plan.chunks, 1))
    endpoint = int(_option(plan, ENDPOINT_DELAY_PS, DEFAULT_ENDPOINT_DELAY_PS, 0))
    mem_bw = _option(plan, LOCAL_MEM_BW, None, 1)
    g, pos = t.graph, np.arange(p)
    hosts = t.platform.host[t.ranks]
    nxt = np.roll(pos, -1)
    done = []                                       # per stream: when each place has ended it
    for s, stream in enumerate(split_bytes(plan.size, plan.chunks)):
        blocks = split_bytes(int(stream), p)

        def processing(step: int) -> int:
            """The delay after receiving step `step`'s message (-1: the stream's start)."""
            reduce = mem_bw is not None and step >= 0 and _reduces(op, step, p)
            return endpoint + (int(3 * int(blocks.max()) * PS_PER_S / mem_bw) if reduce else 0)

        prev = None
        for step in range(_steps(op, p)):
            after = () if s < active or step else (done[s - active],)
            if prev is not None:
                after += (np.roll(prev, 1, axis=1),)   # what place i got from place i-1
            t.pace(processing(step - 1))
            prev = t.send(pos, nxt, blocks[(pos - step) % p], after)
        ended = g.compute(hosts, processing(_steps(op, p) - 1), **t.node_kw)[None, :]
        g.depend(ended.ravel(), np.roll(prev, 1, axis=1).ravel())
        t.add_nodes(ended.ravel())
        t.mark_final(ended.ravel(), pos)
        done.append(ended)
    t.pace(0)


ASTRA_RING = Algorithm(
    "astra_ring", RING_OPS + ("alltoall",),
    lambda op, p, chunks, size, nccl: chunks * p * (_steps(op, p) + 5),
    build=_astra_ring,
    plan=lambda plan, platform, ranks: replace(plan, pieces=1))
