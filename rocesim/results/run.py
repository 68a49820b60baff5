"""Results of a run: per-flow numpy arrays, per-port counters, a summary, and their files.

`Results.from_core` reads a finished (or stopped) run from the core and the run's record
(`rocesim.results.record.RunRecord`); `Results.write(outdir)` writes flows.csv (or flows.parquet), ports.csv,
pfc.csv, summary.json, and when there is something in them pfc_timeline.csv, rates.csv,
queues.csv, faults.csv, deadlocks.csv, collectives.csv, iterations.csv and fct.txt.
OUTPUTS.md documents every file and column (tests/results/test_outputs_doc.py keeps it true).
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field

import numpy as np

from rocesim.results.csv_text import write_csv  # noqa: F401  (re-exported)
from rocesim.results.metrics import bandwidths_gbps, class_summary, uplink_imbalance
from rocesim.results.overlap import iteration_breakdown
from rocesim.results.record import RunRecord
from rocesim.run_progress import short_time

PS_PER_NS = 1000.0
# summary.json's `notification_carrier`, as the terminal says it
_CARRIERS = {"cnp": "CNP packets", "ack": "ECN echoes on ACKs"}

FLOW_COLUMNS = ("flow_id", "src", "dst", "size_bytes", "start_ns", "fct_ns", "ideal_fct_ns",
                "slowdown", "rx_fct_ns", "prio", "tag", "retx_bytes", "timeouts", "reordered_packets",
                "spurious_retx_bytes", "trimmed", "collective", "iteration", "is_compute", "top_switch")

# what has no meaning without packets, left empty in flow mode (NaN in the arrays and
# files, null in summary.json): OUTPUTS.md marks each "empty in flow mode"
FLOW_MODE_EMPTY_FLOWS = ("retx_bytes", "timeouts", "reordered_packets", "spurious_retx_bytes", "trimmed")
FLOW_MODE_EMPTY_PORTS = ("tx_packets", "buffer_drops", "pauses_sent", "ecn_marks", "paused_ns", "queue_bytes",
                         "paused_now", "watchdog_detections", "watchdog_restorations", "watchdog_drops", "trimmed")
# summary.json's `drops` is their sum (`buffer_drops`: a switch buffer's refusals)
DROP_CAUSES = ("buffer_drops", "ttl_drops", "link_drops", "watchdog_drops", "nic_drops", "no_route_drops")
FLOW_MODE_EMPTY_SUMMARY = (
    "link_crossings", "drops", "buffer_drops", "ttl_drops", "pfc_pauses", "pfc_resumes", "cnps", "nacks", "acks", "timeouts",
    "ecn_echoes", "congestion_notifications", "notification_carrier",
    "data_packets_sent", "retx_bytes", "reordered_packets", "spurious_retx_bytes", "trimmed", "link_crossings_per_cpu_s",
    "packets_in_use_at_end", "packets_peak",
    "queue_pairs_in_use_at_end", "queue_pairs_peak", "link_drops", "watchdog_drops", "nic_drops",
    "watchdog_detections", "pfc_timeline_lost")
# summary.json's keys that the machine decides, not the run: time, speed and the threads a
# run used (`threads: auto` adapts them to the machine's load).  Every other output is the
# same on any machine, any load and any thread count: leave these out when comparing runs.
MACHINE_KEYS = ("wall_s", "cpu_s", "link_crossings_per_cpu_s", "threads_mean", "threads_final")


@dataclass(frozen=True)
class CoreReadout:
    """What `Results.from_core` reads of a core after its run, read at once (`of`), so that
    the core (its flows alone are 64 bytes each) can be freed before the results' columns
    are made."""
    stats: dict
    flow_arrays: dict
    port_arrays: dict
    deadlock_records: list
    deadlock_detection: bool
    pause_timeline: dict
    switch_arrays: dict
    thread_stats: dict
    cnp_packets: bool = False        # receivers sent CNP packets (the scheme's declaration), else ECN echoes

    @classmethod
    def of(cls, core) -> "CoreReadout":
        return cls(stats=core.stats(), flow_arrays=core.flow_arrays(), port_arrays=core.port_arrays(),
                   deadlock_records=core.deadlock_records(), deadlock_detection=bool(core.deadlock_detection),
                   pause_timeline=core.pause_timeline(), switch_arrays=core.switch_arrays(),
                   thread_stats=core.thread_stats(), cnp_packets=core.needs_cnp)


@dataclass
class Results:
    """What a run produced.

    `flows` maps column names (see FLOW_COLUMNS, plus `is_compute`) to numpy arrays
    indexed by flow id; `ports` maps counter names to per-port arrays; `summary` is a
    dict of scalars (also written as summary.json).
    """

    flows: dict
    ports: dict
    summary: dict
    switches: dict = field(default_factory=dict)
    samples: dict | None = None      # {'rates': columns, 'queues': columns} when sampled
    collectives: dict | None = None  # per collective: op, algorithm, ranks, size, times
    iterations: dict | None = None   # per training iteration: start, finish, duration
    node_ids: np.ndarray | None = None      # each node's id in the topology's source file, if renumbered
    pfc_timeline: dict | None = None         # pause intervals (see the module docstring)
    threads: int = 1                 # the most threads the run could take (summary.json: those it used)

    @classmethod
    def from_core(cls, record: RunRecord, core: CoreReadout, *, wall_s, cpu_s, interrupted, stop_ps):
        """The results of a run, from its `record` (what it was made of) and what was read
        of its core; `stop_ps` is the stop time if the run reached it."""
        st = core.stats
        # the stop time when the run hit it, else the last event that did something
        end_ps = stop_ps if stop_ps is not None else st["last_activity_ps"]
        flows = _flow_columns(record, core.flow_arrays, end_ps)
        pa = core.port_arrays
        node, peer = record.port_node, record.port_peer
        ports = dict(node=node, peer=peer, peer_node=node[peer], rate_bps=record.port_rate_bps, tx_bytes=pa["tx_bytes"],
                     tx_packets=pa["tx_packets"], buffer_drops=pa["buffer_drops"], pauses_sent=pa["pauses_sent"],
                     ecn_marks=pa["ecn_marks"],
                     paused_ns=pa["paused_ps"] / PS_PER_NS, queue_bytes=pa["queue_bytes"],
                     paused_now=pa["paused_mask"], watchdog_detections=pa["watchdog_detections"],
                     watchdog_restorations=pa["watchdog_restorations"], watchdog_drops=pa["watchdog_drops"],
                     trimmed=pa["trimmed"])
        summary = dict(
            scheme=record.scheme, mode=record.mode, seed=record.seed, hosts=record.hosts,
            switches=record.switches, topology=record.topology,
            events=st["events"], link_crossings=st["link_crossings"],
            drops=None, buffer_drops=st["buffer_drops"],        # drops: set below, from DROP_CAUSES
            ttl_drops=st["ttl_drops"], pfc_pauses=st["pfc_pauses"], pfc_resumes=st["pfc_resumes"],
            cnps=st["cnps"], nacks=st["nacks"], acks=st["acks"], timeouts=st["timeouts"],
            # the congestion notifications the senders' scheme was handed, by what carried them:
            # CNP packets where the scheme has receivers send them, else ACKs echoing CE marks
            # (DCQCN's default preset, DCTCP)
            ecn_echoes=st["ecn_echoes"],
            congestion_notifications=st["cnps_received"] if core.cnp_packets else st["ecn_echoes"],
            notification_carrier="cnp" if core.cnp_packets else "ack",
            data_packets_sent=st["data_packets_sent"],
            retx_bytes=st["retx_bytes"],
            # receivers: how they take data, what arrived out of order and what arrived again
            delivery=record.delivery, reordered_packets=st["reordered_packets"],
            spurious_retx_bytes=st["spurious_retx_bytes"],
            trimmed=st["trimmed"],                  # data packets switches cut to their header
            multipath_into_ordered=record.multipath and record.delivery == "ordered",
            flows_total=len(flows["fct_ns"]),
            flows_completed=int((~np.isnan(flows["fct_ns"])).sum()),
            data_flows=int((~flows["is_compute"]).sum()), data_bytes_delivered=st["data_bytes_delivered"],
            sim_time_ns=end_ps / PS_PER_NS,
            wall_s=round(wall_s, 4),
            cpu_s=round(cpu_s, 4),
            # the threads it ran on, over its wall time and at its end (they change the wall
            # time only: MACHINE_KEYS)
            threads_mean=round(core.thread_stats["threads_mean"], 2),
            threads_final=core.thread_stats["threads_final"],
            link_crossings_per_cpu_s=round(st["link_crossings"] / cpu_s) if cpu_s > 0 else None,
            packets_in_use_at_end=st["packets_in_use"], packets_peak=st["packets_peak"],
            queue_pairs_in_use_at_end=st["queue_pairs_in_use"], queue_pairs_peak=st["queue_pairs_peak"],
            time_errors=st["time_errors"], link_drops=st["link_drops"], watchdog_drops=st["watchdog_drops"],
            nic_drops=st["nic_drops"], no_route_drops=st["no_route_drops"], watchdog_detections=int(pa["watchdog_detections"].sum()),
            faults=list(record.faults), interrupted=bool(interrupted),
            stopped_at_limit=stop_ps is not None,
            # the parts the packet core ran in (they change the results; the threads do not)
            partition=record.partition, parts=record.parts,
            lookahead_ns=record.lookahead_ps / PS_PER_NS if record.parts > 1 else None)
        summary["drops"] = sum(summary[k] for k in DROP_CAUSES)
        summary["uplink_imbalance"], summary["uplink_imbalance_by_tier"] = uplink_imbalance(pa["tx_bytes"],
                                                                                          record.port_tier)
        cycles = [_cycle_record(r, node, peer) for r in core.deadlock_records]
        summary.update(deadlock_detection=core.deadlock_detection, deadlock=bool(cycles),
                       deadlock_cycles=cycles)
        tl = core.pause_timeline
        summary["pfc_timeline_lost"] = int(tl["lost"])
        fluid = record.mode == "flow"
        summary["fluid_solves"] = st.get("fluid_solves") if fluid else None
        # the calibration the fluid ran with (RunSettings.fluid_calibration), null in packet mode
        summary.update(flow_share=record.fluid_calibration["share"] if fluid else None,
                       flow_startup_ns=record.fluid_calibration["startup"] / PS_PER_NS if fluid else None,
                       flow_calibration=dict(record.fluid_calibration["source"]) if fluid else None)
        if record.fluid_load_balancing is not None:     # flow mode, other than ECMP without entropy
            summary.update(flow_load_balancing=record.fluid_load_balancing,
                           flow_split_fallbacks=st["fluid_split_fallbacks"])
        if fluid:
            _blank(flows, FLOW_MODE_EMPTY_FLOWS)
            _blank(ports, FLOW_MODE_EMPTY_PORTS)
            summary.update(dict.fromkeys(FLOW_MODE_EMPTY_SUMMARY))
        res = cls(flows=flows, ports=ports, summary=summary, switches=core.switch_arrays,
                  node_ids=np.asarray(record.original_ids),
                  pfc_timeline=dict(port=tl["port"], node=node[tl["port"]], peer=node[peer[tl["port"]]],
                                    priority=tl["prio"], pause_start_ns=tl["start_ps"] / PS_PER_NS,
                                    pause_end_ns=np.where(tl["end_ps"] >= 0, tl["end_ps"] / PS_PER_NS,
                                                          np.nan)))
        res.collectives = _collective_table(record.collectives, flows)
        res.iterations = _iteration_table(flows, record.iteration_jobs)
        summary.update(class_summary(flows, res.collectives, res.iterations))
        if record.empty_collectives:
            # the collectives workloads declare on groups of one GPU: none was built
            summary.update(collectives_empty=sum(e.total for e in record.empty_collectives),
                           collectives_empty_why=[e.describe() for e in record.empty_collectives])
        return res

    # --- views -------------------------------------------------------------------------

    @property
    def completed(self) -> np.ndarray:
        """Boolean mask of the flows that finished."""
        return ~np.isnan(self.flows["fct_ns"])

    def data_flows(self) -> dict:
        """The `flows` columns restricted to data flows (compute steps left out)."""
        keep = ~self.flows["is_compute"]
        return {k: v[keep] for k, v in self.flows.items()}

    def describe(self) -> str:
        """A few lines for the terminal."""
        s = self.summary
        done = (f"{s['flows_completed']}/{s['flows_total']} flows completed in "
                f"{s['sim_time_ns'] / 1e3:.1f} us simulated ({s['wall_s']:.2f} s wall, ")
        if s.get("mode") == "flow":            # no packets: no packet counters to show
            lines = [done + f"flow mode, {s['fluid_solves'] or 0:,} rate solves)"]
            if s.get("flow_load_balancing"):
                lines.append(f"load balancing in the fluid: {s['flow_load_balancing']}"
                             + (f" ({s['flow_split_fallbacks']} flows on one ECMP path: too many links to split)"
                                if s["flow_split_fallbacks"] else ""))
        else:
            lines = [done + f"{s['link_crossings']:,} link crossings, "
                            f"{(s['link_crossings_per_cpu_s'] or 0) / 1e6:.2f} M/CPU-s)",
                     f"drops {s['drops']}  PFC pauses {s['pfc_pauses']}  congestion notifications "
                     f"{s['congestion_notifications']} ({_CARRIERS[s['notification_carrier']]})  CNPs {s['cnps']}  "
                     f"NACKs {s['nacks']}  timeouts {s['timeouts']}"
                     + (f"  trimmed {s['trimmed']}" if s.get("trimmed") else "")]
            if s.get("multipath_into_ordered"):
                lines.append(f"ordered receivers under multipath load balancing: {s['reordered_packets']:,} packets "
                             f"out of order, {s['nacks']:,} NACKs, {s['retx_bytes']:,} bytes sent again "
                             f"(nic.delivery: unordered places packets on arrival)")
        lines += _class_lines(s)
        for c in s.get("deadlock_cycles", []):
            lines.append(f"deadlock at priority {c['priority']}, formed at {c['formed_ns'] / 1e3:.1f} us: "
                         f"{' '.join(c['links'])} (flows {' '.join(map(str, c['flows'][:10]))}"
                         f"{' ...' if len(c['flows']) > 10 else ''})")
        if s.get("stalled"):
            n = s["flows_total"] - s["flows_completed"]
            unfinished = f"{n} flow{'s' if n != 1 else ''}"
            if s.get("deadlock"):
                lines.append(f"stalled: {unfinished} unfinished, held by the deadlock above; stopped")
            elif s.get("frozen_clock"):
                lines.append(f"stalled: {unfinished} unfinished, {stall_cause(s)}; stopped")
            else:
                lines.append(f"stalled: {unfinished} unfinished and nothing can move them (no event "
                             f"left, or nothing delivered for a simulated second), {stall_cause(s)}; stopped")
        if s["interrupted"]:
            lines.append("interrupted: results are partial")
        elif s.get("stopped_at_limit") and s["flows_completed"] < s["flows_total"]:
            lines.append(f"the stop time ({short_time(round(s['sim_time_ns'] * PS_PER_NS))}) was reached: "
                         f"{s['flows_total'] - s['flows_completed']} flows and compute steps unfinished")
        return "\n".join(lines)

    # --- files ---------------------------------------------------------------------------

    def write(self, outdir, *, flows_format="csv", hpcc_fct=False) -> list[str]:
        """Write flows, ports and summary files into `outdir`; returns the paths written."""
        os.makedirs(outdir, exist_ok=True)
        written = [self._write_flows(outdir, flows_format)]
        written.append(self._write_ports(os.path.join(outdir, "ports.csv")))
        written.append(self._write_pfc(os.path.join(outdir, "pfc.csv")))
        tables = dict(self.samples or {})
        if self.pfc_timeline is not None and len(self.pfc_timeline["port"]):
            tables["pfc_timeline"] = self.pfc_timeline
        if self.summary.get("faults"):
            fs = self.summary["faults"]
            tables["faults"] = dict(fault=np.arange(len(fs)), kind=np.array([f["kind"] for f in fs], object),
                                    at_ns=np.array([f["at_ns"] for f in fs], float),
                                    end_ns=np.array([np.nan if f["end_ns"] is None else f["end_ns"] for f in fs]),
                                    target=np.array([f["target"] for f in fs], object),
                                    detail=np.array([f["detail"] for f in fs], object))
        if self.summary.get("deadlock_detection") or self.summary.get("deadlock_cycles"):
            tables["deadlocks"] = deadlock_table(self.summary["deadlock_cycles"])
        if self.collectives is not None:
            tables["collectives"] = self.collectives
        if self.iterations is not None:
            tables["iterations"] = self.iterations
        for name, cols in tables.items():
            path = os.path.join(outdir, f"{name}.csv")
            write_csv(path, cols)
            written.append(path)
        path = os.path.join(outdir, "summary.json")
        with open(path, "w") as f:
            json.dump(self.summary, f, indent=2)
            f.write("\n")
        written.append(path)
        if hpcc_fct:
            written.append(self.write_hpcc_fct(os.path.join(outdir, "fct.txt")))
        return written

    def _write_flows(self, outdir, fmt):
        cols = {c: self.flows[c] for c in FLOW_COLUMNS}
        if fmt == "parquet":
            try:
                import pyarrow as pa
                import pyarrow.parquet as pq
            except ImportError as e:
                raise RuntimeError("flows_format 'parquet' needs pyarrow: pip install 'rocesim[parquet]'") from e
            path = os.path.join(outdir, "flows.parquet")
            pq.write_table(pa.table(cols), path)
            return path
        if fmt != "csv":
            raise ValueError(f"flows_format must be 'csv' or 'parquet', got {fmt!r}")
        path = os.path.join(outdir, "flows.csv")
        write_csv(path, cols)
        return path

    def _write_ports(self, path):
        p = self.ports
        cols = {k: p[k] for k in ("node", "peer_node", "rate_bps", "tx_bytes", "tx_packets",
                                  "buffer_drops", "pauses_sent", "ecn_marks", "watchdog_detections",
                                  "watchdog_restorations", "watchdog_drops", "trimmed")}
        cols["paused_ns"] = p["paused_ns"].sum(axis=1)
        cols = {"port": np.arange(len(p["node"])), **cols}
        write_csv(path, cols)
        return path

    def _write_pfc(self, path):
        """Per (port, priority) with any PFC activity: PAUSE frames received and pause time."""
        p = self.ports
        port, prio = np.nonzero(p["paused_ns"] > 0)
        write_csv(path, {"port": port, "node": p["node"][port], "peer_node": p["peer_node"][port],
                         "prio": prio, "paused_ns": p["paused_ns"][port, prio],
                         "pauses_sent_by_peer": p["pauses_sent"][p["peer"][port]]})
        return path

    def write_hpcc_fct(self, path) -> str:
        """The HPCC ns-3 fork's FCT file (one line per finished data flow)."""
        f = self.data_flows()
        done = ~np.isnan(f["fct_ns"])
        with open(path, "w") as out:
            for i in np.flatnonzero(done):
                src, dst = int(f["src"][i]), int(f["dst"][i])
                if self.node_ids is not None:       # HPCC numbers nodes as its topology file does
                    src, dst = int(self.node_ids[src]), int(self.node_ids[dst])
                out.write(f"{_hpcc_ip(src):08x} {_hpcc_ip(dst):08x} {10000 + int(f['flow_id'][i]) % 50000} "
                          f"{int(f['dport'][i]) if 'dport' in f else 100} {int(f['size_bytes'][i])} {round(f['start_ns'][i])} "
                          f"{round(f['fct_ns'][i])} {round(f['ideal_fct_ns'][i])}\n")
        return path


