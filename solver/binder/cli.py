"""`kplace export`, `kplace run` and `kplace extender serve` (loaded lazily by `solver.cli.LAZY_COMMANDS`)."""

from __future__ import annotations

import logging
import sys

import click
from kplace.solver.cli import (
    CONFIG_OPT,
    CONTEXT_OPT,
    KUBECONFIG_OPT,
    OUTPUT_OPTS,
    STATE_ARG,
    load_snapshot,
    output_choice,
    resolve_config,
)

_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def _json_logging(level: str) -> None:
    from .loop import JsonLogFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter())
    root = logging.getLogger("kplace")
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))
    root.propagate = False


LOG_LEVEL_OPT = click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
                             default="info", show_default=True, help="Structured (JSON lines) log level, on stderr.")


@click.command(context_settings=_SETTINGS)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), required=True, help="The cluster to read.")
@CONTEXT_OPT
@OUTPUT_OPTS("json", "yaml", file="Write the List here (atomically) instead of to stdout.")
@click.option("--page-size", type=click.IntRange(min=1), default=500, show_default=True,
              help="Objects per list call (limit/continue), as kubectl's --chunk-size.")
def export(kubeconfig, context, output, out_file, page_size):
    """Write the cluster's state as the v1 List `kubectl get ... -A -o json` would print.

    Lists nodes, pods, PDBs, PriorityClasses, namespaces, PVs, PVCs, StorageClasses, CSINodes, services,
    ReplicaSets and StatefulSets, in pages (so 50,000 pods work). The file is a STATE for every command.

    \b
    Examples:
      kplace export --kubeconfig ~/.kube/config --output-file state.json
      kplace export --kubeconfig ~/.kube/config --context prod | kplace inspect -
    """
    from kplace.solver.output import dumps_as, write_atomic

    from .live import export_list

    output, out_file = output_choice(output, out_file)
    data = export_list(kubeconfig, context, page_size=page_size)
    text = dumps_as(data, output)
    if out_file in (None, "-"):
        sys.stdout.write(text)
    else:
        write_atomic(out_file, text)
        click.echo(f"wrote {len(data['items'])} objects to {out_file}", err=True)


@click.command(context_settings=_SETTINGS)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="Cluster to schedule for. Default: the pod's service account (running in the cluster).")
@CONTEXT_OPT
@click.option("--scheduler-name", default="kplace", show_default=True,
              help="Schedule pending pods whose spec.schedulerName is this.")
@click.option("--engine", type=click.Choice(["cpsat", "greedy"]), default="cpsat", show_default=True)
@click.option("--window", type=click.IntRange(min=1), default=100, show_default=True,
              help="At most this many pods per window, in queue order.")
@click.option("--time-limit", type=click.FloatRange(min=0.05), default=5.0, show_default=True,
              help="CP-SAT seconds for a full window; a window of k pods gets its k/--window share (at least 0.5).")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True, help="CP-SAT search workers.")
@CONFIG_OPT
@click.option("--port", type=click.IntRange(min=0, max=65535), default=10251, show_default=True,
              help="Port for /healthz and /metrics (0: any free port, logged).")
@click.option("--bind-address", default="0.0.0.0", show_default=True, help="Address for /healthz and /metrics.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="Binding calls in flight at once.")
@click.option("--resync", type=click.FloatRange(min=1), default=60.0, show_default=True,
              help="Seconds between re-lists of PDBs, PriorityClasses, volumes, services, ... (nodes and pods "
                   "are watched).")
@click.option("--max-windows", type=click.IntRange(min=1), default=None,
              help="Stop after committing this many windows.")
@click.option("--once", is_flag=True, help="Commit one window, then stop (same as --max-windows 1).")
@click.option("--idle-exit", type=click.FloatRange(min=0), default=None,
              help="Stop after this many seconds with nothing to schedule.")
@click.option("--dry-run", is_flag=True, help="Bind with the API's server-side dry run (nothing changes).")
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True,
              help="Bind only while holding a coordination.k8s.io Lease, as kube-scheduler; run several replicas "
                   "for availability.")
@click.option("--leader-elect-lease-duration", type=click.FloatRange(min=1), default=15.0, show_default=True,
              help="Seconds a standby waits, after the Lease last changed, before taking it over.")
