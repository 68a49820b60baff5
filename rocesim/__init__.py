"""rocesim: a fast packet-level simulator of RoCE datacenter networks.

Build a `Simulation` from a `topology`, add flows (or whole traffic patterns from
`rocesim.traffic`), run it, and read `Results` as numpy arrays; or describe the same
in a YAML scenario and use `rocesim run`.
"""
from rocesim import topology, traffic
from rocesim.errors import ScenarioError
from rocesim.results import Results
from rocesim.simulation import Simulation

__version__ = "0.1.0"
__all__ = ["Simulation", "Results", "ScenarioError", "topology", "traffic", "__version__"]
