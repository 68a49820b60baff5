"""Sweep files: a base scenario and the parameters to vary, expanded into named runs.

    base: ../scenarios/quickstart.yaml     # relative to this file, or an inline scenario mapping
    grid:                                  # the cartesian product of these lists
      cc.scheme: [hpcc, dcqcn]
      traffic[1].load: [0.3, 0.5]
    zip:                                   # lists of equal length, varied together
      cc.params.window: [null, bdp]        # null: leave the key as the base has it
      switch.buffer: [16MB, 32MB]
    seeds: [1, 2]                          # sets `seed`
    set: {stop: 5ms}                       # the same overrides for every run (not in names)

A sweep spreads its runs over the cores, so each run takes 1 thread (`threads:`) unless the
sweep file sets `threads` (`run_folder.SWEEP_THREADS`).

Key paths are those `rocesim run --set` takes.  The special key `scenario` varies the
base scenario itself (values: scenario files relative to the sweep file; a run's name
shows the file's stem).  Runs are the grid's combinations (in file order) x the zip's
rows x the seeds; each is named from its parameters, e.g.
`cc.scheme=hpcc,traffic[1].load=0.5,seed=2`, a stable and readable folder name.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field

from rocesim._textfile import decode_utf8
from rocesim.errors import ScenarioError
from rocesim.scenario import apply_overrides, check_depth, parse_yaml

SWEEP_KEYS = ("base", "grid", "zip", "seeds", "set")
SCENARIO_KEY = "scenario"
MAX_NAME_BYTES = 200        # below every file system's 255-byte name limit, with room for a suffix
_SAFE = re.compile(r"[^A-Za-z0-9._+\-@\[\]]")


@dataclass(frozen=True)
class Run:
    """One run of a sweep: its folder name, its parameters (key path -> value, in order,
    `seed` last) and how to build its scenario (a base file or inline mapping, and
    `--set` style overrides)."""

    name: str
    params: dict = field(hash=False)
    base: str | dict = field(hash=False)     # absolute scenario path, or an inline mapping
    base_dir: str = "."                      # where the base's relative paths are read from
    overrides: tuple = ()                    # "key.path=value" strings (JSON values, valid YAML)

    def sets(self, key: str) -> bool:
        """Whether the sweep gives this run's `key` (a key path: `set:`, `grid:`, `zip:` or
        the command line), over the base scenario's."""
        return any(o.split("=", 1)[0] == key for o in self.overrides)

    def command(self, outdir: str) -> str:
        """The same run as one `rocesim run` command line (for a base file)."""
        base = self.base if isinstance(self.base, str) else "SCENARIO.yaml"
        sets = " ".join(f"--set '{o}'" for o in self.overrides)
        return f"rocesim run {base} -o {os.path.join(outdir, self.name)} --no-plot {sets}".strip()


@dataclass
class Sweep:
    """A loaded sweep file: its runs and the parameter names, in column order."""

    path: str
    runs: list
    param_names: list


