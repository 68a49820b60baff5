"""Sweeps (rocesim.sweep): expansion, checks, run folders, resume, failures, stopping.

Expansion and names, every run checked before any starts, all-or-nothing run folders,
resume (never of a run made from something else), failures of a run or of its folder, and
stopping with Ctrl-C or SIGTERM (no traceback, no partial run, no surviving worker)."""
import contextlib
import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

import rocesim
from rocesim import sweep
from rocesim.cc import builtin_schemes
from rocesim.errors import ScenarioError
from rocesim.sweep import run_folder
from helpers import ROOT, same_rocesim_env


BASE = {"topology": {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"}},
        "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "100KB"},
                    {"kind": "cdf", "distribution": "websearch", "load": 0.3, "duration": "20us"}]}

# runs of a fraction of a CPU second each: long enough to be caught running by a signal
SLOW_BASE = {"topology": {"kind": "star", "hosts": 8, "link": {"rate": "100Gbps", "delay": "1us"}},
             "traffic": [{"kind": "incast", "senders": [1, 2, 3, 4, 5, 6, 7], "receiver": 0, "size": "40MB"}]}


def test_grid_zip_seeds_expand_in_order_with_readable_names():
    sw = sweep.expand({"base": BASE,
                       "grid": {"cc.scheme": ["hpcc", "dcqcn", "none"], "traffic[1].load": [0.3, 0.5]},
                       "zip": {"nic.ack_every": [1, 2], "switch.buffer": ["16MB", "32MB"]},
                       "seeds": [1, 2]})
    assert len(sw.runs) == 3 * 2 * 2 * 2
    assert sw.param_names == ["cc.scheme", "traffic[1].load", "nic.ack_every", "switch.buffer", "seed"]
    names = [r.name for r in sw.runs]
    assert len(set(names)) == 24
    assert names[0] == "cc.scheme=hpcc,traffic[1].load=0.3,nic.ack_every=1,switch.buffer=16MB,seed=1"
    assert names[1] == "cc.scheme=hpcc,traffic[1].load=0.3,nic.ack_every=1,switch.buffer=16MB,seed=2"
    assert names[2] == "cc.scheme=hpcc,traffic[1].load=0.3,nic.ack_every=2,switch.buffer=32MB,seed=1"
    assert names[-1] == "cc.scheme=none,traffic[1].load=0.5,nic.ack_every=2,switch.buffer=32MB,seed=2"
    # zipped keys vary together: never ack_every=1 with 32MB
    assert not any("ack_every=1,switch.buffer=32MB" in n for n in names)
    r = sw.runs[5]
    assert r.overrides == tuple(f"{k}={json.dumps(v)}" for k, v in r.params.items())
    assert sweep.expand({"base": BASE, "grid": {"cc.scheme": ["hpcc", "dcqcn", "none"],
                                                "traffic[1].load": [0.3, 0.5]},
                         "zip": {"nic.ack_every": [1, 2], "switch.buffer": ["16MB", "32MB"]},
                         "seeds": [1, 2]}).runs[5].name == r.name            # stable


def test_null_leaves_a_key_unset_and_out_of_the_name_and_values_are_escaped():
    sw = sweep.expand({"base": BASE, "zip": {"cc.scheme": ["dcqcn", "dcqcn"],
                                             "cc.params.window": [None, "bdp"]},
                       "set": {"stop": "1ms"}})
    assert [r.name for r in sw.runs] == ["cc.scheme=dcqcn", "cc.scheme=dcqcn,cc.params.window=bdp"]
    assert sw.runs[0].overrides == ('stop="1ms"', 'cc.scheme="dcqcn"')
    assert sweep.run_name({"traffic[0].senders": [1, 2], "x": "a/b c"}) == \
        "traffic[0].senders=%5B1%2C2%5D,x=a%2Fb%20c".replace("%5B", "[").replace("%5D", "]")


def test_scenario_files_vary_by_the_scenario_key(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"grid": {"scenario": ["a.yaml", "b.yaml"],
                                                              "cc.scheme": ["none"]}}, sort_keys=False))
    sw = sweep.load(tmp_path / "s.yaml")
    assert [r.name for r in sw.runs] == ["scenario=a,cc.scheme=none", "scenario=b,cc.scheme=none"]
    assert sw.runs[1].base == str(tmp_path / "b.yaml")


