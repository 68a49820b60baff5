"""How a congestion-control scheme of the core declares itself: plain data, in the core's words.

Each `cc_<name>.pyx` holds its callbacks and, at its end, a module-level `DECLARATION`, a
dict built from numbers, strings, tuples and plain-Python functions only (nothing imported
from above the core).  `rocesim.cc.registry` turns it into a `rocesim.cc.Scheme`, which the
YAML loader (`cc.params`), the API (`Simulation(cc_params=...)`) and `rocesim schemes` read;
the core itself never looks above `rocesim._core`.

    DECLARATION = dict(
        name="hpcc",                           # what `cc.scheme` selects
        doc="HPCC (Li et al. 2019): ...",      # one line, for `rocesim schemes`
        params=(                               # (name, type, default, meaning), in this order
            ("eta", ("number", 0.01, 1.0), 0.95, "target utilization"),
            ("wai", ("size", "auto"), "auto", "additive increase W_AI (auto: ...)"),
        ),
        finalize=_hpcc_finalize,               # optional: (params, Context) -> params
        needs_int=True,                        # optional (False): switches stamp INT records
        needs_cnp=False,                       # optional (False): or a function of the final params
        ecn=RED_FORK,                          # optional (RED_FORK): or a function of the params
        nic_defaults={},                       # optional: nic: keys it implies, or a function of the params
    )

Types.  A parameter's type is a tuple `(tag, *arguments, *words)`:

    ("number", lo, hi)      a number in [lo, hi] (a float)
    ("integer", lo, hi)     an integer in [lo, hi]
    ("choice", (a, b, ..))  one of the strings a, b, ...
    ("boolean",)            true or false
    ("size",)               bytes, from "16KB", "1MiB", "1000B"
    ("positive_size",)      bytes, more than zero
    ("rate",)               bit/s, from "100Gbps"
    ("time",)               picoseconds, from "10us"
    ("positive_time",)      picoseconds, more than zero (periods, divisors)
    ("window",)             bytes in flight per flow: "none" (0), "bdp" (WINDOW_BDP until
                            `finalize` calls `window_bytes`) or a size

Strings after the tag's own arguments are words the parameter also takes as they are:
("size", "auto") is a size or the word "auto"; ("choice", ("ack", "cnp"), "auto") is "ack",
"cnp" or "auto".  By convention "auto" means "filled in by `finalize`", from the network
(`Context`) and the scheme's published defaults.

From the declaration to C.  `finalize(params, ctx)` gets the parsed parameters (names as
declared, values in picoseconds, bit/s and bytes) and returns them with every word ("auto",
...) replaced by a value of the parameter's type; it may raise `ParamError`.  The core module's `install(core, params)` gets the
finalized dict and converts it in one step into its parameter struct, whose fields are the
declared parameters by the same names (Cython's dict-to-struct conversion):

    cdef HpccParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)

`declared_values` hands C a number for every parameter: a choice becomes the index of its
value among the options (first = 0), a boolean 1 or 0.  Cython refuses a struct field with no
declared parameter (ValueError naming it) and `check_fields` a declared parameter with no
field, so the declaration and the struct cannot drift apart unnoticed: tests install every
scheme of the registry with its defaults.

Cython compiles the core with `cdivision`, under which `1 / 256` is C's integer division (0):
the declaration section of a .pyx (its finalize functions and DECLARATION) sits in a
`with cython.cdivision(False):` block, where division is Python's.
"""
from __future__ import annotations

from dataclasses import dataclass

G100 = 100e9                 # 100 Gb/s: the rate the HPCC fork's per-rate constants are quoted at
WINDOW_NONE = 0              # a "window" parameter's "none": no window
WINDOW_BDP = -1              # ... its "bdp", until `window_bytes` makes it bytes

# the tags, with how many arguments each takes before its words
TYPE_ARGS = {"number": 2, "integer": 2, "choice": 1, "boolean": 0, "size": 0, "positive_size": 0,
             "rate": 0, "time": 0, "positive_time": 0, "window": 0}

# ECN marking a scheme asks of the switches when the scenario leaves switch.ecn at 'auto':
#   ("red", kmin, kmax, pmax)   RED from kmin to kmax bytes per 25 Gb/s of port rate, pmax at kmax
#   ("step", k)                 a step at k bytes per 10 Gb/s of port rate (DCTCP's K)
RED_FORK = ("red", 100_000, 400_000, 0.2)     # the HPCC fork's: Kmin 100 KB, Kmax 400 KB per 25G, Pmax 0.2

# The queue levels a load-balancing scheme compares equal-cost ports by (lb.pxd's
# least_loaded): csg-htsim's adaptive routing quantizes an egress queue into 4 levels, below
# 5%, 10% and 20% of its 15-packet nominal size (9000 B packets: 6,750, 13,500 and 27,000 B)
# or above; these are the same thresholds in bytes, which a scenario may change.
LB_QUEUE_LEVELS = (
    ("level_1", ("size",), "6750B", "queued bytes at which an egress port is no longer among the emptiest "
                                    "(csg-htsim: 5% of a 15 x 9000 B queue)"),
    ("level_2", ("size",), "13500B", "the next level (10%)"),
    ("level_3", ("size",), "27000B", "the last level (20%): above it, a port is as full as any"),
)