def stall_cause(s) -> str:
    """Why a stalled run without a deadlock stalled, as far as its summary `s` says."""
    frozen = s.get("frozen_clock")
    if frozen:                        # rocesim.run_loop.StallWatch: time stood still
        return (f"simulated time stood still at {frozen['at_ns'] / 1e3:,.3f} us over {frozen['events']:,} "
                f"events (a timer re-armed with zero delay, by a scheme written in Python?)")
    if s.get("mode") == "flow":       # no pauses: a flow without a route is all that stalls
        return f"{s['no_route_drops']} of them found no route to their destination (a loop in `routes`?)"
    # the stall was searched for PFC cycles (Simulation.run), detection on or off
    return "with no PFC deadlock cycle holding them (paused ports: pfc.csv)"


def _percentiles_text(s, prefix, suffix="", scale=1.0, unit="", ps=("p50", "p95", "p99", "max")) -> str:
    return "  ".join(f"{p} {s[f'{prefix}_{p}{suffix}'] * scale:.{2 if not unit else 3}f}{unit}"
                     for p in ps if s.get(f"{prefix}_{p}{suffix}") is not None)


def _class_lines(s) -> list[str]:
    """The terminal's metric lines, one per class of what ran (OUTPUTS.md's definitions):
    FCT slowdown of the network flows (and of the background flows apart when the run also
    has training traffic), collective durations, iteration times."""
    lines = []
    network = s.get("data_flows", 0)
    background = s.get("background_flows", 0)
    mixed = 0 < background < network
    if s.get("slowdown_p50") is not None:
        who = f" (all {network:,} network flows)" if mixed or not background else ""
        lines.append(f"FCT slowdown{who}  {_percentiles_text(s, 'slowdown')}")
    if mixed and s.get("background_slowdown_p50") is not None:
        lines.append(f"FCT slowdown ({background:,} background flows)  {_percentiles_text(s, 'background_slowdown')}")
    if s.get("collectives"):
        lines.append(f"collectives: {s['collectives_completed']}/{s['collectives']} finished"
                     + (f", duration  {_percentiles_text(s, 'collective_duration', '_ns', 1e-6, ' ms', ('p50', 'p99'))}"
                        if s.get("collective_duration_p50_ns") is not None else ""))
    lines += s.get("collectives_empty_why") or []
    if s.get("iterations"):
        done = s["iterations_completed"]
        text = f"training iterations: {done}/{s['iterations']} finished"
        if done:
            text += f", mean {s['iteration_mean_ns'] / 1e6:.3f} ms  p99 {s['iteration_p99_ns'] / 1e6:.3f} ms"
        lines.append(text)
    return lines