@pytest.mark.parametrize("raw, key", [
    ({"grid": {"cc.scheme": ["none"]}}, "base"),
    ({"base": BASE, "zip": {"a.b": [1, 2], "c.d": [1]}}, "zip"),
    ({"base": BASE, "grid": {"cc.scheme": []}}, "grid.cc.scheme"),
    ({"base": BASE, "grid": {"cc.scheme": ["none", "none"]}}, "grid.cc.scheme"),
    ({"base": BASE, "seeds": [1, -1]}, "seeds"),
    ({"base": BASE, "grid": {"traffic[5].load": [0.1]}}, "--set traffic[5].load"),
    ({"base": BASE, "grids": {}}, "grids"),
])
def test_sweep_file_mistakes_are_one_error_naming_the_key(raw, key):
    with pytest.raises(ScenarioError) as e:
        sweep.expand(raw)
    assert e.value.key == key


def _index(root):
    with open(os.path.join(root, "index.csv"), newline="") as f:
        return list(csv.DictReader(f))


def _cli(capsys, *argv):
    from rocesim import cli
    code = cli.main(["sweep", *map(str, argv)])
    return code, capsys.readouterr()


def test_rerun_runs_exactly_the_missing_and_failed_runs(tmp_path):
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "dctcp", "hpcc"]}, "seeds": [1, 2]})
    out = str(tmp_path / "out")
    rep = sweep.run_runs(sw, out, processes=2, progress=False)
    assert (rep.total, rep.skipped, rep.done, rep.failed, rep.interrupted) == (6, 0, 6, 0, 0)
    names = [r.name for r in sw.runs]
    stamps = {n: os.path.getmtime(os.path.join(out, n, "summary.json")) for n in names}
    import shutil
    shutil.rmtree(os.path.join(out, names[1]))                              # missing
    with open(os.path.join(out, names[4], run_folder.ERROR_FILE), "w") as f:       # failed earlier
        f.write("boom\n")
    assert [run_folder.state(out, n) for n in names].count(run_folder.DONE) == 4
    rep = sweep.run_runs(sw, out, processes=2, progress=False)
    assert (rep.skipped, rep.done, rep.failed) == (4, 2, 0)
    for n in names:
        assert run_folder.state(out, n) == run_folder.DONE
        if n not in (names[1], names[4]):
            assert os.path.getmtime(os.path.join(out, n, "summary.json")) == stamps[n]
    rows = _index(out)
    assert [r["run"] for r in rows] == names
    assert {r["status"] for r in rows} == {"ok"}
    assert {r["cc.scheme"] for r in rows} == {"none", "dctcp", "hpcc"}
    assert all(float(r["slowdown_p99"]) >= float(r["slowdown_p50"]) >= 1.0 for r in rows)
    with open(os.path.join(out, names[0], run_folder.PARAMS_FILE)) as f:
        assert json.load(f)["params"] == {"cc.scheme": "none", "seed": 1}


# a scheme that raises on its third ACK (tests/pyschemes.py): a run that fails while it runs
BROKEN = "pyschemes:Broken"


def test_a_failed_run_records_its_error_and_the_others_go_on(tmp_path):
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", BROKEN, "hpcc"]}})
    out = str(tmp_path / "out")
    rep = sweep.run_runs(sw, out, processes=2, progress=False)
    assert (rep.done, rep.failed) == (2, 1)
    bad = os.path.join(out, sw.runs[1].name)
    assert sorted(os.listdir(bad)) == ["error.txt", "params.json"]      # no half result beside it
    with open(os.path.join(bad, "error.txt")) as f:
        assert "scheme bug on purpose" in f.read()
    rows = {r["run"]: r for r in _index(out)}
    assert rows[sw.runs[1].name]["status"] == "failed"
    assert rows[sw.runs[1].name]["error"] == "ZeroDivisionError: scheme bug on purpose"
    assert rows[sw.runs[2].name]["status"] == "ok"
    rep = sweep.run_runs(sw, out, processes=1, progress=False)        # retried, fails again
    assert (rep.skipped, rep.done, rep.failed) == (2, 0, 1)


