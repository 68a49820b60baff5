"""The `rocesim` command (rocesim.cli): run, check, plot, schemes, keys, --version, errors."""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import ROOT, TINY, same_rocesim_env, write_scenario
from rocesim import cli, run_loop
from rocesim.cc import builtin_schemes
from rocesim.cli import EXIT_CODES, build_parser, main
from rocesim.results.run import MACHINE_KEYS
from rocesim.settings import Section

PNG = b"\x89PNG\r\n\x1a\n"
REQUIRED_COLUMNS = ("flow_id", "src", "dst", "size_bytes", "start_ns", "fct_ns", "ideal_fct_ns", "slowdown")
REQUIRED_SUMMARY = ("events", "link_crossings", "drops", "pfc_pauses", "flows_total", "flows_completed",
                    "sim_time_ns", "wall_s")


def scenario(**top):
    """Three hosts on a switch: a 2-to-1 incast of 20 KB and one 1 MB flow (80 us at 100 Gbps)."""
    raw = {
        "name": "tiny",
        "seed": 1,
        "topology": {"kind": "star", "hosts": 3, "link": {"rate": "100Gbps", "delay": "1us"}},
        "traffic": [
            {"kind": "incast", "senders": [1, 2], "receiver": 0, "size": "20KB"},
            {"kind": "flows", "flows": [{"src": 0, "dst": 2, "size": "1MB", "start": "1us"}]},
        ],
    }
    raw.update(top)
    return raw


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def run(tmp_path, raw=None, *extra, out="out"):
    path = write_scenario(tmp_path, scenario() if raw is None else raw)
    outdir = tmp_path / out
    code = main(["run", path, "-o", str(outdir), "-q", *extra])
    return code, outdir


def test_run_writes_flows_summary_and_plot(tmp_path, capsys):
    code, out = run(tmp_path)
    assert code == 0
    rows = read_rows(out / "flows.csv")
    assert set(REQUIRED_COLUMNS) <= set(rows[0])
    assert len(rows) == 3
    assert [(r["src"], r["dst"], r["size_bytes"]) for r in rows] == \
        [("1", "0", "20000"), ("2", "0", "20000"), ("0", "2", "1000000")]
    assert [r["tag"] for r in rows] == ["0", "0", "1"]
    assert rows[2]["start_ns"] == "1000"
    for r in rows:
        assert float(r["fct_ns"]) >= float(r["ideal_fct_ns"]) > 0
        assert float(r["slowdown"]) >= 1
    summary = json.loads((out / "summary.json").read_text())
    assert set(REQUIRED_SUMMARY) <= set(summary)
    assert summary["flows_total"] == 3 and summary["flows_completed"] == 3
    assert summary["events"] > 0 and summary["link_crossings"] > 0
    assert summary["drops"] == 0 and summary["stopped_at_limit"] is False
    assert summary["sim_time_ns"] >= max(float(r["start_ns"]) + float(r["fct_ns"]) for r in rows) - 1e-3
    assert (out / "slowdown.png").read_bytes()[:8] == PNG
    assert (out / "ports.csv").is_file() and not (out / "fct.txt").exists()
    stdout = capsys.readouterr().out
    assert "3/3 flows completed" in stdout
    assert "wrote " in stdout and str(out / "slowdown.png") in stdout


def test_run_prints_a_header_unless_quiet(tmp_path, capsys):
    path = write_scenario(tmp_path, scenario())
    assert main(["run", path, "-o", str(tmp_path / "out"), "--no-plot"]) == 0
    err = capsys.readouterr().err
    assert "rocesim: tiny: 3 hosts, 3 flows, scheme none" in err


def test_unfinished_flows_have_empty_fct(tmp_path):
    code, out = run(tmp_path, scenario(stop="30us"))
    assert code == 0
    rows = read_rows(out / "flows.csv")
    assert [r["fct_ns"] == "" for r in rows] == [False, False, True]   # the 1 MB flow needs ~80 us
    assert rows[2]["slowdown"] == "" and rows[2]["ideal_fct_ns"] != ""
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flows_completed"] == 2 and summary["flows_total"] == 3
    assert summary["stopped_at_limit"] is True and summary["sim_time_ns"] <= 30_000
    assert (out / "slowdown.png").is_file()


