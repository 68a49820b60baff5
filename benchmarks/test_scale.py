"""Scale benchmarks (pytest-benchmark): what training-cluster sizes cost.

    pytest benchmarks/test_scale.py                                  # full size
    ROCESIM_BENCH_QUICK=1 pytest benchmarks/ --benchmark-disable     # CI smoke: tiny

Each case runs in a fresh interpreter (so that its peak resident memory is its own) and
records its CPU seconds and peak RSS in `extra_info`, with what else it measures:

* building the `Simulation` of a k=32 fat tree (8192 hosts): hosts and route entries;
* generating a direct all-to-all over 1024 ranks (1 M flows) and a halving-doubling
  all-reduce over 8192 ranks: the CPU seconds of each, the graph's nodes and edges;
* writing flows.csv of 10 M flows: the CPU seconds of the write;
* NIC scheduling, 16 and 8192 paced flows on one host: ns per link crossing;
* the fat-tree permutation (100G, 1 us, PFC, no CC, 4000 B payload) at k=8, 16 and 32:
  ns per link crossing and M crossings per CPU-second;
* a whole `rocesim run` of the k=8 case: the CPU seconds of the process;
* a 1024-rank all-to-all (1 M flows) on a k=16 fat tree: peak RSS;
* NCCL's ring all-reduce of 1 GiB on 8 servers x 8 GPUs: CPU, peak RSS, bus bandwidth;
* one iteration of AICB's GPT-13B on SimAI's 64-GPU topology (SimAI's own files): the
  whole process's CPU seconds and peak RSS.
* one iteration of Llama 3 70B on 1024 GPUs (scenarios/platforms/llama3_70b_1024.yaml:
  TP 8 x PP 8 x DP 16, 64 micro-batches, packet level): CPU seconds, peak RSS, crossings;
* one iteration of each full-size LLM preset on 64 GPUs (one micro-batch): CPU seconds.
* one iteration in flow mode of SimAI's GPT-13B, the 1024-GPU GPT and Llama 3 70B (also with
  fold_tp), SimAI's 9,216-GPU MoE example and Llama 3 405B on 16,384 GPUs: the whole
  process's CPU seconds and peak RSS.

Every run is in one part (`partition: none`, PARTITION: the engine's cost, comparable across
versions; the default is `leaves`, measured by benchmarks/test_parallel.py).  A case asserts
only that it did its work (all flows done, every row written); its figures
go to `extra_info`, and the README's Speed section (Scale) reports them: no test asserts a speed.
"""
import json
import os
import subprocess
import sys

import pytest

import rocesim

QUICK = bool(os.environ.get("ROCESIM_BENCH_QUICK"))
PARTITION = "none"                   # the engine in one part (the default is `leaves`)
HERE = os.path.dirname(os.path.abspath(__file__))
# the child imports the rocesim this process imported (a checkout built in place, or installed)
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [os.path.dirname(os.path.dirname(os.path.abspath(rocesim.__file__)))]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}

_PRELUDE = f"""
import json, resource, time
import numpy as np
from rocesim import Simulation, topology, traffic
PARTITION = {PARTITION!r}
cpu0 = time.process_time()
"""

_REPORT = """
print(json.dumps(dict(cpu_s=time.process_time() - cpu0,
                      peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **out)))
"""


def child(body: str) -> dict:
    """Run `body` (which fills a dict `out`) in a fresh interpreter: its figures."""
    out = subprocess.run([sys.executable, "-c", _PRELUDE + body + _REPORT], check=True, capture_output=True,
                         text=True, cwd=HERE, env=CHILD_ENV).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_child(benchmark, body: str) -> dict:
    """Run `body` in a fresh interpreter (`child`), timed by `benchmark`; record its figures."""
    info = benchmark.pedantic(lambda: child(body), rounds=1, iterations=1)
    benchmark.extra_info.update({k: round(v, 3) if isinstance(v, float) else v for k, v in info.items()})
    return info


def test_build_fat_tree_k32(benchmark):
    """Building the Simulation (topology, ports, routing tables, PFC/ECN arrays)."""
    k = 8 if QUICK else 32
    info = run_child(benchmark, f"""
t = topology.fat_tree({k}, "100Gbps", "1us")
sim = Simulation(t, seed=1, partition=PARTITION)
out = dict(hosts=t.n_hosts, route_entries=int(sim.network.arrays["route_ports"].size))
""")
    assert info["hosts"] == k ** 3 // 4


