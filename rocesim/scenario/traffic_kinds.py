"""The scenario's `traffic:` entries: each kind declared (keys, types, defaults, meanings),
then generated into the Simulation once its predicted flow count fits the memory limit.

Entry `i` draws its random numbers from `numpy.random.default_rng([seed, i])`, so adding
an entry never changes the others.  Workloads are their own module (`workload_entry`).
"""
from __future__ import annotations

import re

import numpy as np

from rocesim import traffic as tr
from rocesim.config import DEFAULT_FLOW_PRIORITY, PRIORITY
from rocesim.errors import ScenarioError
from rocesim.settings import (REQUIRED, Boolean, Choice, Custom, Ids, Integer, Kinds, ListOf, Name, Number, Path, Rate, Section,
                              Setting, Size, Time, keys_of, resolve_path, show)
from rocesim.scenario.topology_kinds import rekey
from rocesim.scenario.workload_entry import WORKLOAD, add_workload
from rocesim.training.algorithms import ALGORITHMS, DEFAULT_ALGORITHM
from rocesim.training.collectives import flow_count_estimate
from rocesim.training.connections import generated, text_id
from rocesim.training.nccl import PXN_DEFAULT

HOST = Custom("a host id (0..hosts-1)")
PRIO = Setting(PRIORITY, DEFAULT_FLOW_PRIORITY, "the flows' priority (traffic class), 1..7")
START = Setting(Time(), "0us", "when it starts")
HOSTS = Setting(Ids("host"), "all", "the hosts that take part")

FLOW = Section("one explicit flow",
               src=Setting(HOST, REQUIRED, "sending host"), dst=Setting(HOST, REQUIRED, "receiving host"),
               size=Setting(Size(1), REQUIRED, "bytes to send"), start=START, prio=PRIO,
               path=Setting(ListOf(Custom("node id"), "node ids [src, switch, ..., dst]"), None,
                            "an explicit path for the data packets"),
               rate=Setting(Rate(), None, "a cap on the flow's sending rate, whatever the scheme says"),
               connection=Setting(Custom("a whole number >= 0 or a name"), None,
                                  "the connection (queue pair) it rides: the flows of one src and dst with the "
                                  "same connection share its 5-tuple and ECMP path; default: its own"))
# the queue pairs of a pattern's flows (cdf traffic: each flow its own, the HPCC fork's convention)
CONNECTION = Setting(Choice("per_flow", "per_pair"), "per_flow",
                     "the queue pairs its flows ride: 'per_flow' (each flow its own, hashed from its id, as the "
                     "HPCC fork's) or 'per_pair' (one per sender and receiver, which every flow between them "
                     "rides: an application that keeps its connections, so a pair's flows keep one path)")

COLLECTIVE_ALGORITHMS = "; ".join(f"{op}: {', '.join(algs)} (default {DEFAULT_ALGORITHM[op]})"
                                  for op, algs in ALGORITHMS.items())