def load(path, command_line=None) -> Sweep:
    """Read and expand a sweep file; every mistake is one ScenarioError naming the key.
    `command_line`: key paths fixed for every run as by `set:`, over it (`--mode`)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ScenarioError(str(path), f"cannot read the sweep file: {e.strerror or e}") from None
    raw = parse_yaml(decode_utf8(str(path), data), str(path))
    return expand(raw, os.path.dirname(os.path.abspath(path)), str(path), command_line)


def expand(raw, sweep_dir: str = ".", where: str = "sweep", command_line=None) -> Sweep:
    """The runs of a sweep mapping (`sweep_dir`: where relative paths are read from;
    `command_line`: key paths fixed for every run, as `set:` and over it)."""
    if not isinstance(raw, dict):
        raise ScenarioError(where, "a sweep file must hold a mapping with base:, grid:, zip:, seeds:")
    unknown = [k for k in raw if k not in SWEEP_KEYS]
    if unknown:
        raise ScenarioError(str(unknown[0]), f"unknown sweep key; valid: {', '.join(SWEEP_KEYS)}")
    grid = _lists(raw.get("grid"), "grid")
    zipped = _lists(raw.get("zip"), "zip")
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise ScenarioError("zip", f"lists must have equal lengths, got {sorted(lengths)}")
    both = set(grid) & set(zipped)
    if both:
        raise ScenarioError(f"zip.{sorted(both)[0]}", "is also in grid; vary a key in one of them")
    if "seed" in grid or "seed" in zipped:
        raise ScenarioError("grid.seed", "vary seeds with `seeds: [1, 2, ...]`")
    seeds = raw.get("seeds")
    if seeds is not None and (not isinstance(seeds, list) or not seeds or len(set(map(repr, seeds))) != len(seeds)
                              or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
        raise ScenarioError("seeds", f"expected a list of distinct non-negative integers, got {seeds!r}")
    fixed = raw.get("set") or {}
    if not isinstance(fixed, dict) or not all(isinstance(k, str) for k in fixed):
        raise ScenarioError("set", "expected a mapping of key paths to values")
    for k, v in (command_line or {}).items():
        if k in grid or k in zipped:
            raise ScenarioError(f"{'grid' if k in grid else 'zip'}.{k}",
                                f"the sweep varies it and the command line fixes it ({k}={format_value(v)}); "
                                f"do one or the other")
    fixed = {**fixed, **(command_line or {})}
    varies_scenario = SCENARIO_KEY in grid or SCENARIO_KEY in zipped
    if "base" in raw and varies_scenario:
        raise ScenarioError("base", f"give either base: or a varied `{SCENARIO_KEY}`, not both")
    if "base" not in raw and not varies_scenario:
        raise ScenarioError("base", "missing (required): a scenario file or an inline scenario mapping")
    bases = {}                                  # scenario path or None -> (base, base_dir, raw)
    if not varies_scenario:
        bases[None] = _base(raw["base"], sweep_dir, "base")

    zip_rows = [dict(zip(zipped, row)) for row in zip(*zipped.values())] or [{}]
    runs, names = [], {}
    for combo in itertools.product(*grid.values()):
        for zrow in zip_rows:
            params = {**dict(zip(grid, combo)), **zrow}
            for seed in (seeds or [None]):
                ps = dict(params)
                if seed is not None:
                    ps["seed"] = seed
                scen = ps.get(SCENARIO_KEY)
                if varies_scenario:
                    if not isinstance(scen, str):
                        raise ScenarioError(SCENARIO_KEY, f"expected scenario file paths, got {scen!r}")
                    if scen not in bases:
                        bases[scen] = _base(scen, sweep_dir, SCENARIO_KEY)
                    ps[SCENARIO_KEY] = os.path.splitext(os.path.basename(scen))[0]
                base, base_dir, base_raw = bases[scen if varies_scenario else None]
                sets = {k: v for k, v in ps.items() if k != SCENARIO_KEY and v is not None}
                overrides = tuple(f"{k}={json.dumps(v)}" for k, v in {**fixed, **sets}.items())
                name = run_name(ps)
                if name in names:
                    raise ScenarioError(SCENARIO_KEY if varies_scenario else "grid",
                                        f"two runs would share the folder name {name!r}")
                try:
                    apply_overrides(base_raw, overrides)         # key paths exist: fail before running
                except ScenarioError as e:
                    raise in_run(e, name) from None
                names[name] = True
                runs.append(Run(name, ps, base, base_dir, overrides))
    param_names = list(grid) + list(zipped) + (["seed"] if seeds else [])
    return Sweep(where, runs, param_names)


def in_run(e: ScenarioError, name: str) -> ScenarioError:
    """`e` with the run it happened in named (its folder name: its parameters)."""
    return ScenarioError(e.key, f"{e.reason} (run {name})")


def run_name(params: dict) -> str:
    """A stable, readable folder name: `key=value` joined by commas, in parameter order.
    Parameters left unset (null) are left out; characters unsafe in a file name (and the
    separators `,` and `=` inside values) are %-escaped; very long names keep a readable
    head and a hash of the whole."""
    parts = [f"{k}={_escape(format_value(v))}" for k, v in params.items() if v is not None]
    name = ",".join(parts) or "base"
    if len(name.encode()) > MAX_NAME_BYTES:
        digest = hashlib.sha1(name.encode()).hexdigest()[:12]
        name = name.encode()[:MAX_NAME_BYTES - 14].decode(errors="ignore") + "~" + digest
    return name


def format_value(v) -> str:
    """A parameter value as text: YAML-like scalars (true, 0.5, hpcc), JSON for lists and mappings."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


def _escape(text: str) -> str:
    return _SAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def _lists(d, key) -> dict:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise ScenarioError(key, "expected a mapping of key paths to lists of values")
    for k, v in d.items():
        if not isinstance(k, str) or not k:
            raise ScenarioError(key, f"expected key paths as keys, got {k!r}")
        if not isinstance(v, list) or not v:
            raise ScenarioError(f"{key}.{k}", f"expected a non-empty list of values, got {v!r}")
        if key == "grid" and len({json.dumps(x, sort_keys=True) for x in v}) != len(v):
            raise ScenarioError(f"{key}.{k}", "values repeat (runs would share a name)")
    return dict(d)


def _base(spec, sweep_dir, key):
    """(base for Run, base_dir, raw mapping) of a scenario path or an inline mapping."""
    if isinstance(spec, dict):
        check_depth(spec)
        return spec, sweep_dir, spec
    if not isinstance(spec, str):
        raise ScenarioError(key, f"expected a scenario file path or an inline scenario mapping, got {spec!r}")
    path = os.path.normpath(os.path.join(sweep_dir, spec))
    return path, os.path.dirname(path), read_scenario(path, key)


def read_scenario(path: str, key: str = "base") -> dict:
    """The mapping of a scenario file (an error keyed `key` when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ScenarioError(key, f"cannot read scenario {path}: {e.strerror or e}") from None
    raw = parse_yaml(decode_utf8(path, data), path)
    if not isinstance(raw, dict):
        raise ScenarioError(path, "a scenario file must hold a mapping")
    check_depth(raw)
    return raw