def test_a_deadlocked_run_is_complete_with_its_status(tmp_path):
    ring = os.path.join(ROOT, "scenarios", "pathologies", "ring_third_flow.yaml")
    sw = sweep.expand({"base": os.path.basename(ring), "set": {"stop": "3ms"}, "seeds": [1]},
                      os.path.dirname(ring))
    out = str(tmp_path / "out")
    rep = sweep.run_runs(sw, out, processes=1, progress=False)
    assert (rep.done, rep.failed) == (1, 0)
    assert _index(out)[0]["status"] == "deadlock"


# --- stopping: real `rocesim sweep` processes and signals ----------------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads worker pids from /proc")

def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except OSError:
        return ""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                       # a zombie is dead, only not yet reaped
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start(sweep_file, out, jobs=2):
    return subprocess.Popen([sys.executable, "-m", "rocesim", "sweep", str(sweep_file), "-o", str(out),
                             "-j", str(jobs)], cwd=os.path.dirname(str(out)), env=same_rocesim_env(),
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _done_runs(out):
    return [d for d in os.listdir(out) if os.path.isfile(os.path.join(out, d, "summary.json"))] \
        if os.path.isdir(out) else []


def _interrupt(proc, out, sig, at_least):
    """Wait until `at_least` more runs are done, then signal; check how the sweep stopped."""
    deadline = time.monotonic() + 120
    while len(_done_runs(out)) < at_least and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be interrupted"
    workers = _children(proc.pid)
    assert workers
    sent = time.monotonic()
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)               # as a terminal's Ctrl-C: the whole process group
    else:
        proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=30)
    took = time.monotonic() - sent
    assert took < 5.0, f"took {took:.1f} s to stop"
    assert proc.returncode == (130 if sig == signal.SIGINT else 128 + sig)
    assert "Traceback" not in stderr and "Traceback" not in stdout
    assert "interrupted" in stderr
    deadline = time.monotonic() + 3
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "a worker outlived the sweep"
    for d in os.listdir(out):                  # only complete runs, nothing partial
        if d not in ("index.csv", "index.parquet", run_folder.LOCK_FILE):
            assert os.path.isfile(os.path.join(out, d, "summary.json")), d
            with open(os.path.join(out, d, "summary.json")) as f:
                assert json.load(f)["interrupted"] is False
    return len(_done_runs(out))


@linux_only
def test_done_when_24_runs_interrupted_twice_and_resumed_are_exactly_24(tmp_path):
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"base": SLOW_BASE,
                                    "grid": {"cc.scheme": ["none", "dctcp", "hpcc"],
                                             "nic.ack_every": [1, 2]},
                                    "seeds": [1, 2, 3, 4]}))
    out = tmp_path / "out"
    first = _interrupt(_start(spec, out), str(out), signal.SIGINT, at_least=1)
    assert 1 <= first < 24
    second = _interrupt(_start(spec, out), str(out), signal.SIGINT, at_least=first + 1)
    assert first < second < 24
    proc = _start(spec, out)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert f"({second} skipped: done before)" in stderr
    assert "Traceback" not in stderr
    assert len(_done_runs(str(out))) == 24
    rows = _index(str(out))
    assert len(rows) == 24 and {r["state"] for r in rows} == {"done"}
    assert sorted(os.listdir(out)) == sorted(_done_runs(str(out)) + ["index.csv"] +          # and no .lock
                                             (["index.parquet"] if os.path.isfile(out / "index.parquet") else []))


@linux_only
def test_sigterm_stops_the_sweep_and_leaves_no_worker(tmp_path):
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"base": SLOW_BASE, "grid": {"cc.scheme": ["none", "dctcp"]},
                                    "seeds": [1, 2, 3]}))
    out = tmp_path / "out"
    done = _interrupt(_start(spec, out), str(out), signal.SIGTERM, at_least=1)
    assert 1 <= done < 6
    assert len(_index(str(out))) == done


def test_progress_off_a_terminal_is_plain_lines(tmp_path):
    import io
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "dctcp"]}})
    out = str(tmp_path / "out")
    sweep.run_runs(sw, out, processes=1, progress=False)
    stream = io.StringIO()
    rep = sweep.run_runs(sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "dctcp", "hpcc"]}}),
                         out, processes=1, stream=stream, interval_s=0.0)
    text = stream.getvalue()
    assert "\r" not in text
    last = text.strip().splitlines()[-1]
    assert last.startswith("[sweep] 3/3 done (2 skipped: done before), 0 failed") and "elapsed" in last
    assert rep.skipped == 2 and rep.done == 1