TRAFFIC = Kinds(
    "traffic kind",
    "background traffic, collectives and training workloads",
    flows=Section("explicit flows",
                  flows=Setting(ListOf(FLOW, "flows {src, dst, size, start, prio, path, rate, connection}"), REQUIRED,
                                "the flows (traffic[].flows[] keys below)")),
    incast=Section("one incast (senders and receiver), or with load and duration incasts of `senders` random "
                   "hosts to a random receiver at Poisson times",
                   senders=Setting(Custom("'all' or a list of host ids; with load: how many senders"), REQUIRED,
                                   "the senders"),
                   receiver=Setting(HOST, None, "the receiving host (required without load; with load: random)"),
                   size=Setting(Size(1), REQUIRED, "bytes each sender sends"),
                   load=Setting(Number(0.0, 1.0), None, "repeat incasts to carry this share of the hosts' link rate"),
                   duration=Setting(Time(), None, "with load: how long incasts arrive"),
                   hosts=HOSTS, start=START, prio=PRIO, connection=CONNECTION),
    permutation=Section("every host sends to a distinct random host",
                        size=Setting(Size(1), REQUIRED, "bytes per flow"), start=START, hosts=HOSTS, prio=PRIO,
                        connection=CONNECTION),
    cdf=Section("Poisson arrivals at `load` of the host link rate, sizes from a distribution",
                distribution=Setting(Custom("websearch, fb_hadoop, or {file: sizes.txt} of 'bytes cumulative%' "
                                            "lines"), REQUIRED, "the flow sizes"),
                load=Setting(Number(0.0, 1.0), REQUIRED, "share of each host's link rate offered"),
                duration=Setting(Time(), REQUIRED, "how long flows arrive"), start=START, hosts=HOSTS, prio=PRIO),
    hpcc_flow_file=Section("a flow file in the HPCC ns-3 format", path=Setting(Path(), REQUIRED, "the file")),
    collective=Section("a collective on GPU ranks (on a plain topology, hosts)",
                       op=Setting(Name("collective", tuple(ALGORITHMS)), REQUIRED, "the operation"),
                       size=Setting(Size(1), REQUIRED, "its size as nccl-tests counts it"),
                       algorithm=Setting(Custom(COLLECTIVE_ALGORITHMS), None, "the algorithm (per operation)"),
                       ranks=Setting(Custom("'all', a list of ranks, or a list of lists (one communicator each)"),
                                     "all", "the ranks"),
                       chunks=Setting(Integer(1), 1, "pieces the message is cut into, pipelined through the steps"),
                       start=START, prio=PRIO,
                       group_size=Setting(Integer(1), None, "hierarchical: ranks per group (default: the server)"),
                       pxn=Setting(Boolean(), PXN_DEFAULT, "forward transfers to other rails through the "
                                                           "scale-up domain first (NCCL's PXN, on by default as "
                                                           "in NCCL since 2.12)")),
    workload=WORKLOAD,
)


def add_traffic(sim, entries, seed, base_dir=".", key="traffic"):
    """Add every traffic entry of a scenario to `sim` (each seeded by (seed, index)).

    The simulation's memory guard (`sim.memory`) refuses an entry whose predicted flow
    count would not fit, before generating it (flow lists, incasts, permutations, cdf and
    repeated-incast traffic from load x rate x duration / mean size, collectives by their
    estimate, workloads after their first iteration)."""
    if not isinstance(entries, list) or not entries:
        raise ScenarioError(key, "expected a non-empty list of traffic entries")
    memory = sim.memory
    for i, d in enumerate(entries):
        k = f"{key}[{i}]"
        kind, v = TRAFFIC.resolve(d, k)
        rng = np.random.default_rng([seed, i])
        try:
            _KINDS[kind](sim, v, k, rng, base_dir, i, memory)
        except ScenarioError as e:
            raise rekey(k, e) from None


def _ids(v, key, n, what) -> np.ndarray:
    """`all` or a list of ids (checked by `Ids`) in 0..n-1 (`what`: host or rank)."""
    if isinstance(v, str):
        return np.arange(n)
    bad = [h for h in v if not 0 <= h < n]
    if bad:
        raise ScenarioError(key, f"{what} {bad[0]} does not exist; {what}s are 0..{n - 1}")
    return np.asarray(v)


def _hosts(v, key, sim) -> np.ndarray:
    return _ids(v, key, sim.topology.n_hosts, "host")


def _pairs(v, index) -> int | None:
    """The connection label of entry `index`'s flows with `connection: per_pair` (one queue
    pair per sender and receiver, apart from every other entry's), or None (each flow its own)."""
    return None if v["connection"] == "per_flow" else int(generated(text_id("traffic"), index)[0])