def test_run_hpcc_fct(tmp_path):
    code, out = run(tmp_path, scenario(output={"hpcc_fct": True}))
    assert code == 0
    lines = (out / "fct.txt").read_text().splitlines()
    rows = read_rows(out / "flows.csv")
    assert len(lines) == 3
    for line, row in zip(lines, rows):
        fields = line.split()
        assert len(fields) == 8
        sip, dip = int(fields[0], 16), int(fields[1], 16)
        assert ((sip >> 8) & 0xFFFF, (dip >> 8) & 0xFFFF) == (int(row["src"]), int(row["dst"]))
        assert int(fields[4]) == int(row["size_bytes"])
        assert int(fields[5]) == round(float(row["start_ns"]))
        assert abs(int(fields[6]) - float(row["fct_ns"])) <= 0.5
        assert abs(int(fields[7]) - float(row["ideal_fct_ns"])) <= 0.5


def test_run_without_plot(tmp_path):
    code, out = run(tmp_path, None, "--no-plot")
    assert code == 0 and (out / "flows.csv").is_file() and not (out / "slowdown.png").exists()
    code, out = run(tmp_path, scenario(output={"plot": False}), out="out2")
    assert code == 0 and (out / "flows.csv").is_file() and not (out / "slowdown.png").exists()


def test_run_set_overrides(tmp_path):
    code, out = run(tmp_path, None, "--set", "traffic[0].size=2KB", "--set", "traffic[1].flows[0].size=3KB",
                    "--set", "nic.payload=500B")
    assert code == 0
    assert [r["size_bytes"] for r in read_rows(out / "flows.csv")] == ["2000", "2000", "3000"]
    assert json.loads((out / "summary.json").read_text())["data_bytes_delivered"] == 7000
    # 500 B payloads: host 1 sends 2 KB as 4 data packets of 548 B on the wire (48 B of headers)
    host1 = [r for r in read_rows(out / "ports.csv") if r["node"] == "1"]
    assert [(r["tx_packets"], r["tx_bytes"]) for r in host1] == [("4", str(4 * 548))]


def test_same_seed_same_files(tmp_path):
    raw = scenario(traffic=[{"kind": "cdf", "distribution": "fb_hadoop", "load": 0.5, "duration": "20us"},
                            {"kind": "permutation", "size": "5KB"}])
    _, a = run(tmp_path, raw, "--no-plot", out="a")
    _, b = run(tmp_path, raw, "--no-plot", out="b")
    assert (a / "flows.csv").read_bytes() == (b / "flows.csv").read_bytes()
    assert (a / "ports.csv").read_bytes() == (b / "ports.csv").read_bytes()
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    assert {k: v for k, v in sa.items() if k not in MACHINE_KEYS} == {k: v for k, v in sb.items() if k not in MACHINE_KEYS}
    _, c = run(tmp_path, raw, "--no-plot", "--set", "seed=5", out="c")
    assert (a / "flows.csv").read_bytes() != (c / "flows.csv").read_bytes()


def test_parquet_output(tmp_path, capsys):
    code, out = run(tmp_path, scenario(output={"flows_format": "parquet"}), "--no-plot")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert code == 2 and not out.exists()                          # refused before running
        assert "rocesim: error: output.flows_format: 'parquet' needs pyarrow" in capsys.readouterr().err
    else:
        assert code == 0 and (out / "flows.parquet").is_file() and not (out / "flows.csv").exists()