def test_generate_collectives(benchmark):
    """Graphs of a direct all-to-all and a halving-doubling all-reduce (no Simulation)."""
    a2a, hd = (64, 256) if QUICK else (1024, 8192)
    info = run_child(benchmark, f"""
from rocesim.training.graph import Graph
from rocesim.training.collectives import append_collective
g = Graph()
t0 = time.process_time()
append_collective(g, "alltoall", "direct", range({a2a}), {a2a} * 4096)
t1 = time.process_time()
n_a2a = g.n
append_collective(g, "allreduce", "halving_doubling", range({hd}), 64 * 2**20)
out = dict(alltoall_ranks={a2a}, alltoall_nodes=n_a2a, alltoall_cpu_s=t1 - t0,
           hd_ranks={hd}, hd_cpu_s=time.process_time() - t1, edges=int(g.edges()[0].size))
""")
    assert info["alltoall_nodes"] == a2a * (a2a - 1) + 2 * a2a


def test_write_flows_csv_10M(benchmark, tmp_path):
    """flows.csv of 10 M flows (the columns of `Results.flows`, synthetic values)."""
    n = 10_000 if QUICK else 10_000_000
    path = str(tmp_path / "flows.csv")
    run_child(benchmark, f"""
from rocesim.results.run import write_csv
n = {n}
rng = np.random.default_rng(1)
fct = rng.integers(10**6, 10**10, n) / 1000.0
ideal = np.rint(fct / (1 + rng.random(n) * 3))
cols = dict(flow_id=np.arange(n), src=rng.integers(0, 8192, n).astype(np.int32),
            dst=rng.integers(0, 8192, n).astype(np.int32), size_bytes=rng.integers(1000, 10**8, n),
            start_ns=np.sort(rng.integers(0, 10**12, n)) / 1000.0, fct_ns=fct, ideal_fct_ns=ideal,
            slowdown=fct / ideal, rx_fct_ns=fct - 1.5, prio=np.full(n, 3, np.int32), tag=np.zeros(n, np.int32),
            retx_bytes=np.zeros(n, np.int64), timeouts=np.zeros(n, np.int64), collective=np.full(n, -1),
            iteration=np.full(n, -1), is_compute=np.zeros(n, bool))
t0 = time.process_time()
write_csv({path!r}, cols)
out = dict(flows=n, write_cpu_s=time.process_time() - t0)
""")
    with open(path) as f:
        assert sum(1 for _ in f) == n + 1


@pytest.mark.parametrize("flows", [16, 8192])
def test_nic_many_paced_flows(benchmark, flows):
    """One host sends `flows` flows, each capped at 95% of line rate / flows (so every
    flow is paced), 400 MB in all, through a switch: ns per link crossing."""
    total = 4_000_000 if QUICK else 400_000_000
    info = run_child(benchmark, f"""
sim = Simulation(topology.star(2, "100Gbps", "1us"), seed=1, partition=PARTITION)
rate = "{100e9 / flows * 0.95:.0f}bps"
for _ in range({flows}):
    sim.add_flow(1, 0, {max(total // flows, 1000)}, rate=rate)
res = sim.run(progress=False)
s = res.summary
out = dict(flows={flows}, crossings=s["link_crossings"], core_cpu_s=s["cpu_s"],
           ns_per_crossing=s["cpu_s"] / s["link_crossings"] * 1e9, completed=s["flows_completed"])
""")
    assert info["completed"] == flows