def _flows(sim, v, key, rng, base_dir, index, memory):
    memory.flows(f"{key}.flows", "flows", sim.n_nodes, len(v["flows"]))
    for j, f in enumerate(v["flows"]):
        fk = f"{key}.flows[{j}]"
        try:
            sim.add_flow(f["src"], f["dst"], f["size"], f["start"], prio=f["prio"], path=f["path"], tag=index,
                         rate=f["rate"], connection=f["connection"])
        except ScenarioError as e:
            # add_flow names the flow by its global id (flows[N]); name it by its place in this entry
            raise ScenarioError(re.sub(r"^flows\[\d+\]", lambda m: fk, e.key), e.reason) from None


def _incast(sim, v, key, rng, base_dir, index, memory):
    """One incast (senders list or `all`, receiver), or with `load` and `duration`, incasts
    of `senders` random hosts to a random receiver at Poisson times."""
    if v["load"] is not None:
        return _repeated_incast(sim, v, key, rng, index, memory)
    for name in ("duration",):
        if v[name] is not None:
            raise ScenarioError(f"{key}.{name}", "only incasts repeated at a `load` take it")
    if v["receiver"] is None:
        raise ScenarioError(f"{key}.receiver", "missing (required)")
    receiver = sim.host(v["receiver"], f"{key}.receiver")
    senders = v["senders"]
    if isinstance(senders, str) and senders == "all":
        senders = np.array([h for h in range(sim.topology.n_hosts) if h != receiver])
    else:
        senders = _hosts(Ids("host").parse(senders, f"{key}.senders"), f"{key}.senders", sim)
    sim.add_flows(tr.incast(senders, receiver, v["size"], v["start"], v["prio"], _pairs(v, index)), tag=index)


def _repeated_incast(sim, v, key, rng, index, memory):
    if not (v["receiver"] is None or v["receiver"] == "random"):
        raise ScenarioError(f"{key}.load", "with a load, incasts repeat at random times to random "
                                           "receivers: remove receiver (or load for a single incast)")
    if v["duration"] is None:
        raise ScenarioError(f"{key}.duration", "missing (required)")
    topo = sim.topology
    hosts = _hosts(v["hosts"], f"{key}.hosts", sim)
    n = Integer(1).parse(v["senders"], f"{key}.senders")
    if n >= len(hosts):
        raise ScenarioError(f"{key}.senders", f"needs fewer senders than hosts ({len(hosts)})")
    rate = max(topo.host_rate(int(h)) for h in hosts)
    # incasts of n senders x size bytes carry load x len(hosts) x rate
    memory.flows(f"{key}.duration", "repeated incast",
                 sim.n_nodes, v["load"] * len(hosts) * rate * v["duration"] / (8 * v["size"] * 1e12))
    sim.add_flows(tr.repeated_incast(hosts, n, v["size"], v["load"], rate, v["duration"], rng, v["start"],
                                     v["prio"], _pairs(v, index)), tag=index)


def _permutation(sim, v, key, rng, base_dir, index, memory):
    hosts = _hosts(v["hosts"], f"{key}.hosts", sim)
    memory.flows(key, "permutation", sim.n_nodes, len(hosts))
    sim.add_flows(tr.permutation(hosts, v["size"], v["start"], rng, v["prio"], _pairs(v, index)), tag=index)


def _distribution(v, key, base_dir):
    if isinstance(v, dict):
        keys_of(v, key, ("file",), ("file",))
        return tr.FlowSizeCDF.from_file(resolve_path(base_dir, Path().parse(v["file"], f"{key}.file"),
                                                     f"{key}.file"))
    if not isinstance(v, str):
        raise ScenarioError(key, f"expected websearch, fb_hadoop or {{file: sizes.txt}}, got {show(v)}")
    if "/" in v or v.endswith((".txt", ".csv", ".cdf")):
        return tr.FlowSizeCDF.from_file(resolve_path(base_dir, Path().parse(v, key), key))
    return tr.builtin(v, key)