def test_table_from_index_means_over_seeds(tmp_path, capsys):
    from rocesim import cli
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "hpcc"]}, "seeds": [1, 2]})
    out = str(tmp_path / "out")
    sweep.run_runs(sw, out, processes=2, progress=False)
    rows = _index(out)
    assert cli.main(["table", out, "--metric", "slowdown_p99", "--metric", "pfc_pauses"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # metrics and parameters in words, each metric followed by the spread over seeds
    assert lines[0] == ("| congestion-control scheme | FCT slowdown p99, all network flows | min-max "
                        "| PFC pauses | min-max | runs |")
    hpcc = [float(r["slowdown_p99"]) for r in rows if r["cc.scheme"] == "hpcc"]
    assert lines[3] == f"| hpcc | {sum(hpcc) / 2:.4g} | {min(hpcc):.4g}-{max(hpcc):.4g} | 0 | 0-0 | 2 |"
    assert cli.main(["table", out, "--rows", "seed", "--cols", "cc.scheme", "--metric", "slowdown_p50"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == \
        ("| seed | FCT slowdown p50, all network flows, congestion-control scheme = none "
         "| FCT slowdown p50, all network flows, congestion-control scheme = hpcc |")
    assert cli.main(["table", out, "--rows", "cc.scheme", "--cols", "seed", "--metric", "slowdown_p50"]) == 0
    assert "min-max" not in capsys.readouterr().out          # one run per cell: no spread to show
    assert cli.main(["table", out, "--metric", "nope"]) == 2


def test_shipped_sweep_files_expand(tmp_path):
    for name, n in (("hpcc_paper", 28), ("khan2022", 16)):
        sw = sweep.load(os.path.join(ROOT, "sweeps", f"{name}.yaml"))
        assert len(sw.runs) == n
        assert all(os.path.isfile(r.base) for r in sw.runs)
    assert sweep.load(os.path.join(ROOT, "sweeps", "hpcc_paper.yaml")).runs[1].name == \
        "scenario=websearch30,cc.scheme=dcqcn,cc.params.window=bdp"


# the built-in schemes a shipped sweep that varies cc.scheme leaves out, and why
NOT_SWEPT = {"hpcc_paper": {"none"},          # the HPCC paper compares schemes, not PFC alone
             # transports, each with its own scheme: RoCE's DCQCN, the Ultra Ethernet transport's NSCC
             "gallery_transports": set(builtin_schemes()) - {"dcqcn", "nscc"}}


@pytest.mark.parametrize("path", sorted((ROOT / "sweeps").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_sweeps_compare_every_builtin_scheme(path):
    """A new scheme file joins the gallery and the experiments: their lists are the registry's."""
    swept = {r.params["cc.scheme"] for r in sweep.load(path).runs if "cc.scheme" in r.params}
    assert not swept or swept == set(builtin_schemes()) - NOT_SWEPT.get(path.stem, set())


def test_a_second_sweep_into_the_same_folder_is_refused(tmp_path):
    out = str(tmp_path / "out")
    os.makedirs(out)
    sw = sweep.expand({"base": BASE, "seeds": [1]})
    with run_folder.sweep_lock(out):
        with pytest.raises(ScenarioError) as e:
            sweep.run_runs(sw, out, processes=1, progress=False)
        assert "another rocesim sweep" in str(e.value)
    assert sweep.run_runs(sw, out, processes=1, progress=False).done == 1
    assert not os.path.exists(os.path.join(out, run_folder.LOCK_FILE))          # a finished sweep leaves no lock


def test_the_readme_sweep_example_expands():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text[text.index("## Sweeps"):]
    example = section[section.index("```yaml") + 7:section.index("```", section.index("```yaml") + 7)]
    sw = sweep.expand(yaml.safe_load(example), os.path.join(ROOT, "sweeps"))
    assert len(sw.runs) == 2 * 2 * 2 * 2
    assert "cc.scheme=hpcc,traffic[0].load=0.5,cc.params.window=bdp,switch.buffer=32MB,seed=2" in \
        [r.name for r in sw.runs]


def test_a_sweep_runs_from_a_thread_too(tmp_path):
    import threading
    reports = []
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "hpcc"]}})
    t = threading.Thread(target=lambda: reports.append(sweep.run_runs(sw, str(tmp_path / "o"), 2, progress=False)))
    t.start()
    t.join(120)
    assert reports and (reports[0].done, reports[0].failed) == (2, 0)


def test_index_parquet_matches_the_csv(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "hpcc", BROKEN]}})
    out = str(tmp_path / "out")
    rep = sweep.run_runs(sw, out, processes=2, progress=False)
    assert rep.index == [os.path.join(out, "index.csv"), os.path.join(out, "index.parquet")]
    table = pq.read_table(rep.index[1]).to_pydict()
    rows = _index(out)
    assert table["run"] == [r["run"] for r in rows] and len(rows) == 3
    assert table["status"] == [r["status"] for r in rows]
    assert [x if x is not None else "" for x in table["slowdown_p99"]] == \
        [float(r["slowdown_p99"]) if r["slowdown_p99"] else "" for r in rows]