@click.option("--leader-elect-renew-deadline", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds the leader keeps trying to renew before it stops binding.")
@click.option("--leader-elect-retry-period", type=click.FloatRange(min=0.05), default=2.0, show_default=True,
              help="Seconds between attempts to acquire or renew the Lease.")
@click.option("--leader-elect-resource-name", default="kplace", show_default=True, help="The Lease's name.")
@click.option("--leader-elect-resource-namespace", default="kube-system", show_default=True,
              help="The Lease's namespace.")
@LOG_LEVEL_OPT
def run(kubeconfig, context, scheduler_name, engine, window, time_limit, workers, config_path, port, bind_address,
        concurrency, resync, max_windows, once, idle_exit, dry_run, leader_elect, leader_elect_lease_duration,
        leader_elect_renew_deadline, leader_elect_retry_period, leader_elect_resource_name,
        leader_elect_resource_namespace, log_level):
    """Run as a scheduler: watch nodes and pods, decide windows of pending pods, bind them.

    Takes pending pods whose spec.schedulerName is --scheduler-name, in queue order, in windows; decides
    each window (engine, then the verifier) and POSTs the Bindings. Unplaced pods and failed bindings are
    retried with kube's backoff (1 s doubling to 10 s). Serves /healthz and Prometheus /metrics; logs JSON
    lines; on SIGTERM it abandons a window still being decided or finishes one being committed, then exits.

    With --leader-elect (the default) only the replica holding the Lease (holder identity hostname_uuid)
    decides and binds; the others keep their caches warm and take over when the leader's Lease expires, or at
    once when it releases the Lease on SIGTERM. A leader that cannot renew within the renew deadline stops
    binding at once and becomes a standby again. --no-leader-elect: run exactly one replica.

    \b
    Examples:
      kplace run --kubeconfig ~/.kube/config --scheduler-name kplace --window 200 --time-limit 10
      kplace run                      # in a pod: the service account's credentials
      kplace run --kubeconfig kc --once --engine greedy --dry-run --no-leader-elect
    """
    import signal

    from kplace.models.errors import KplaceError

    from .leader import LeaderElectionOptions
    from .loop import Runner, RunOptions, _event

    election = None
    if leader_elect:
        election = LeaderElectionOptions(
            lease_duration=leader_elect_lease_duration, renew_deadline=leader_elect_renew_deadline,
            retry_period=leader_elect_retry_period, resource_name=leader_elect_resource_name,
            resource_namespace=leader_elect_resource_namespace)
        try:
            election.validate()
        except KplaceError as exc:
            raise click.UsageError(str(exc)) from None
    _json_logging(log_level)
    opts = RunOptions(scheduler_name=scheduler_name, window=window, time_limit=time_limit, engine=engine,
                      workers=workers, port=port, bind_address=bind_address, concurrency=concurrency, resync=resync,
                      max_windows=1 if once else max_windows, idle_exit=idle_exit, dry_run=dry_run,
                      config_path=config_path, leader_election=election)
    runner = Runner(kubeconfig, context, opts)

    def on_signal(signum, _frame):
        _event(logging.INFO, "signal received; stopping", signal=signal.Signals(signum).name,
               window_in_flight=runner.in_flight)
        runner.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    runner.run()


@click.group(context_settings=_SETTINGS)
def extender():
    """kube-scheduler's HTTP extender protocol, backed by kplace's global plan.

    \b
    Examples:
      kplace extender serve --kubeconfig ~/.kube/config --port 8888
      kplace extender serve state.json --port 8888      # plan over a file; /bind needs --kubeconfig
    """


def _loopback(address: str) -> bool:
    import ipaddress

    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


@extender.command(context_settings=_SETTINGS)
@STATE_ARG
@KUBECONFIG_OPT
@CONTEXT_OPT
@CONFIG_OPT
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8888, show_default=True)
@click.option("--bind-address", default="127.0.0.1", show_default=True,
              help="Address to listen on; beyond loopback (0.0.0.0) needs --tls-client-ca or --token-file.")
@click.option("--tls-cert", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Serve HTTPS with this certificate (PEM); needs --tls-key.")
@click.option("--tls-key", type=click.Path(dir_okay=False, exists=True), default=None)
@click.option("--tls-client-ca", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Require client certificates signed by this CA (kube-scheduler's extender tlsConfig).")
@click.option("--token-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Require `Authorization: Bearer <token>` with the token in this file.")
@click.option("--allow-unauthenticated", is_flag=True,
              help="Listen beyond loopback without client certificates or a token (anyone who reaches the port "
                   "can then ask for Bindings kplace's plan allows).")
@click.option("--engine", type=click.Choice(["cpsat", "greedy"]), default="cpsat", show_default=True)
@click.option("--time-limit", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="CP-SAT seconds per re-plan (keep it under kube-scheduler's httpTimeout, 5 s by default).")
@click.option("--refresh", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="With live state: seconds between re-reads of the cluster (0: never).")
@LOG_LEVEL_OPT
def serve(state, kubeconfig, context, config_path, port, bind_address, tls_cert, tls_key, tls_client_ca, token_file,
          allow_unauthenticated, engine, time_limit, refresh, log_level):
    """Serve POST /filter, /prioritize and /bind for kube-scheduler (extender protocol, Go field names), and GET
    /healthz and /metrics (Prometheus).

    STATE files give the cluster state (else it is read through --kubeconfig). Binding needs --kubeconfig.

    \b
    Examples:
      kplace extender serve --kubeconfig ~/.kube/config --port 8888
      kplace extender serve --kubeconfig kc --bind-address 0.0.0.0 --tls-cert tls.crt --tls-key tls.key \\
          --tls-client-ca scheduler-ca.crt
    """
    from .extender import Extender, ExtenderOptions, ExtenderServer

    if bool(tls_cert) != bool(tls_key):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if tls_client_ca and not tls_cert:
        raise click.UsageError("--tls-client-ca needs --tls-cert and --tls-key")
    token = None
    if token_file:
        with open(token_file, encoding="utf-8") as fh:
            token = fh.read().strip()
        if not token:
            raise click.UsageError(f"--token-file {token_file}: the file is empty")
    if not _loopback(bind_address) and not (tls_client_ca or token) and not allow_unauthenticated:
        raise click.UsageError(f"--bind-address {bind_address} listens beyond this machine: give --tls-client-ca "
                               "or --token-file (or --allow-unauthenticated)")
    _json_logging(log_level)
    snapshot = load_snapshot(state, kubeconfig, context)
    config = resolve_config(config_path, snapshot.scheduler_config)
    client = reload = None
    if kubeconfig:
        from .kube import new_client

        client = new_client(kubeconfig, context)
        if not state:
            from .live import read_cluster

            def reload():
                return read_cluster(kubeconfig, context)

    ext = Extender(snapshot, config, ExtenderOptions(engine=engine, time_limit=time_limit, refresh=refresh),
                   client=client, reload=reload)
    server = ExtenderServer(ext, bind_address, port, tls_cert=tls_cert, tls_key=tls_key, client_ca=tls_client_ca,
                            token=token)
    logging.getLogger("kplace.extender").info("serving the extender protocol on %s", server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