def test_run_refuses_a_non_empty_folder_and_force_starts_from_an_empty_one(tmp_path, capsys):
    scn, out = write_scenario(tmp_path, TINY), tmp_path / "out"
    out.mkdir()
    (out / "training.png").write_bytes(b"stale")                   # left by an earlier run
    assert cli.main(["run", scn, "-o", str(out), "-q"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert os.listdir(out) == ["training.png"]
    assert cli.main(["run", scn, "-o", str(out), "-q", "--force"]) == 0
    assert "training.png" not in os.listdir(out) and "summary.json" in os.listdir(out)
    (out / "notes.txt").write_text("mine")                          # never deleted, even with --force
    assert cli.main(["run", scn, "-o", str(out), "-q", "--force"]) == 2
    assert "did not write" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    import rocesim
    assert capsys.readouterr().out.strip() == f"rocesim {rocesim.__version__}"


def test_a_run_without_plots_does_not_import_matplotlib(tmp_path):
    code = ("import sys; from rocesim import cli; "
            f"rc = cli.main(['run', {write_scenario(tmp_path, TINY)!r}, '-o', {str(tmp_path / 'out')!r}, '-q']); "
            "assert rc == 0; print(sorted(m for m in sys.modules if m.startswith('matplotlib')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=same_rocesim_env(),
                         cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"


# --- check, schemes, keys ----------------------------------------------------------------------


def test_check(tmp_path, capsys):
    path = write_scenario(tmp_path, scenario())
    assert main(["check", path]) == 0
    assert capsys.readouterr().out == "ok: 3 hosts, 1 switches, 3 flows, scheme none\n"
    assert main(["check", path, "--set", "topology.hosts=5", "--set", "traffic[0].senders=all"]) == 0
    assert capsys.readouterr().out == "ok: 5 hosts, 1 switches, 5 flows, scheme none\n"
    assert sorted(os.listdir(tmp_path)) == ["s.yaml"]                  # nothing written


def test_check_quickstart(capsys):
    assert main(["check", str(ROOT / "scenarios" / "quickstart.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: 32 hosts, 6 switches, ") and out.endswith(" flows, scheme none\n")


def test_check_notes_the_parts_a_run_takes(tmp_path, capsys, monkeypatch):
    # quickstart: 4 leaves of 8 hosts and 2 spines; 40 links, the 8 leaf-spine ones cut
    monkeypatch.setattr(run_loop, "available_cores", lambda: 64)    # (threads are capped at the cores too)
    quickstart = str(ROOT / "scenarios" / "quickstart.yaml")
    leaves = "6 parts at the leaf level (4 leaf groups, 2 switches), lookahead 1us, 16/80 ports cut; no dependencies"

    def notes():        # stderr without the last line, the run's predicted cost (tests/cli/test_check_cost.py)
        err = capsys.readouterr().err
        assert err.splitlines()[-1].startswith("predicted at the packet level: ")
        return err[:err.rindex("predicted at the packet level: ")]
    assert main(["check", quickstart, "--set", "partition=none"]) == 0
    assert notes() == f"partition: none: 1 part; partition: leaves would give {leaves}\n"
    assert main(["check", quickstart, "--set", "partition=leaves"]) == 0
    assert notes() == f"partition: leaves: {leaves}\n"
    assert main(["check", quickstart, "--set", "partition=leaves", "--threads", "7"]) == 0
    assert notes().splitlines()[1] in ("7 threads asked, 6 parts: running 6", "built without OpenMP: running 1 thread")
    assert main(["check", quickstart, "--mode", "flow"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == "partition: none (auto): 1 part (flow mode)"
    # three hosts on one switch: one leaf group, and the dependencies of an incast: none
    assert main(["check", write_scenario(tmp_path, scenario(partition="leaves")), "--threads", "2"]) == 0
    assert notes() == ("partition: leaves: 1 part at the leaf level: the whole network is one leaf "
                       "group; no dependencies\n2 threads asked, 1 part: running 1\n")


def test_run_threads_override_the_scenarios_and_more_than_parts_are_said(tmp_path, capsys):
    """`--threads N` is `--set threads=N`, over the scenario's; more than the one part of a
    star is said once on stderr (not with -q) and capped; the files are the same."""
    path = write_scenario(tmp_path, scenario(threads=1))
    assert main(["run", path, "-o", str(tmp_path / "a"), "--no-plot", "--threads", "3"]) == 0
    assert "rocesim: 3 threads asked, 1 part: running 1\n" in capsys.readouterr().err
    assert main(["run", path, "-o", str(tmp_path / "b"), "--no-plot"]) == 0
    assert "threads asked" not in capsys.readouterr().err
    assert main(["run", path, "-o", str(tmp_path / "c"), "--no-plot", "-q", "--threads", "3"]) == 0
    assert capsys.readouterr().err == ""
    path = write_scenario(tmp_path, scenario(threads=5), "five.yaml")
    assert main(["run", path, "-o", str(tmp_path / "d"), "--no-plot"]) == 0
    assert "rocesim: 5 threads asked, 1 part: running 1\n" in capsys.readouterr().err
    assert main(["run", path, "-o", str(tmp_path / "e"), "--no-plot", "--threads", "auto"]) == 0
    assert "threads asked" not in capsys.readouterr().err
    for out in "bcde":
        assert (tmp_path / out / "flows.csv").read_bytes() == (tmp_path / "a" / "flows.csv").read_bytes()
    for bad in ("0", "1.5", "x", "-1"):
        assert main(["run", path, "-o", str(tmp_path / "f"), "--threads", bad]) == 2
        assert capsys.readouterr().err.startswith("rocesim: error: threads: expected 'auto' or a whole number >= 1")
    assert not (tmp_path / "f").exists()


def test_schemes(capsys):
    assert main(["schemes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("none: no congestion control")
    assert lines[1].startswith("    window (default none): bytes in flight per flow")


def test_schemes_name_prints_that_scheme_alone(capsys):
    hpcc = builtin_schemes()["hpcc"]
    assert main(["schemes", "hpcc"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"hpcc: {hpcc.doc}"] + [f"    {name} (default {default}): {doc}; {accepts}"
                                             for name, accepts, default, doc in Section("", **hpcc.params).describe()]
    assert len(lines) > 3 and lines[1].startswith("    eta (default 0.95): ")
    assert main(["schemes", "pyschemes:FixedRate"]) == 0            # a scheme written in Python
    assert capsys.readouterr().out.splitlines() == ["pyschemes:FixedRate: Every flow sends at one fixed rate.",
                                                     "    rate (default 10Gbps): the rate; a rate with its unit, e.g. 100Gbps"]


def test_schemes_unknown_name_lists_the_known_ones(capsys):
    assert main(["schemes", "hpc"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"rocesim: error: rocesim schemes: unknown scheme 'hpc'; "
                                   f"available: {', '.join(builtin_schemes())}")


def test_keys_prints_every_declared_setting_and_nothing_else(capsys):
    """`rocesim keys` is generated whole from the declarations (rocesim.settings): each
    setting's line is its key and default, then its meaning and what it accepts."""
    from rocesim.keys import SECTIONS, lines
    assert main(["keys"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == list(lines())
    keys = [line.strip() for line in out if not line.lstrip().startswith(("    ",)) and not line.startswith("    ")]
    declared = set()
    for name, (decl, prefix) in SECTIONS.items():
        kinds = getattr(decl, "kinds", None)
        for section in (kinds.values() if kinds else [decl]):
            rows = section.describe(prefix) if name != "scenario" else \
                [(k, e.type.text, e.default, e.doc) for k, e in section.items()]
            declared |= {row[0] for row in rows}
    from rocesim import lb                         # the load-balancing schemes' keys, from their declarations
    declared |= {"switch.load_balancing.scheme", *(f"switch.load_balancing.{k}" for k in lb.registry.COMMON)}
    for scheme in lb.builtin_balancers().values():
        declared |= {f"switch.load_balancing.{k}" for k in scheme.params}
    printed = {line.split(" = ")[0].split(" (")[0] for line in keys if "kind = " not in line
               and not line.startswith("traffic[].model (workload)") and not line.startswith("traffic[].params.")
               and not line.startswith("traffic[].flows[].")}
    assert printed == declared
    assert "switch.buffer = 32MB" in out and "nic.payload = 1000B" in out
    assert "switch.pfc.priorities = [1, 2, 3, 4, 5, 6, 7]" in out
    assert "  faults[].for (optional)" in out and "  topology.gpus_per_server (optional)" in out
    assert "  traffic[].params.batch_time_us = 26700" in out
    meaning = out[out.index("nic.payload = 1000B") + 1]
    assert meaning.startswith("    payload bytes per data packet") and "a size with its unit" in meaning
    collective = "\n".join(out)
    for op in ("allreduce", "alltoall", "broadcast") + ("halving_doubling", "double_binary_tree", "pairwise"):
        assert op in collective                     # the collective ops and their algorithms are listed
    assert main(["keys", "output"]) == 0
    assert "switch." not in capsys.readouterr().out


# --- plot ----------------------------------------------------------------------------------


def test_plot_two_runs(tmp_path, capsys):
    _, a = run(tmp_path, None, "--no-plot", out="a")
    _, b = run(tmp_path, None, "--no-plot", "--set", "traffic[0].size=40KB", out="b")
    capsys.readouterr()
    target = tmp_path / "x.png"
    assert main(["plot", str(a), str(b), "-o", str(target), "--bins", "2"]) == 0
    assert capsys.readouterr().out.strip() == str(target)
    assert target.read_bytes()[:8] == PNG
    assert main(["plot", str(a)]) == 0                                 # default: into the first folder
    assert (a / "slowdown.png").read_bytes()[:8] == PNG


def test_plot_errors(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2                          # a folder, but no run's
    err = capsys.readouterr().err
    assert err.startswith("rocesim: error: ") and "holds no flows.csv or flows.parquet" in err


@pytest.mark.parametrize("command", ["plot", "table"])
def test_plot_and_table_name_a_missing_folder(tmp_path, capsys, command):
    _, a = run(tmp_path, None, "--no-plot", out="a")
    capsys.readouterr()
    missing, a_file = tmp_path / "nonexist", a / "flows.csv"
    assert main([command, str(missing)]) == 2
    assert capsys.readouterr().err == f"rocesim: error: {missing}: no such folder\n"
    assert main([command, str(a_file)]) == 2
    assert capsys.readouterr().err == f"rocesim: error: {a_file}: not a folder\n"
    if command == "plot":                                              # every folder is checked first
        assert main(["plot", str(a), str(missing), "-o", str(tmp_path / "x.png")]) == 2
        assert capsys.readouterr().err == f"rocesim: error: {missing}: no such folder\n"
        assert not (tmp_path / "x.png").exists()


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, extra, message", [
    (scenario(traffic=[{"kind": "cdf", "distribution": "websearch", "load": 2, "duration": "1ms"}]), [],
     "traffic[0].load: expected a number in (0, 1], got 2"),
    (scenario(bogus=1), [], "bogus: unknown key; valid keys here:"),
    (scenario(routes=[{"switch": 3, "dst": 0, "next": 7}]), [], "routes[0].next: node 7 is not a neighbour of switch 3"),
    (scenario(), ["--set", "seed"], "--set seed: expected key.path=value"),
    (scenario(), ["--set", "traffic[4].size=1KB"], "--set traffic[4].size: index [4] does not exist"),
    (scenario(), ["--set", "topology.link.rate=100"], "topology.link.rate: '100' has no unit"),
])
@pytest.mark.parametrize("command", ["run", "check"])
def test_bad_scenario_exits_2(tmp_path, capsys, raw, extra, message, command):
    path = write_scenario(tmp_path, raw)
    args = [command, path, *extra] + (["-o", str(tmp_path / "out")] if command == "run" else [])
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rocesim: error: {message}")
    assert captured.out == ""
    assert not (tmp_path / "out").exists()                             # refused before running


def test_missing_and_unreadable_scenario_files(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert main(["check", str(missing)]) == 2
    assert capsys.readouterr().err == f"rocesim: error: {missing}: no such scenario file\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text("traffic: [\n")
    assert main(["run", str(bad), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(f"rocesim: error: {bad}: not valid YAML")
    bad.write_text("- a list\n")
    assert main(["check", str(bad)]) == 2
    assert "must hold a mapping" in capsys.readouterr().err


def _commands(parser):
    """(name, parser) of the command and of every subcommand, depth first."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _commands(sub)


def test_every_argument_and_command_has_help():
    commands = dict(_commands(build_parser()))
    assert set(commands) == {"rocesim"} | {f"rocesim {c}" for c in
                                           ("run", "check", "plot", "sweep", "table", "schemes", "keys",
                                            "simai-conf")}
    for prog, parser in commands.items():
        for action in parser._actions:
            assert action.help and action.help != argparse.SUPPRESS, f"{prog}: {action.dest} has no help"
            for choice in getattr(action, "_choices_actions", []):       # the subcommands' one-liners
                assert choice.help, f"{prog} {choice.dest} has no help"


@pytest.mark.parametrize("command, codes", [
    ([], sorted(EXIT_CODES)),
    (["run"], [0, 2, 3, 4, 130, 143]),
    (["sweep"], [0, 1, 2, 130, 143]),
    (["check"], [0, 2, 130]), (["plot"], [0, 2, 130]), (["table"], [0, 2, 130]),
    (["schemes"], [0, 2, 130]), (["keys"], [0, 2, 130]),
])
def test_help_lists_the_exit_status(capsys, command, codes):
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    table = out[out.index("\nexit status:\n") + len("\nexit status:\n"):].splitlines()
    assert table == [f"  {code:<4} {EXIT_CODES[code]}" for code in codes]
    assert {0, 1, 2, 3, 4, 130, 143} == set(EXIT_CODES)


def test_usage_errors():
    with pytest.raises(SystemExit) as info:
        main(["run", "x.yaml"])                                        # -o is required
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_python_m_rocesim(tmp_path):
    """The real command line: exit codes, stdout and stderr of `python -m rocesim`."""
    env = same_rocesim_env()     # the package the tests import (installed or in place)
    bad = write_scenario(tmp_path, scenario(traffic=[{"kind": "incast", "senders": [1, 7], "receiver": 0,
                                                      "size": "1KB"}]), "bad.yaml")
    good = write_scenario(tmp_path, scenario(), "good.yaml")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "rocesim", *args], env=env, capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)

    p = cli("run", bad, "-o", str(tmp_path / "o1"))
    assert p.returncode == 2
    assert p.stderr == "rocesim: error: traffic[0].senders: host 7 does not exist; hosts are 0..2\n"
    assert p.stdout == "" and not (tmp_path / "o1").exists()
    p = cli("run", good, "-o", str(tmp_path / "o2"), "-q", "--no-plot")
    assert p.returncode == 0, p.stderr
    assert p.stderr == "" and "3/3 flows completed" in p.stdout
    assert len(read_rows(tmp_path / "o2" / "flows.csv")) == 3


def test_sigterm_stops_a_run_as_ctrl_c_does_and_its_results_are_written(tmp_path):
    """SIGTERM during `rocesim run` ends the run at its next slice: the results so far are
    written (summary.json says interrupted) and the exit status is 143."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "rocesim", "run", str(ROOT / "scenarios/hpcc_paper/websearch30.yaml"),
                             "-o", str(out), "--no-plot", "-q"], cwd=ROOT, env=same_rocesim_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(4)                                 # loaded and running (the whole run takes minutes)
    assert proc.poll() is None, "the run ended before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr
    with open(out / "summary.json") as f:
        summary = json.load(f)
    assert summary["interrupted"] is True and 0 < summary["flows_completed"] < summary["flows_total"]