@linux_only
def test_workers_die_with_a_killed_parent(tmp_path):
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"base": SLOW_BASE, "grid": {"cc.scheme": ["none", "dctcp"]}, "seeds": [1, 2]}))
    proc = _start(spec, tmp_path / "out")
    deadline = time.monotonic() + 60
    workers = []
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        workers = [w for w in _children(proc.pid) if "spawn_main" in _cmdline(w)]
        time.sleep(0.05)
    assert len(workers) == 2
    proc.kill()                                    # SIGKILL: no clean-up in the parent at all
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 3
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "a worker outlived its killed parent"


# --- resume never presents a run made from something else as current ------------------------

CDF_POINTS = "1000 0\n20000 50\n100000 100\n"


def _sweep_reading_a_file(tmp_path):
    """sweep.yaml over base.yaml, whose traffic reads sizes.txt; two runs."""
    (tmp_path / "sizes.txt").write_text(CDF_POINTS)
    base = {"topology": BASE["topology"],
            "traffic": [{"kind": "cdf", "distribution": {"file": "sizes.txt"}, "load": 0.3, "duration": "20us"}]}
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"base": "base.yaml", "grid": {"cc.scheme": ["none", "dctcp"]},
                                    "set": {"switch.buffer": "16MB"}}))
    return spec, tmp_path / "out"


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


CHANGES = {   # what a user changes between two sweeps into the same folder
    "set": lambda tmp, out: _edit(tmp / "sweep.yaml", "16MB", "8MB"),
    "base scenario": lambda tmp, out: _edit(tmp / "base.yaml", "load: 0.3", "load: 0.4"),
    "file it reads": lambda tmp, out: (tmp / "sizes.txt").write_text(CDF_POINTS.replace("20000", "30000")),
    "no record": lambda tmp, out: [(out / d / "provenance.json").unlink(missing_ok=True) for d in _done_runs(str(out))],
}


@pytest.mark.parametrize("change", CHANGES)
def test_resume_refuses_runs_made_from_something_else_until_rerun_stale(tmp_path, capsys, change):
    spec, out = _sweep_reading_a_file(tmp_path)
    assert _cli(capsys, spec, "-o", out, "-q", "-j", "2")[0] == 0
    names = sorted(_done_runs(str(out)))
    stamps = {n: os.path.getmtime(out / n / "summary.json") for n in names}
    CHANGES[change](tmp_path, out)
    before = sorted(os.listdir(out))

    code, cap = _cli(capsys, spec, "-o", out, "-q")
    assert code == 2
    assert cap.err.count("\n") == 1 and cap.err.startswith(f"rocesim: error: {out}: 2 finished run(s) ")
    assert all(n in cap.err for n in names) and "--rerun-stale" in cap.err
    assert ("older rocesim" in cap.err) == (change == "no record")
    assert sorted(os.listdir(out)) == before                  # nothing started, nothing left (no .lock)
    assert {n: os.path.getmtime(out / n / "summary.json") for n in names} == stamps
    code, cap = _cli(capsys, spec, "-o", out, "--dry-run")
    assert code == 0 and sorted(cap.out.split()) == sorted(names + ["stale", "stale"])

    code, cap = _cli(capsys, spec, "-o", out, "-q", "--rerun-stale")
    assert code == 0 and "2/2 runs done (0 before this sweep)" in cap.out
    assert all(os.path.getmtime(out / n / "summary.json") != stamps[n] for n in names)
    assert {r["state"] for r in _index(out)} == {"done"}
    digests = sweep.check(sweep.load(spec).runs)
    for n in names:                                            # what the run was made from
        with open(out / n / "provenance.json") as f:
            made_from = json.load(f)
        assert made_from["sha256"] == digests[n] and made_from["rocesim"] == rocesim.__version__
        assert made_from["files"] == {"sizes.txt": hashlib.sha256((tmp_path / "sizes.txt").read_bytes()).hexdigest(),
                                      "partition:level": hashlib.sha256(b"leaves").hexdigest()}   # auto, in parts
        assert made_from["scenario"]["switch"] == {"buffer": "8MB" if change == "set" else "16MB"}
        assert made_from["scenario"]["cc"] == {"scheme": n.split("=")[1]}
    assert _cli(capsys, spec, "-o", out, "-q")[0] == 0         # current now: skipped


