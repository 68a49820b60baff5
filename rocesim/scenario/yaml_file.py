"""Scenario files: read as YAML (safely, UTF-8 only, nesting bounded) and `--set` overrides.

Every problem is one `ScenarioError` keyed by the file or the key path: a syntax error, a
file that is not UTF-8, nesting deeper than `MAX_DEPTH` levels or a structure that contains
itself (YAML anchors can build both), an override whose path does not exist.
"""
from __future__ import annotations

import copy
import re

import yaml

from rocesim._textfile import decode_utf8
from rocesim.errors import ScenarioError
from rocesim.settings import show

MAX_DEPTH = 64
"""The deepest nesting of mappings and lists a scenario may have (the top mapping is
level 1; real scenarios need about 5)."""


def _label(k) -> str:
    return f"[{k}]" if isinstance(k, int) and not isinstance(k, bool) else f".{k}"


def check_depth(raw, where="", limit=MAX_DEPTH) -> None:
    """Refuse nesting deeper than `limit` levels and structures that contain themselves
    (YAML anchors can build both).  Iterative, and each shared node is visited once."""
    height: dict[int, int] = {}          # id -> levels from this node down
    chain: list[str] = []                # labels of the nodes on the current path
    open_ids: set[int] = set()
    stack = [(raw, where, False)]

    def where_now(extra=""):
        parts = chain + [extra] if extra else list(chain)
        if len(parts) > 8:                   # keep the key readable: the start and the end
            parts = parts[:5] + [f"...({len(parts) - 7} more levels)..."] + parts[-2:]
        return "".join(parts).lstrip(".") or "scenario"

    while stack:
        node, label, done = stack.pop()
        i = id(node)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        if done:
            open_ids.discard(i)
            chain.pop()
            height[i] = 1 + max((height[id(c)] for _, c in items if isinstance(c, (dict, list))), default=0)
            continue
        if i in height:
            if len(chain) + height[i] > limit:
                raise ScenarioError(where_now(label), f"nested more than {limit} levels deep")
            continue
        if i in open_ids:
            raise ScenarioError(where_now(label), "refers to itself (a YAML alias inside its own anchor)")
        chain.append(label)
        if len(chain) > limit:
            raise ScenarioError(where_now(), f"nested more than {limit} levels deep")
        open_ids.add(i)
        stack.append((node, label, True))
        for k, c in items:
            if isinstance(c, (dict, list)):
                stack.append((c, _label(k), False))


def parse_yaml(text: str, where: str):
    """`text` parsed as YAML (safe), with every parser failure as one ScenarioError keyed
    `where`: syntax errors, nesting too deep for the parser, impossible dates, integers
    too long to read."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ScenarioError(where, f"not valid YAML: {e}") from None
    except RecursionError:
        raise ScenarioError(where, f"nested too deeply to read (a scenario may nest at most "
                                   f"{MAX_DEPTH} levels)") from None
    except (ValueError, OverflowError) as e:      # e.g. a date 2024-13-45, a 5000-digit int
        raise ScenarioError(where, f"not valid YAML: {e}") from None


def read(path) -> dict:
    """The mapping of a scenario file, checked for depth; ScenarioError keyed by the path."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ScenarioError(str(path), "no such scenario file") from None
    except OSError as e:
        raise ScenarioError(str(path), f"cannot read the scenario file: {e.strerror or e}") from None
    raw = parse_yaml(decode_utf8(str(path), data), str(path))
    if not isinstance(raw, dict):
        raise ScenarioError(str(path), "a scenario file must hold a mapping (seed:, topology:, traffic:, ...)")
    check_depth(raw)
    return raw


_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def apply_overrides(raw: dict, overrides) -> dict:
    """A copy of `raw` with each `a.b[2].c=value` applied (value parsed as YAML)."""
    check_depth(raw)
    raw = copy.deepcopy(raw)
    for item in overrides:
        if not isinstance(item, str):
            raise ScenarioError("--set", f"expected key.path=value, got {show(item)}")
        if "=" not in item:
            raise ScenarioError(f"--set {item}", "expected key.path=value")
        path, text = item.split("=", 1)
        steps = []
        for part in path.split("."):
            m = _STEP.fullmatch(part)
            if not m:
                raise ScenarioError(f"--set {path}", f"cannot read key path part {part!r}")
            steps.append(m.group(1))
            steps += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
        node = raw
        for s in steps[:-1]:
            if isinstance(s, int):
                if not isinstance(node, list) or s >= len(node):
                    raise ScenarioError(f"--set {path}", f"index [{s}] does not exist")
                node = node[s]
            else:
                if not isinstance(node, dict):
                    raise ScenarioError(f"--set {path}", f"{s!r} is not inside a mapping")
                if node.get(s) is None:         # missing, or an empty `key:` in the file
                    node[s] = {}
                node = node[s]
        last = steps[-1]
        try:
            value = parse_yaml(text, f"--set {path}")
        except ScenarioError as e:
            raise ScenarioError(e.key, f"the value {show(text)} is {e.reason}") from None
        if isinstance(last, int):
            if not isinstance(node, list) or last >= len(node):
                raise ScenarioError(f"--set {path}", f"index [{last}] does not exist")
        elif not isinstance(node, dict):
            raise ScenarioError(f"--set {path}", "the parent is not a mapping")
        node[last] = value
    return raw