def _flow_columns(record: RunRecord, fa, end_ps) -> dict:
    """flows.csv's columns (and a few more) from the core's per-flow arrays `fa` and the
    record's node columns; times in ns.  The picosecond arrays are dropped as soon as
    their columns exist (a million flows: 8 MB each)."""
    start_ps = fa.pop("start_ps")
    finish_ps, ideal_ps, rx_ps = fa.pop("finish_ps"), fa.pop("ideal_fct_ps"), fa.pop("rx_finish_ps")
    fct = np.where(finish_ps >= 0, (finish_ps - start_ps) / PS_PER_NS, np.nan)
    del finish_ps
    ideal = np.where(ideal_ps >= 0, ideal_ps / PS_PER_NS, np.nan)
    rx = np.where(rx_ps >= 0, (rx_ps - start_ps) / PS_PER_NS, np.nan)
    # a flow due after the run ended never started (the core gives when it was due)
    start_ns = np.where((start_ps >= 0) & (start_ps <= end_ps), start_ps / PS_PER_NS, np.nan)
    del ideal_ps, rx_ps, start_ps
    with np.errstate(invalid="ignore", divide="ignore"):
        slowdown = fct / ideal
    column = record.node_column
    return dict(
        flow_id=np.arange(len(fct), dtype=np.int32), src=column("src"), dst=column("dst"),
        size_bytes=column("size"), start_ns=start_ns,         # (0 for a compute step: its fct_ns is its duration)
        fct_ns=fct, ideal_fct_ns=ideal, slowdown=slowdown, rx_fct_ns=rx,
        prio=column("prio"), tag=column("tag"), dport=column("dport"),
        collective=column("collective"), iteration=column("iteration"),
        retx_bytes=fa["retx_bytes"], timeouts=fa["timeouts"], reordered_packets=fa["reordered_packets"],
        spurious_retx_bytes=fa["spurious_retx_bytes"], trimmed=fa["trimmed"],
        is_compute=column("compute").astype(bool), delivered_bytes=fa["delivered_bytes"],
        top_switch=fa["top_switch"])