def test_provenance_names_every_file_a_run_reads_and_is_documented(tmp_path):
    import re
    import chakra_writer as w
    from rocesim.sweep import provenance
    rank = [w.node(1, duration_us=3), w.coll(2, w.ALL_TO_ALL, 300_000, data_deps=[1])]
    w.write_trace(tmp_path / "trace", [rank] * 4)
    base = {"topology": BASE["topology"], "cc": {"scheme": BROKEN},
            "traffic": [{"kind": "workload", "model": {"chakra": "trace"}, "algorithms": {"alltoall": "pairwise"}}]}
    run = sweep.expand({"base": base, "seeds": [1]}, str(tmp_path)).runs[0]
    made_from = provenance.resolve(run)[1]
    assert set(made_from["files"]) == {f"trace.{r}.et" for r in range(4)} | {"python:pyschemes", "partition:level"}
    assert made_from["scenario"]["seed"] == 1 and made_from["base_dir"] == str(tmp_path)
    w.write_trace(tmp_path / "trace", [rank + [w.node(3, duration_us=1, data_deps=[2])]] * 4)
    assert provenance.resolve(run)[1]["sha256"] != made_from["sha256"]
    with open(os.path.join(ROOT, "OUTPUTS.md")) as f:
        documented = set(re.findall(r"`([^`\s]+)`", f.read()))
    assert {"provenance.json", *made_from} <= documented