@pytest.mark.parametrize("k", [8, 16, 32])
def test_fat_tree_permutation_scaling(benchmark, k):
    """Permutation of 2 MB flows (1 MB at k=32) on a k-ary fat tree: ns per crossing."""
    k, size = (4, 200_000) if QUICK else (k, 1_000_000 if k == 32 else 2_000_000)
    info = run_child(benchmark, f"""
t = topology.fat_tree({k}, "100Gbps", "1us")
sim = Simulation(t, seed=1, nic={{"payload": "4000B"}}, switch={{"pfc": {{"enabled": True}}}}, partition=PARTITION)
sim.add_flows(traffic.permutation(t.n_hosts, {size}, 0, np.random.default_rng(1)))
res = sim.run(progress=False)
s = res.summary
out = dict(k={k}, crossings=s["link_crossings"], core_cpu_s=s["cpu_s"],
           ns_per_crossing=s["cpu_s"] / s["link_crossings"] * 1e9,
           m_crossings_per_cpu_s=s["link_crossings"] / s["cpu_s"] / 1e6,
           completed=s["flows_completed"], total=s["flows_total"])
""")
    assert info["completed"] == info["total"]


K8_SCENARIO = """
name: k8-permutation
seed: 1
topology: {kind: fat_tree, k: 8, link: {rate: 100Gbps, delay: 1us}}
switch: {pfc: {enabled: true}}
nic: {payload: 4000B}
cc: {scheme: none}
traffic:
  - {kind: permutation, size: 2MB}
output: {plot: false}
"""


def rocesim_run(scenario, out, cwd, *extra) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of a whole `python -m rocesim run` process (interpreter,
    imports, build, run, writing results), measured by an interpreter of its own that runs
    only it (so the peak is the run's alone)."""
    measure = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
               "r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime + r.ru_stime, r.ru_maxrss / 1024)")
    cmd = [sys.executable, "-c", measure, sys.executable, "-m", "rocesim", "run", str(scenario), "-o", str(out),
           "-q", "--force", "--set", f"partition={PARTITION}", *extra]   # rounds after the first replace the results
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=CHILD_ENV,
                          cwd=cwd)                            # -m puts cwd first on sys.path
    cpu, rss = map(float, done.stdout.split()[-2:])
    return cpu, rss


def test_rocesim_run_k8_whole_process(benchmark, tmp_path):
    """CPU seconds of a whole `python -m rocesim run` (interpreter, imports, build, run,
    writing results) of the k=8 permutation at 4000 B payload."""
    scenario = tmp_path / "k8.yaml"
    scenario.write_text(K8_SCENARIO.replace("k: 8", "k: 4") if QUICK else K8_SCENARIO)
    cpu = benchmark.pedantic(lambda: rocesim_run(scenario, tmp_path / "out", tmp_path)[0],
                             rounds=1 if QUICK else 3, iterations=1)
    benchmark.extra_info.update(process_cpu_s=round(cpu, 3))
    assert (tmp_path / "out" / "flows.csv").exists()


def test_alltoall_1024_ranks_memory(benchmark):
    """Peak RSS of a 1024-rank direct all-to-all (1 M flows of 1000 B) on a k=16 fat tree."""
    p, k = (64, 8) if QUICK else (1024, 16)
    info = run_child(benchmark, f"""
t = topology.fat_tree({k}, "100Gbps", "1us")
sim = Simulation(t, seed=1, partition=PARTITION)
sim.add_collective("alltoall", "direct", list(range({p})), size={p} * 1000)
res = sim.run(progress=False)
s = res.summary
out = dict(ranks={p}, flows=s["flows_total"], completed=s["flows_completed"], core_cpu_s=s["cpu_s"],
           crossings=s["link_crossings"])
""")
    assert info["completed"] == info["flows"]


def test_nccl_ring_allreduce_1gib_64_gpus(benchmark):
    """NCCL's ring all-reduce of 1 GiB on 8 servers x 8 GPUs (400G NICs, NVLink 2880 Gbps,
    rail-optimized): CPU, peak RSS, graph nodes and the bus bandwidth it reaches."""
    servers, size = (2, 16 << 20) if QUICK else (8, 1 << 30)
    info = run_child(benchmark, f"""
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp
plat = pf.rail_optimized({servers}, 8, "400Gbps", "1us", ScaleUp(2880 * 10**9, 10**6))
sim = Simulation(plat, partition=PARTITION)
sim.add_collective("allreduce", "nccl_ring", "all", {size})
res = sim.run(progress=False)
s, d = res.summary, res.collectives["duration_ns"][0]
n = plat.n_ranks
out = dict(ranks=n, nodes=s["flows_total"], completed=s["flows_completed"], duration_us=d / 1e3,
           busbw_gbytes_s={size} / d * 2 * (n - 1) / n, crossings=s["link_crossings"])
""")
    assert info["completed"] == info["nodes"]