def _blank(columns: dict, names) -> None:
    """Make `columns[name]` all NaN (an empty cell in the files) for each of `names`."""
    for name in names:
        columns[name] = np.full(np.shape(columns[name]), np.nan)


def _cycle_record(r, node, peer) -> dict:
    """A deadlock found by the core, for summary.json: its queues in the order packets
    flow (each egress port waits on the next one), the switches they belong to, the links
    as "node->peer", the priority and the flows with packets in them."""
    peer = node[peer]
    ports = [int(p) for p in r["ports"]]
    return dict(formed_ns=r["formed_ps"] / PS_PER_NS, detected_ns=r["detected_ps"] / PS_PER_NS,
                priority=int(r["prio"]), priorities=[int(q) for q in r["prios"]],
                switches=[int(node[p]) for p in ports], ports=ports,
                links=[f"{int(node[p])}->{int(peer[p])}" for p in ports],
                flows=[int(f) for f in r["flows"]])


def deadlock_table(cycles) -> dict:
    """deadlocks.csv: one row per cycle (lists joined by spaces)."""
    return dict(cycle=np.arange(len(cycles)),
                formed_ns=np.array([c["formed_ns"] for c in cycles], float),
                detected_ns=np.array([c["detected_ns"] for c in cycles], float),
                priority=np.array([c["priority"] for c in cycles], np.int64),
                length=np.array([len(c["ports"]) for c in cycles], np.int64),
                switches=np.array([" ".join(map(str, c["switches"])) for c in cycles], object),
                ports=np.array([" ".join(map(str, c["ports"])) for c in cycles], object),
                links=np.array([" ".join(c["links"]) for c in cycles], object),
                flows=np.array([" ".join(map(str, c["flows"])) for c in cycles], object))