def test_a_flow_mode_run_is_stale_when_the_calibration_it_used_changes(tmp_path, monkeypatch):
    """The share and startup a flow-mode run takes from rocesim/cc/flow_calibration.json are
    part of what it was made from; a packet-level run does not use them."""
    from rocesim.sweep import provenance
    base = {"topology": BASE["topology"], "cc": {"scheme": "dcqcn"}, "flow": {"share": "auto", "startup": "auto"},
            "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "64KB"}]}
    runs = {m: sweep.expand({"base": base, "set": {"mode": m}}, str(tmp_path)).runs[0] for m in ("flow", "packet")}
    before = {m: provenance.resolve(r)[1] for m, r in runs.items()}
    assert "flow:calibration" in before["flow"]["files"] and "flow:calibration" not in before["packet"]["files"]
    monkeypatch.setattr("rocesim.cc.calibration.flow_calibration", lambda name: (0.5, 1000))
    after = {m: provenance.resolve(r)[1]["sha256"] for m, r in runs.items()}
    assert after["flow"] != before["flow"]["sha256"] and after["packet"] == before["packet"]["sha256"]


def test_sweep_runs_take_one_thread_unless_the_sweep_file_sets_threads(tmp_path, monkeypatch):
    """A sweep spreads its runs over the cores: each run on 1 thread, whatever the base
    scenario says, unless `set:`, `grid:` or `zip:` give `threads`."""
    from rocesim import Simulation
    asked = []
    real_run = Simulation.run

    def spy(sim, *args, **kw):
        asked.append(kw["threads"])
        return real_run(sim, *args, **kw)
    monkeypatch.setattr(Simulation, "run", spy)
    base = {**BASE, "threads": 4}
    sweeps = [({"seeds": [1]}, [False], [1]),
              ({"zip": {"threads": [None, 2]}}, [False, True], [1, 2]),     # (null: the base's key)
              ({"set": {"threads": 3}}, [True], [3]),
              ({"grid": {"threads": ["auto", 2]}}, [True, True], ["auto", 2])]
    for k, (spec, sets, threads) in enumerate(sweeps):
        asked.clear()
        runs = sweep.expand({"base": base, **spec}, str(tmp_path)).runs
        assert [r.sets("threads") for r in runs] == sets
        for run in runs:
            assert run_folder.run_one(run, str(tmp_path / str(k)))["state"] == run_folder.DONE
        assert asked == threads


def test_threads_are_not_what_a_run_is_made_from_and_the_partition_is(tmp_path):
    """The outputs do not depend on the threads: a sweep that changes them keeps its runs
    current; a run in parts records its level ('auto' resolved: the same digest as the level
    it resolves to), a run in one part nothing new (digests as before parts existed)."""
    from rocesim.sweep import provenance
    base = {"topology": {"kind": "fat_tree", "k": 4, "link": {"rate": "100Gbps", "delay": "1us"}},
            "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "64KB"}]}

    def made_from(**fixed):
        return provenance.resolve(sweep.expand({"base": base, "set": fixed}, str(tmp_path)).runs[0])[1]
    plain = made_from()
    assert made_from(threads=2)["sha256"] == made_from(threads="auto")["sha256"] == plain["sha256"]
    assert "threads" not in made_from(threads=2)["scenario"]
    leaves, one = made_from(partition="leaves"), made_from(partition="none")
    assert "partition:level" in leaves["files"] and "partition:level" not in one["files"]
    assert plain["files"]["partition:level"] == leaves["files"]["partition:level"]
    assert len({leaves["sha256"], made_from(partition="pods")["sha256"], one["sha256"]}) == 3


def test_a_refused_resume_leaves_the_stale_runs_out_of_the_index_and_table(tmp_path, capsys):
    from rocesim import cli
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "hpcc"]}})
    out = str(tmp_path / "out")
    sweep.run_runs(sw, out, processes=2, progress=False)
    with contextlib.suppress(FileNotFoundError):                          # as an older rocesim left it
        os.remove(os.path.join(out, sw.runs[1].name, "provenance.json"))
    with pytest.raises(ScenarioError) as e:
        sweep.run_runs(sw, out, processes=2, progress=False)
    assert (e.value.changed, e.value.unrecorded) == ([], [sw.runs[1].name])
    rows = {r["run"]: r for r in _index(out)}
    assert rows[sw.runs[0].name]["state"] == "done" and rows[sw.runs[0].name]["slowdown_p99"]
    assert rows[sw.runs[1].name]["state"] == "stale" and rows[sw.runs[1].name]["slowdown_p99"] == ""
    assert "--rerun-stale" in rows[sw.runs[1].name]["error"]
    assert cli.main(["table", out, "--metric", "slowdown_p99"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[2:] == [f"| none | {float(rows[sw.runs[0].name]['slowdown_p99']):.4g} | 1 |"]


# --- every run is checked before any starts ----------------------------------------------------

@pytest.mark.parametrize("grid, key, bad", [
    ({"cc.schem": ["none", "hpcc"]}, "cc.schem", "cc.schem=none"),                  # a key typo
    ({"traffic[0].size": ["100KB", "-5KB"]}, "traffic[0].size", "traffic[0].size=-5KB"),
    ({"cc.scheme": ["none", "nosuch"]}, "cc.scheme", "cc.scheme=nosuch"),
])
@pytest.mark.parametrize("mode", [[], ["--dry-run"]])
def test_every_run_is_checked_before_any_starts(tmp_path, capsys, grid, key, bad, mode):
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"base": BASE, "grid": grid}))
    out = tmp_path / "out"
    code, cap = _cli(capsys, spec, "-o", out, "-q", *mode)
    assert code == 2
    assert cap.err.startswith(f"rocesim: error: {key}: ") and cap.err.endswith(f" (run {bad})\n")
    assert cap.err.count("\n") == 1 and cap.out == ""
    assert not out.exists()                                   # no run folder, no .lock, no .incomplete


# --- a folder that cannot be written fails its run, never the sweep ------------------------------

