"""What a run produced and how it is looked at: per-flow arrays and files (`run`), sampled
rates and queues (`sampling`), slowdown statistics (`metrics`) and figures (`plot`, which
alone imports matplotlib)."""
from rocesim.results.run import FLOW_COLUMNS, Results, read_csv, read_flows_csv, write_csv

__all__ = ["Results", "FLOW_COLUMNS", "read_csv", "read_flows_csv", "write_csv"]