def _cdf(sim, v, key, rng, base_dir, index, memory):
    topo = sim.topology
    hosts = _hosts(v["hosts"], f"{key}.hosts", sim)
    if len(hosts) < 2:
        raise ScenarioError(f"{key}.hosts", "needs at least two hosts")
    rates = np.array([topo.host_rate(int(h)) for h in hosts])
    cdf = _distribution(v["distribution"], f"{key}.distribution", base_dir)
    # each host offers load x its rate in flows of the distribution's mean size
    memory.flows(f"{key}.duration", "cdf traffic", sim.n_nodes,
                 v["load"] * float(rates.sum()) * v["duration"] / (8 * cdf.mean() * 1e12))
    sim.add_flows(tr.poisson_cdf(hosts, rates, v["load"], v["duration"], cdf, rng, v["start"], v["prio"],
                                 memory_limit=memory), tag=index)


def _hpcc_flow_file(sim, v, key, rng, base_dir, index, memory):
    table = tr.hpcc_flow_file(resolve_path(base_dir, v["path"], f"{key}.path"), sim.topology)
    bad = (table.prio < 1) | (table.prio > 7)
    if bad.any():
        raise ScenarioError(f"{key}.path", f"flow {int(np.flatnonzero(bad)[0])} has priority "
                            f"{int(table.prio[bad][0])}; data flows use priorities 1..7")
    memory.flows(f"{key}.path", "hpcc_flow_file", sim.n_nodes, len(table))
    sim.add_flows(table, tag=index)


def rank_groups(v, key, sim) -> list[np.ndarray]:
    """`all`, a list of ranks, or a list of lists (one communicator each)."""
    if isinstance(v, list) and v and all(isinstance(x, list) for x in v):
        return [ranks(x, f"{key}[{i}]", sim) for i, x in enumerate(v)]
    return [ranks(v, key, sim)]


def ranks(v, key, sim) -> np.ndarray:
    """`all` or a list of ranks (GPUs of the platform; on a plain topology, hosts)."""
    return _ids(Ids("rank").parse(v, key), key, sim.platform.n_ranks, "rank")


def _collective(sim, v, key, rng, base_dir, index, memory):
    op = v["op"]
    algorithm = DEFAULT_ALGORITHM[op] if v["algorithm"] is None else v["algorithm"]
    if not (isinstance(algorithm, str) and algorithm in ALGORITHMS[op]):
        raise ScenarioError(f"{key}.algorithm", f"{op} has no algorithm {show(algorithm)}; "
                                                f"valid: {', '.join(ALGORITHMS[op])}")
    if algorithm.startswith("hierarchical") and v["group_size"] is None and sim.platform.gpus_per_server == 1:
        raise ScenarioError(f"{key}.group_size", "hierarchical all-reduce needs group_size (ranks per group) "
                                                 "unless the platform has multi-GPU servers")
    groups = rank_groups(v["ranks"], f"{key}.ranks", sim)
    memory.flows(key, f"{op} ({algorithm})", sim.n_nodes,
                 sum(flow_count_estimate(op, algorithm, len(m), v["chunks"], v["size"], sim.nccl) for m in groups))
    for members in groups:
        if len(members) < 2:
            raise ScenarioError(f"{key}.ranks", "a collective needs at least two ranks")
        try:
            sim.add_collective(op, algorithm, members.tolist(), v["size"], chunks=v["chunks"], prio=v["prio"],
                               start=v["start"], group_size=v["group_size"], pxn=v["pxn"])
        except ScenarioError as e:
            raise rekey(key, e) from None


def _workload(sim, v, key, rng, base_dir, index, memory):
    add_workload(sim, v, key, base_dir, index, lambda x, k: ranks(x, k, sim))


_KINDS = {"flows": _flows, "incast": _incast, "permutation": _permutation, "cdf": _cdf,
          "hpcc_flow_file": _hpcc_flow_file, "collective": _collective, "workload": _workload}