def _hpcc_ip(node: int) -> int:
    """The HPCC fork's address of a node: 11.x.y.1 with x.y from the node id."""
    return 0x0B000001 + (node // 256) * 0x10000 + (node % 256) * 0x100


def _collective_table(records, flows) -> dict | None:
    """Per collective: when its first node started and its last byte arrived (NaN if it
    never started or did not finish), and nccl-tests' algorithm and bus bandwidth."""
    if not records:
        return None
    start, rx = flows["start_ns"], flows["start_ns"] + flows["rx_fct_ns"]
    out = {k: [] for k in ("collective_id", "op", "algorithm", "ranks", "size_bytes", "start_ns",
                           "finish_ns", "duration_ns", "job")}
    # records, or batches of them (rows of node ids: `training.collectives.CollectiveBatch`)
    for r in (records.batches() if hasattr(records, "batches") else records):
        first, every = np.atleast_2d(r.start_nodes), np.atleast_2d(r.flows)
        nodes = np.concatenate([first, every, np.atleast_2d(r.done_nodes)], axis=1)
        s, f = np.fmin.reduce(start[first], axis=1), np.max(rx[nodes], axis=1)     # NaN if unfinished
        m = s.size
        out["collective_id"].append(np.atleast_1d(r.ids if hasattr(r, "ids") else r.id))
        out["op"] += [r.op] * m
        out["algorithm"] += [r.algorithm] * m
        out["ranks"].append(np.full(m, np.shape(r.ranks)[-1]))
        out["size_bytes"].append(np.full(m, r.size))
        out["start_ns"].append(s)
        out["finish_ns"].append(f)
        out["duration_ns"].append(f - s)
        out["job"] += [r.job] * m
    table = {k: np.asarray(v) if k in ("op", "algorithm", "job") else np.concatenate(v) for k, v in out.items()}
    job = table.pop("job")
    table["algbw_gbps"], table["busbw_gbps"] = bandwidths_gbps(table)
    table["job"] = job
    return table


def _iteration_table(flows, jobs=None) -> dict | None:
    """Per training iteration: first node start to last node end, and the job (workload)
    it belongs to.  An iteration that did not finish (the stop time came first, or the run
    was interrupted) has an empty finish and duration; one that never started, an empty
    start too."""
    it = flows["iteration"]
    sel = it >= 0
    if not sel.any():
        return None
    it_sel = it[sel]
    ids = np.flatnonzero(np.bincount(it_sel))
    # per iteration id (no sort: min and max are exact in any order)
    start = np.full(ids[-1] + 1, np.nan)
    np.fmin.at(start, it_sel, flows["start_ns"][sel])                # NaN only if no node started
    end = flows["start_ns"][sel]
    end += np.where(flows["is_compute"][sel], flows["fct_ns"][sel], flows["rx_fct_ns"][sel])
    finish = np.full(ids[-1] + 1, -np.inf)
    with np.errstate(invalid="ignore"):
        np.maximum.at(finish, it_sel, end)                          # NaN if any node unfinished
    start, finish = start[ids], finish[ids]
    job = np.array([(jobs or {}).get(int(i), "") for i in ids], dtype=object)
    table = dict(iteration=ids, start_ns=start, finish_ns=finish, duration_ns=finish - start)
    del end, sel, it_sel                         # (a node's worth each, while the breakdown runs)
    table.update(iteration_breakdown(flows, table))
    table["job"] = job
    return table


def read_csv(path) -> dict:
    """Read a CSV written by rocesim back into numpy columns: numbers as floats (empty
    cells NaN), other columns as strings."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    names, body = rows[0], rows[1:]
    out = {}
    for j, name in enumerate(names):
        vals = [r[j] for r in body]
        try:
            out[name] = np.array([float(v) if v != "" else np.nan for v in vals])
        except ValueError:
            out[name] = np.array(vals)
    return out


read_flows_csv = read_csv