def test_llama3_70b_1024_iteration(benchmark):
    """One iteration of scenarios/platforms/llama3_70b_1024.yaml, the whole run in one
    process (build and simulation); quick: 64 GPUs, 8 layers of 1024 tokens, 2 micro-batches."""
    quick = ["topology.servers=8", "topology.servers_per_pod=8",
             "traffic[0].params={micro_batches: 2, layers: 8, seq: 1024}"] if QUICK else []
    info = run_child(benchmark, f"""
from rocesim import scenario
scn = scenario.load({os.path.join(HERE, "..", "scenarios", "platforms", "llama3_70b_1024.yaml")!r}, {quick!r} + [f"partition={{PARTITION}}"])
res = scn.sim.run(progress=False)
s = res.summary
out = dict(gpus=scn.sim.platform.n_ranks, nodes=s["flows_total"], completed=s["flows_completed"],
           crossings=s["link_crossings"], core_cpu_s=s["cpu_s"],
           iteration_ms=float(res.iterations["duration_ns"][0]) / 1e6)
""")
    assert info["completed"] == info["nodes"]


def test_simai_gpt13b_iteration_64_gpus(benchmark, tmp_path):
    """One iteration of AICB's GPT-13B workload (TP 8, DP 8) on SimAI's 64-GPU topology file,
    read from SimAI's own files (scenarios/platforms/simai_gpt13b.yaml): the whole `rocesim
    run` process's CPU seconds and peak RSS (quick: the first 20 ms of simulated time)."""
    scen = os.path.join(os.path.dirname(HERE), "scenarios", "platforms", "simai_gpt13b.yaml")
    stop = ["--set", "stop=20ms"] if QUICK else []
    cpu, rss = benchmark.pedantic(lambda: rocesim_run(scen, tmp_path / "out", tmp_path, *stop), rounds=1,
                                  iterations=1)
    it = json.load(open(tmp_path / "out" / "summary.json"))
    benchmark.extra_info.update(cpu_s=round(cpu, 2), peak_rss_mb=round(rss, 1),
                                iteration_ms=round((it.get("iteration_mean_ns") or 0) / 1e6, 3))
    assert (tmp_path / "out" / "flows.csv").exists()


LLM_PRESET_NAMES = ["llama3_8b", "llama3_70b", "llama3_405b", "gpt3_175b", "mixtral_8x7b", "deepseek_v3"]


def _preset_iteration(benchmark, preset, gpus, mode="packet", fold_tp=False) -> dict:
    """One iteration of a full-size preset on `gpus` GPUs (servers of 8, rail-optimized,
    pods of 32 servers beyond 256 GPUs), one micro-batch per replica, pp and ep cut to fit;
    quick: 16 GPUs, 4 layers of 512 tokens (DeepSeek-V3: 5, to keep an MoE layer), TP 8 x PP 2.
    `fold_tp` applies to dense presets only (MoE layers' all-to-alls start rank by rank)."""
    params = dict(micro_batches=1, **(dict(layers=5 if preset == "deepseek_v3" else 4, seq=512) if QUICK else {}))
    gpus = 16 if QUICK else gpus
    info = run_child(benchmark, f"""
from rocesim.network.platform import ScaleUp, rail_optimized
from rocesim.training.parallelism import Parallelism
from rocesim.training.workloads.llm import LLM_PRESETS
from rocesim.workload_api import add_llm_training
gpus = {gpus}
sim = Simulation(rail_optimized(gpus // 8, 8, "400Gbps", "1us", ScaleUp(3600 * 10**9, 10**6),
                                servers_per_pod=32 if gpus > 256 else None),
                 nic={{"payload": "4000B"}}, mode={mode!r}, partition=PARTITION)
model, dims = LLM_PRESETS[{preset!r}].make({params!r})
if {QUICK!r}:
    dims.update(tp=8, pp=2, **({{"ep": 1}} if "ep" in dims else {{}}))
dims["pp"] = min(dims["pp"], gpus // dims["tp"])
if "ep" in dims:
    dims["ep"] = min(dims["ep"], gpus // (dims["tp"] * dims["pp"]))
add_llm_training(sim, model, range(gpus), 1, Parallelism.for_ranks(gpus, **dims),
                 fold_tp={fold_tp!r} and "ep" not in dims)
res = sim.run(progress=False)
s = res.summary
out = dict(gpus=gpus, nodes=s["flows_total"], completed=s["flows_completed"], crossings=s["link_crossings"],
           core_cpu_s=s["cpu_s"], iteration_ms=float(res.iterations["duration_ns"][0]) / 1e6)
""")
    assert info["completed"] == info["nodes"] and info["iteration_ms"] > 0
    return info