DECLARATION_KEYS = {"name", "doc", "params", "finalize", "needs_int", "needs_cnp", "ecn", "nic_defaults",
                    "fluid"}      # fluid: a load-balancing scheme's (rocesim/lb/registry.py FLUID_WAYS)


class ParamError(ValueError):
    """A finalized parameter is refused: `name` is the parameter, `reason` says why (the
    registry reports it as the key path cc.params.<name>)."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True)
class Context:
    """What `auto` defaults may depend on (the network a scheme is installed on)."""

    host_rate_bps: int          # the fastest host link
    max_base_rtt_ps: int        # the largest idle-network RTT between two hosts (or of a flow)
    max_bdp_bytes: int = 0      # the largest bandwidth-delay product between two hosts


def fill(params: dict, defaults: dict) -> dict:
    """Replace 'auto' in params by defaults[name] (already in base units) where one is given."""
    return {k: (defaults[k] if v == "auto" and k in defaults else v) for k, v in params.items()}


def window_bytes(w: int, ctx: Context) -> int:
    """A parsed "window" value in bytes: "bdp" (WINDOW_BDP) is the largest BDP between two
    hosts of the topology, one window for every flow, as the HPCC fork's `GLOBAL_T`/`HAS_WIN`
    set it (third.cc computes maxBdp over all host pairs)."""
    return ctx.max_bdp_bytes if w == WINDOW_BDP else w


def ecn_thresholds(spec: tuple, rate_bps: int) -> tuple[int, int, float]:
    """(kmin bytes, kmax bytes, pmax) of a port of `rate_bps` for an ECN spec ("red" or "step")."""
    if spec[0] == "red":
        _, kmin_per_25g, kmax_per_25g, pmax = spec
        return int(kmin_per_25g * rate_bps / 25e9), int(kmax_per_25g * rate_bps / 25e9), pmax
    if spec[0] == "step":
        k = int(spec[1] * rate_bps / 10e9)
        return k, k, 1.0
    raise ValueError(f"unknown ECN marking {spec!r}: expected ('red', kmin, kmax, pmax) or ('step', k)")


def split_type(kind: tuple) -> tuple[str, tuple, tuple]:
    """(tag, its arguments, the words also taken) of a parameter type."""
    if not isinstance(kind, tuple) or not kind or kind[0] not in TYPE_ARGS:
        raise ValueError(f"unknown parameter type {kind!r}; tags: {', '.join(TYPE_ARGS)}")
    n = TYPE_ARGS[kind[0]]
    args, words = kind[1:1 + n], kind[1 + n:]
    if len(args) < n or not all(isinstance(w, str) for w in words):
        raise ValueError(f"parameter type {kind!r}: {kind[0]} takes {n} argument(s), then words")
    if kind[0] == "choice" and not (isinstance(args[0], tuple) and args[0]
                                    and all(isinstance(o, str) for o in args[0])):
        raise ValueError(f"parameter type {kind!r}: a choice takes a tuple of strings")
    return kind[0], args, words


def check(declaration: dict) -> None:
    """Refuse a malformed declaration (a mistake of the scheme's author), naming what is wrong."""
    where = f"scheme {declaration.get('name')!r}"
    unknown = set(declaration) - DECLARATION_KEYS
    missing = {"name", "doc", "params"} - set(declaration)
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    names = set()
    for entry in declaration["params"]:
        if not (isinstance(entry, tuple) and len(entry) == 4 and isinstance(entry[0], str)
                and isinstance(entry[3], str)):
            raise ValueError(f"{where}: a parameter is (name, type, default, meaning), got {entry!r}")
        if entry[0] in names:
            raise ValueError(f"{where}: parameter {entry[0]!r} is declared twice")
        names.add(entry[0])
        try:
            split_type(entry[1])
        except ValueError as e:
            raise ValueError(f"{where}, parameter {entry[0]!r}: {e}") from None


def declared_values(declaration: dict, params: dict) -> dict:
    """The finalized `params` as C takes them, for a struct whose fields are the declared
    parameters: a choice becomes its index among the options, a boolean 1 or 0; a name the
    declaration does not have is refused."""
    declared = {entry[0]: split_type(entry[1]) for entry in declaration["params"]}
    unknown = set(params) - set(declared)
    if unknown:
        raise ValueError(f"scheme {declaration['name']!r}: {sorted(unknown)} not declared")
    out = {}
    for name, value in params.items():
        tag, args, _ = declared[name]
        if tag == "choice" and value in args[0]:
            value = args[0].index(value)
        elif tag == "boolean" and isinstance(value, bool):
            value = int(value)
        out[name] = value
    return out


def check_fields(declaration: dict, fields: dict) -> None:
    """Refuse a parameter struct (`fields`: the struct as a dict) that lacks a declared parameter
    (Cython's own conversion refuses the other way: a field with no parameter)."""
    missing = [entry[0] for entry in declaration["params"] if entry[0] not in fields]
    if missing:
        raise ValueError(f"scheme {declaration['name']!r}: declared parameters {missing} have no "
                         f"field in its parameter struct (fields: {', '.join(fields)})")