def _permissions_bind_us() -> bool:
    """Whether a read-only folder stops this process writing (not as root, who writes anywhere)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o555)
        try:
            open(os.path.join(d, "probe"), "w").close()
            return False
        except PermissionError:
            return True
        finally:
            os.chmod(d, 0o755)


# root writes into read-only folders (unless its capabilities are dropped): files in the way then
needs_permissions = pytest.mark.skipif(not _permissions_bind_us(), reason="root writes into read-only folders")


def _readonly_failed_run(out, name):
    """An earlier failed attempt whose folder cannot be written (only for a user not root)."""
    os.makedirs(out / name)
    (out / name / run_folder.ERROR_FILE).write_text("boom\n")
    os.chmod(out / name, 0o555)


BLOCKERS = {   # (make a folder unwritable, which runs it fails)
    "a file in a run's place": (lambda out, names: (out / names[1]).write_text("in the way"), [1]),
    "a file in .incomplete's place": (lambda out, names: (out / run_folder.INCOMPLETE).write_text("in the way"), [0, 1, 2]),
    "a read-only run folder": (lambda out, names: _readonly_failed_run(out, names[1]), [1]),
}


@pytest.mark.parametrize("blocker", [pytest.param(b, marks=[needs_permissions] if "read-only" in b else [])
                                     for b in BLOCKERS])
def test_a_folder_that_cannot_be_written_fails_its_run_and_the_sweep_goes_on(tmp_path, blocker):
    import io
    sw = sweep.expand({"base": BASE, "grid": {"cc.scheme": ["none", "dctcp", "hpcc"]}})
    names = [r.name for r in sw.runs]
    out = tmp_path / "out"
    out.mkdir()
    block, failing = BLOCKERS[blocker]
    block(out, names)
    stream = io.StringIO()
    try:
        rep = sweep.run_runs(sw, str(out), processes=2, stream=stream, interval_s=0.0)
    finally:
        if (out / names[1]).is_dir():
            os.chmod(out / names[1], 0o755)
    assert (rep.done, rep.failed) == (3 - len(failing), len(failing))
    lines = stream.getvalue().splitlines()
    rows = {r["run"]: r for r in _index(out)}
    for i, n in enumerate(names):
        if i in failing:
            reason = next(x for x in lines if x.startswith(f"[sweep] failed: {n}: "))
            assert "cannot write the run's folder: " in reason and "Traceback" not in reason
            assert rows[n]["state"] == "failed" and rows[n]["error"] in reason
        else:
            assert rows[n]["state"] == "done"
    assert not (out / run_folder.LOCK_FILE).exists()


@pytest.mark.parametrize("where, reason", [
    ("file/out", "cannot create the output folder"),                     # its parent is a file
    pytest.param("readonly", "cannot write into the output folder", marks=needs_permissions),
])
def test_an_output_folder_that_cannot_be_written_is_one_error(tmp_path, capsys, where, reason):
    (tmp_path / "file").write_text("not a folder")
    (tmp_path / "readonly").mkdir(mode=0o555)
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"base": BASE}))
    code, cap = _cli(capsys, spec, "-o", tmp_path / where, "-q")
    assert code == 2 and cap.err.count("\n") == 1
    assert cap.err.startswith(f"rocesim: error: {tmp_path / where}: {reason}")


def test_a_full_disk_fails_the_run_with_the_reason(tmp_path, monkeypatch):
    import builtins
    import errno
    out = str(tmp_path / "out")
    real_open = builtins.open

    def full_disk(path, mode="r", *args, **kw):
        if any(c in mode for c in "wax") and str(path).startswith(out):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, mode, *args, **kw)

    monkeypatch.setattr(builtins, "open", full_disk)
    run = sweep.expand({"base": BASE}).runs[0]
    outcome = run_folder.run_one(run, out)
    assert outcome["state"] == run_folder.FAILED and "No space left on device" in outcome["error"]
    assert not os.path.exists(os.path.join(out, run.name)) and os.listdir(os.path.join(out, run_folder.INCOMPLETE)) == []


def test_the_lock_is_gone_when_the_index_cannot_be_written(tmp_path, monkeypatch):
    from rocesim.sweep import index

    def cannot(*args, **kw):
        raise PermissionError(13, "Permission denied", "index.csv")

    monkeypatch.setattr(index, "write", cannot)
    out = str(tmp_path / "out")
    with pytest.raises(ScenarioError) as e:
        sweep.run_runs(sweep.expand({"base": BASE}), out, processes=1, progress=False)
    assert e.value.key == os.path.join(out, "index.csv") and "Permission denied" in e.value.reason
    assert "1 done now" in e.value.reason
    assert not os.path.exists(os.path.join(out, run_folder.LOCK_FILE))