@pytest.mark.parametrize("preset", LLM_PRESET_NAMES)
def test_llm_preset_iteration_64_gpus(benchmark, preset):
    """One iteration of a full-size preset on 64 GPUs at the packet level (405B and GPT-3:
    PP 8; DeepSeek-V3: EP 4)."""
    _preset_iteration(benchmark, preset, 64)


@pytest.mark.parametrize("gpus", [256, 1024])
@pytest.mark.parametrize("preset", LLM_PRESET_NAMES)
def test_llm_preset_iteration_flow_mode(benchmark, preset, gpus):
    """One iteration of a full-size preset on 256 and 1024 GPUs in flow mode, dense presets
    with fold_tp (on the development machine: at most 25 s of CPU, Mixtral at 1024 GPUs)."""
    _preset_iteration(benchmark, preset, gpus, mode="flow", fold_tp=True)


FLOW_CASES = {   # scenario -> the --set overrides of its quick (CI smoke) form
    "simai_gpt13b": ["stop=20ms"],
    "gpt_1024": ["topology.servers=8", "topology.servers_per_pod=8", "traffic[0].params={layers: 4, micro_batches: 2}"],
    "llama3_70b_1024": ["topology.servers=8", "topology.servers_per_pod=8",
                        "traffic[0].params={micro_batches: 2, layers: 8, seq: 1024}"],
    # quick: AICB's Llama 7B (TP 2) on 64 GPUs, 4 of its 32 data-parallel replicas simulated
    "simai_moe_9216": ["topology.servers=8", "topology.servers_per_pod=8", "traffic[0].fold_dp=4",
                       "traffic[0].model={simai: ../../validation/reference/simai/workloads/"
                       "L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt}"],
    "llama3_405b_16k": ["topology.servers=16", "topology.servers_per_pod=4", "topology.pods_per_block=2",
                        "topology.cores=8", "traffic[0].parallelism={tp: 8, pp: 2}",
                        "traffic[0].params={micro_batches: 2, layers: 8, seq: 1024}"],
}


@pytest.mark.parametrize("name", [*FLOW_CASES, "llama3_70b_1024:fold_tp"])   # (with each TP group one stream)
def test_flow_mode_iteration(benchmark, tmp_path, name):
    """One training iteration in flow mode (`--mode flow`: fluid flows, NCCL's collectives as
    streams): the whole `rocesim run` process's CPU seconds and peak RSS, and the iteration.
    The 9,216- and 16,384-GPU cases fold what their scenario files say (fold_tp, fold_dp)."""
    base, _, variant = name.partition(":")                 # scenario[:variant], the variant a --set of its own
    scen = os.path.join(os.path.dirname(HERE), "scenarios", "platforms", f"{base}.yaml")
    sets = (FLOW_CASES[base] if QUICK else []) + ([f"traffic[0].{variant}=true"] if variant else [])
    quick = [a for s in sets for a in ("--set", s)]
    cpu, rss = benchmark.pedantic(lambda: rocesim_run(scen, tmp_path / "out", tmp_path, "--mode", "flow", "--no-plot",
                                                      *quick), rounds=1, iterations=1)
    it = json.load(open(tmp_path / "out" / "summary.json"))
    benchmark.extra_info.update(cpu_s=round(cpu, 2), peak_rss_mb=round(rss, 1), core_cpu_s=it["cpu_s"],
                                nodes=it["flows_total"], iteration_ms=round((it.get("iteration_mean_ns") or 0) / 1e6, 3))
    assert it["mode"] == "flow"
    assert it["flows_completed"] == it["flows_total"] or (QUICK and "stop=20ms" in FLOW_CASES[base])
