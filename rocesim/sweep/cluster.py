"""The same runs on a Dask distributed cluster (`pip install "rocesim[dask]"`).

Every task is `run_folder.run_one(run, outdir)`: the worker writes the run's folder into the
shared output path exactly as a local worker does (temporary folder, renamed when
complete), so `outdir` must be the same path on every worker (a shared file system).
Start a cluster with

    dask scheduler &                          # prints tcp://HOST:8786
    dask worker tcp://HOST:8786 --nworkers 8 --nthreads 1     # on each machine

and run `rocesim sweep SWEEP.yaml -o /shared/out --scheduler tcp://HOST:8786`.  On
Ctrl-C or SIGTERM the runs not yet started are cancelled; Dask cannot stop a task that
is running, so those finish on their worker and are kept if complete (a LocalCluster
started here is closed, and its runs with it).
"""
from __future__ import annotations

import logging
import signal
import time

from rocesim.errors import ScenarioError
import rocesim.sweep.run_folder as run_folder
from rocesim.sweep.local import POLL_S, Interrupted, catch_stop_signals


def _client(scheduler, workers: int):
    """(client, cluster to close or None) for an address, "local" or a Client."""
    try:
        import distributed
    except ImportError:
        raise ScenarioError("--scheduler", 'Dask is not installed: pip install "rocesim[dask]"') from None
    if isinstance(scheduler, distributed.Client):
        return scheduler, None, False
    if scheduler == "local":
        logging.getLogger("distributed").setLevel(logging.ERROR)     # no warnings about cancelled runs
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.ERROR)
        return distributed.Client(cluster), cluster, True
    try:
        return distributed.Client(scheduler, timeout="10s"), None, True
    except (OSError, TimeoutError, ValueError) as e:
        raise ScenarioError("--scheduler", f"cannot reach the Dask scheduler {scheduler}: {e}") from None


def run_dask(runs, outdir: str, scheduler, workers: int, on_result, on_tick=lambda running: None) -> None:
    """Run `runs` as Dask tasks; `on_result(outcome)` as each ends.  Raises Interrupted."""
    if not runs:
        return
    client, cluster, own = _client(scheduler, workers)

    def stop(signum, frame):
        raise Interrupted(signum)

    old = catch_stop_signals(stop)
    futures = {}
    try:
        slots = max(1, sum(client.nthreads().values()))
        futures = {client.submit(run_folder.run_one, r, outdir, key=f"rocesim-{r.name}-{id(r)}", pure=False): r
                   for r in runs}
        remaining = set(futures)
        while remaining:
            time.sleep(POLL_S)
            finished = [f for f in remaining if f.done()]
            for f in finished:
                remaining.discard(f)
                run = futures[f]
                if f.status == "finished":
                    on_result(f.result())
                else:
                    on_result(run_folder.record_failure(outdir, run, f"the Dask task failed: {f.exception()!r}"))
            on_tick(min(len(remaining), slots))
    except (KeyboardInterrupt, Interrupted) as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        client.cancel(list(futures))
        _close(client, cluster, own)
        raise Interrupted(signum) from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    _close(client, cluster, own)


def _close(client, cluster, own) -> None:
    if own:
        client.close()
    if cluster is not None:
        cluster.close()
