"""What a `Simulation` builds before its run, one job per file, none calling back up:

* `run_settings`: the settings resolved once against their declarations (`RunSettings`);
* `pfc`: the PFC physics of every port (headroom, the dynamic threshold's shift, the
  buffer check);
* `network`: the network as the core's arrays and parameters (`Network`: ports, routes,
  PFC, ECN per rate);
* `nodes`: the dependency graph's nodes (network flows and compute steps) and edges as
  columns, checked as they are added (`Nodes`);
* `connections`: the 5-tuple of the queue pair each flow rides, and its ECMP hashes handed
  to the core (`hash_arrays`);
* `core_build`: the core built from the above, the scheme installed, monitors and faults
  set (`build_core`).

`rocesim.simulation.Simulation` is the front that holds them; `rocesim.results.record.RunRecord`
is the frozen record of a run that results are made from.
"""
