"""rocesim: a fast packet-level simulator of RoCE datacenter networks.

Build a `Simulation` from a `topology`, add flows (or whole traffic patterns from
`rocesim.traffic`), run it, and read `Results` as numpy arrays; or describe the same
in a YAML scenario and use `rocesim run`.
"""
import os
import sys

__version__ = "0.1.0"
__all__ = ["Simulation", "Results", "ScenarioError", "topology", "traffic", "__version__"]


class CoreNotBuilt(ImportError):
    """This rocesim folder has no compiled core (a source folder nobody built in place, or
    a build for another Python)."""


def _refuse_unbuilt(missing: str) -> None:
    """Raise CoreNotBuilt saying what to do; uncaught, it prints as that one line."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    if os.path.isfile(os.path.join(root, "setup.py")):          # Python found a clone's source folder
        what = (f"{here} is a source folder without its compiled core ({missing}): run `pip install -e .` "
                f"in {root}, or run from outside it to use the installed rocesim")
    else:
        what = (f"{here} has no compiled core ({missing}): reinstall rocesim "
                f"(its build needs a C compiler and the Python headers)")
    error = CoreNotBuilt(f"rocesim: error: {what}")
    previous = sys.excepthook

    def one_line(kind, value, tb):
        if value is error:
            print(value, file=sys.stderr)
        else:
            previous(kind, value, tb)

    sys.excepthook = one_line
    raise error from None


# the compiled modules (setup.py): the core, and the results' CSV cells
_COMPILED = ("rocesim._core.", "rocesim.results._csv_cells")

try:
    from rocesim import traffic
    from rocesim.network import topology
    from rocesim.errors import ScenarioError
    from rocesim.simulation import Simulation       # before Results: a missing build names the core
    from rocesim.results import Results
except ModuleNotFoundError as e:
    if not (e.name or "").startswith(_COMPILED):
        raise
    _refuse_unbuilt(e.name)
