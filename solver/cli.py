"""The `kplace` command line: thin click commands over library functions.

Heavy libraries (ortools, the kubernetes client, matplotlib) are imported inside the commands that need
them, so `kplace --help` starts fast. Every KplaceError becomes one line on stderr and its exit code (2 for
bad input, 3 when the verifier rejects a plan).
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from contextlib import contextmanager
from functools import partial
from importlib.metadata import PackageNotFoundError, version

import click
from kplace.models.errors import KplaceError
from kplace.solver import KUBE_SCHEDULER


def _version() -> str:
    try:
        return version("kplace")
    except PackageNotFoundError:  # pragma: no cover - running from a tree without metadata
        return "0+unknown"


# Commands that live in their own modules, imported only when invoked (keeps `kplace --help` fast).
LAZY_COMMANDS: dict[str, str] = {
    "compare": "kplace.solver.compare.cli:compare",
    "export": "kplace.solver.binder.cli:export",
    "run": "kplace.solver.binder.cli:run",
    "extender": "kplace.solver.binder.cli:extender",
    "rebalance": "kplace.solver.rebalance.cli:rebalance",
    "roadef": "kplace.solver.roadef.cli:roadef",
    "roadef-score": "kplace.solver.roadef.cli:roadef_score",  # deprecated: kplace roadef score
}


class _Group(click.Group):
    """Turns KplaceError into one clear line and a non-zero exit, never a traceback; loads LAZY_COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy(ctx)})

    def _lazy(self, ctx: click.Context) -> list[str]:
        import importlib.util

        out = []
        for name, target in LAZY_COMMANDS.items():
            module = target.split(":")[0]
            try:
                if importlib.util.find_spec(module) is not None:
                    out.append(name)
            except ModuleNotFoundError:
                continue
        return out

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is None and name in LAZY_COMMANDS and name in self._lazy(ctx):
            import importlib

            module, attr = LAZY_COMMANDS[name].split(":")
            cmd = getattr(importlib.import_module(module), attr)
        return cmd

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KplaceError as exc:
            click.echo(f"kplace: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:  # `kplace ... | head`
            from .output import quiet_broken_pipe

            quiet_broken_pipe()


STATE_ARG = click.argument("state", nargs=-1, required=False, metavar="STATE...")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")


def parse_duration(text: str, option: str = "--every") -> float:
    """Seconds in '10m', '30s', '1h', '250ms' or a bare number of seconds (kubectl's durations)."""
    m = _DURATION.match(text.strip())
    if not m:
        raise click.BadParameter(f"{text!r} is not a duration like 30s, 10m or 1h", param_hint=option)
    value, unit = float(m.group(1)), m.group(2) or "s"
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def _set_request_timeout(_ctx, _param, value: str | None) -> None:
    if value is None:
        return
    from .binder.kube import TIMEOUTS

    seconds = parse_duration(value, "--request-timeout")
    if seconds > 0:
        TIMEOUTS.call = TIMEOUTS.list = seconds


def default_kubeconfig() -> str | None:
    """kubectl's kubeconfig: $KUBECONFIG (a colon-separated list, merged as kubectl merges it) when one of its files
    exists, else ~/.kube/config when it exists, else None (in a pod: the service account)."""
    env = os.environ.get("KUBECONFIG", "")
    if env and any(os.path.exists(os.path.expanduser(p)) for p in env.split(os.pathsep) if p):
        return env
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.exists(home) else None


def _kubeconfig(_ctx, _param, value: str | None) -> str | None:
    return value or default_kubeconfig()


def KUBECONFIG_OPT(f):
    """`--kubeconfig FILE` (default: $KUBECONFIG, then ~/.kube/config, as kubectl) and kubectl's
    `--request-timeout` (per API call; default 10 s, 60 s per list page)."""
    f = click.option("--request-timeout", default=None, expose_value=False, callback=_set_request_timeout,
                     metavar="DURATION", help="How long one API request may take before it fails (e.g. 5s, 1m).")(f)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, callback=_kubeconfig,
                        help="Read the cluster through the API (when no STATE is given) / commit to it. Default: "
                             "$KUBECONFIG, then ~/.kube/config.")(f)


_NAMESPACE = "kplace.namespace"


def _namespace(ctx: click.Context, _param, value: str | None) -> str | None:
    if value:
        ctx.find_root().meta[_NAMESPACE] = value
    return value


def NAMESPACE_OPTS(f):
    """kubectl's `-n/--namespace` (decide only that namespace's pending pods) and `-A/--all-namespaces` (the
    default: every namespace's)."""
    f = click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, expose_value=False,
                     help="Decide the pending pods of every namespace (the default).")(f)
    return click.option("-n", "--namespace", default=None, expose_value=False, callback=_namespace,
                        help="Decide only this namespace's pending pods (bound pods of every namespace still count "
                             "for the rules).")(f)
CONTEXT_OPT = click.option("--context", default=None, help="kubeconfig context to use.")


def load_snapshot(state: tuple[str, ...], kubeconfig: str | None = None, context: str | None = None):
    """The state files, or, with --kubeconfig and no files, the live cluster read through the API."""
    if state:
        from kplace.models import load_state

        return load_state(state)
    if kubeconfig:
        from .binder.live import read_cluster

        return read_cluster(kubeconfig, context)
    raise click.UsageError("give STATE files (or - for stdin), or --kubeconfig to read the live cluster")
EXIT_COMMIT = 4  # a commit to the API server that did not fully succeed
EXIT_UNPLACED = 5  # schedule --fail-on-unplaced: some pending pod was left unplaced

FORMATS = ("table", "wide", "json", "yaml", "name")
_LEGACY_FILE = "kplace.legacy_output_file"


def _warn(text: str) -> None:
    click.echo(f"kplace: warning: {text}", err=True)


def _output_value(formats: tuple[str, ...], ctx: click.Context, _param, values: tuple[str, ...]) -> str:
    """kubectl's -o: the format. A value that is no format is the old `-o FILE` (one release more, with a warning)."""
    chosen = [v for v in values if v in formats]
    files = [v for v in values if v not in formats]
    if len(set(chosen)) > 1:
        raise click.BadParameter(f"give one format, not {', '.join(chosen)}", param_hint="-o/--output")
    for v in files:
        if v in FORMATS:
            raise click.BadParameter(f"{v!r} is not an output format of this command (formats: "
                                     f"{', '.join(formats)})", param_hint="-o/--output")
        if "." not in v and "/" not in v and v != "-":
            raise click.BadParameter(f"{v!r} is not an output format (formats: {', '.join(formats)})",
                                     param_hint="-o/--output")
        _warn(f"-o FILE is deprecated: -o is the output format, as in kubectl; write the file with --output-file "
              f"{v}")
        ctx.meta[_LEGACY_FILE] = v
    return chosen[-1] if chosen else formats[0]


def _legacy_format(ctx: click.Context, _param, value: str | None) -> None:
    if value is not None:
        _warn(f"-O {value} is deprecated: use -o {value} (or --output {value})")
        ctx.meta["kplace.legacy_format"] = value


def OUTPUT_OPTS(*formats: str, file: str | None = None):
    """kubectl's `-o, --output FORMAT` (the first of `formats` by default), and with `file` an `--output-file FILE`
    option saying what is written there, atomically. The old `-O FORMAT` and `-o FILE` still work, with a warning."""
    formats = formats or ("table", "json", "yaml")

    def deco(f):
        if file:
            f = click.option("--output-file", "out_file", type=click.Path(dir_okay=False), default=None,
                             metavar="FILE", help=file)(f)
        f = click.option("-O", "legacy_format", hidden=True, default=None, expose_value=False,
                         type=click.Choice(formats), callback=_legacy_format)(f)
        return click.option("-o", "--output", "output", multiple=True, metavar="|".join(formats),
                            callback=partial(_output_value, formats),
                            help=f"Output format: {', '.join(formats)} (default {formats[0]}).")(f)

    return deco


def output_choice(output: str, out_file: str | None = None) -> tuple[str, str | None]:
    """(format, file) with the deprecated spellings folded in."""
    meta = click.get_current_context().meta
    return meta.get("kplace.legacy_format") or output, out_file or meta.get(_LEGACY_FILE)


OUTPUT_OPT = OUTPUT_OPTS("table", "json", "yaml")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(_version(), prog_name="kplace",
                      message=f"%(prog)s, version %(version)s (reproduces kube-scheduler {KUBE_SCHEDULER})")
def main() -> None:
    """kplace: global placement of Kubernetes pods.

    STATE is exported cluster state: files or directories of JSON or YAML (`kubectl get ... -o json`,
    manifests, Deployments and other workloads, the kube-scheduler-simulator's export), or `-` for stdin.

    \b
    Examples:
      kubectl get nodes,pods,pdb,priorityclasses,namespaces -A -o json > state.json
      kplace inspect state.json
    """


@main.command()
@STATE_ARG
@OUTPUT_OPT
@KUBECONFIG_OPT
@CONTEXT_OPT
def inspect(state: tuple[str, ...], output: str, kubeconfig: str | None, context: str | None) -> None:
    """Summarise exported cluster state: nodes, pods, capacity, PDBs and warnings.

    \b
    Examples:
      kplace inspect state.json
      kplace inspect cluster/ apps/deploy.yaml -o json
      kubectl get nodes,pods -A -o json | kplace inspect -
    """
    from kplace.models import compile_index

    from .inspect import render_summary, summarize

    output, _ = output_choice(output)
    index = compile_index(load_snapshot(state, kubeconfig, context))
    summary = summarize(index)
    if output in ("json", "yaml"):
        from .output import write_data

        write_data(summary, output)
    else:
        render_summary(summary)


_POLICY_KEY = "kplace.policy_config_file"


def _remember_policy(ctx: click.Context, _param, value: str | None) -> None:
    ctx.meta[_POLICY_KEY] = value


def CONFIG_OPT(f):
    """`--config FILE` (KubeSchedulerConfiguration) and `--policy-config-file FILE` (legacy Policy)."""
    f = click.option(
        "--policy-config-file", type=click.Path(dir_okay=False), default=None, expose_value=False,
        callback=_remember_policy,
        help="Legacy scheduler Policy file (kind: Policy, predicates and priorities), translated to a profile.",
    )(f)
    return click.option(
        "--config", "config_path", type=click.Path(dir_okay=False), default=None,
        help="KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1). Default: kube's default profile.",
    )(f)


def CPSAT_OPTS(f):
    """The CP-SAT engine's options: --window, --time-limit, --workers, --objective, --deterministic."""
    for option in reversed([
        click.option("--window", type=click.IntRange(min=1), default=1000, show_default=True,
                     help="Pods per CP-SAT window, in queue order; earlier windows are fixed for later ones."),
        click.option("--time-limit", type=click.FloatRange(min=0.05), default=10.0, show_default=True,
                     help="Seconds of CP-SAT search for the whole run (split over windows; deterministic seconds "
                          "unless --wall-clock). `schedule` also ends its whole decision within this many wall "
                          "seconds unless --deadline says otherwise."),
        click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
                     help="CP-SAT search workers."),
        click.option("--objective", type=click.Choice(["default", "pack", "balance"]), default="default",
                     show_default=True, help="After pods placed: the profile's scores, fewest nodes, or lowest peak."),
        click.option("--deterministic/--wall-clock", default=True, show_default=True,
                     help="Deterministic search (same seed, same plan) or wall-clock limits and a parallel portfolio."),
    ]):
        f = option(f)
    return f


def EXECUTOR_OPTS(f):
    """Where the CP-SAT searches run: --executor, --ray-address."""
    f = click.option("--ray-address", default=None, metavar="ADDRESS",
                     help="With --executor ray: the Ray cluster to join (default: $RAY_ADDRESS, else a local Ray "
                          "instance started for the run).")(f)
    return click.option(
        "--executor", type=click.Choice(["auto", "inprocess", "pool", "ray"]), default="auto", show_default=True,
        help="Where independent searches run (a window's components; rebalance: a neighbourhood search's round, "
             "one neighbourhood per zone): here, one after another (inprocess); side by side in a local process "
             "pool of cores/--workers processes (pool); or on Ray (ray, `pip install 'kplace[ray]'`). auto: the "
             "pool when there is more than one and the pool runs more than one search at a time, else inprocess. "
             "Every executor gives the same plan in deterministic mode.")(f)


PDB_OPT = click.option(
    "--allow-pdb-violations", is_flag=True,
    help="Preemption may take a PodDisruptionBudget below zero as a last resort, as kube-scheduler does (each such "
         "eviction is flagged in the plan). Default: never.")


def resolve_config(config_path: str | None, embedded: dict | None = None):
    """The SchedulerConfig from --config, or --policy-config-file, or the state's embedded one, or defaults."""
    from .framework.config import load_config

    ctx = click.get_current_context(silent=True)
    policy = ctx.find_root().meta.get(_POLICY_KEY) if ctx is not None else None
    return load_config(config_path, embedded, policy_path=policy)


MOVES_OPT = click.option(
    "--allow-moves", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
    help="CP-SAT may move up to N running pods that a controller owns (PDB-safe waves, before any eviction) when "
         "that lets pending pods in; a move costs less than an eviction. Default: no move.")


QUIET_OPT = click.option("-q", "--quiet", is_flag=True, help="No progress display (it shows only on a terminal).")


@contextmanager
def schedule_progress(engine: str, opts, quiet: bool):
    """On a terminal (stderr) and unless --quiet: a rich progress display of the engine's work — CP-SAT's windows
    done, pods placed so far, and the stage being solved with its best objective and bound; greedy's pods done and
    placed. Yields greedy's hook (None when nothing is shown)."""
    from .output import console as make_console

    con = make_console(stderr=True)
    if quiet or not con.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=con, transient=True)
    label = "CP-SAT windows" if engine == "cpsat" else "greedy (kube-scheduler)"
    task = progress.add_task(label, total=None)
    if opts is not None:
        def on_window(done, total, placed, decided):
            progress.update(task, total=total, completed=done,
                            description=f"{label}: {placed}/{decided} pods placed")

        def on_progress(_seconds, objective, bound, stage):
            desc = progress.tasks[0].description.split(" | ")[0]
            progress.update(task, description=f"{desc} | {stage}: {objective:,.0f} / bound {bound:,.0f}")

        opts.on_window, opts.on_progress = on_window, on_progress

    def on_pod(done, total, placed):  # greedy: pods decided and placed so far
        progress.update(task, total=total, completed=done, description=f"{label}: {placed}/{done} pods placed")

    with progress:
        yield on_pod


def load_index(state: tuple[str, ...], config_path: str | None, kubeconfig: str | None = None,
               context: str | None = None):
    """(ClusterIndex, SchedulerConfig) from state files or the live cluster, and --config/--policy-config-file.
    With `-n/--namespace`, only that namespace's pending pods are decided; every bound pod, whatever its
    namespace, still counts for the rules (capacity, affinity, spread)."""
    from dataclasses import replace

    from kplace.models import compile_index

    snapshot = load_snapshot(state, kubeconfig, context)
    ctx = click.get_current_context(silent=True)
    namespace = ctx.find_root().meta.get(_NAMESPACE) if ctx is not None else None
    if namespace:
        pods = [p for p in snapshot.pods if p.spec.node_name or p.metadata.namespace == namespace]
        snapshot = replace(snapshot, pods=pods)
    index = compile_index(snapshot)
    freeze_heap()
    return index, resolve_config(config_path, snapshot.scheduler_config)


def freeze_heap() -> None:
    """Move every object alive now (the snapshot and its index: millions on a big cluster) out of the cyclic garbage
    collector's reach (`gc.freeze`), so that its full collections during scheduling do not rescan them again and
    again; they are still freed by reference counting. For one-shot commands, whose state lives to the end."""
    import gc

    gc.freeze()


@main.command()
@STATE_ARG
@click.option("--engine", type=click.Choice(["cpsat", "greedy"]), default="cpsat", show_default=True,
              help="cpsat decides a window of pods at once; greedy reproduces kube-scheduler.")
@CPSAT_OPTS
@EXECUTOR_OPTS
@CONFIG_OPT
@click.option("--tie-break", type=click.Choice(["order", "random"]), default="order", show_default=True,
              help="order: kube's heap order (1.35 on; deterministic); random: uniform among top nodes, seeded.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for every random choice.")
@OUTPUT_OPTS("table", "wide", "json", "yaml", "name",
             file="With --bind none: write the JSON plan here; with --bind manifest: the Binding manifest.")
@click.option("--bind", type=click.Choice(["none", "manifest", "api"]), default="none", show_default=True,
              help="none: report only; manifest: write v1 Bindings (and Evictions) to --output-file; api: POST "
                   "pods/binding.")
@click.option("--manifest-format", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@QUIET_OPT
@click.option("--fail-on-unplaced", is_flag=True,
              help=f"Exit {EXIT_UNPLACED} when some pending pod is left unplaced (for scripts and CI).")
@KUBECONFIG_OPT
@CONTEXT_OPT
@NAMESPACE_OPTS
@click.option("--dry-run", is_flag=True, help="With --bind api: the API server's server-side dry run.")
@PDB_OPT
@MOVES_OPT
@click.option("--deadline", type=click.FloatRange(min=0), default=None,
              help="Wall-clock seconds for the whole CP-SAT decision (greedy passes, models, searches, fallbacks; "
                   "loading not included). Once passed, the windows left take greedy's plan (one greedy run over "
                   "every pod once it has ended) and the output says so; a run that ends before it is the "
                   "deterministic one. Default: --time-limit; 0: no deadline.")
def schedule(state, engine, window, time_limit, workers, objective, deterministic, executor, ray_address, config_path,
             tie_break, seed, output, out_file, bind, manifest_format, quiet, fail_on_unplaced, kubeconfig, context,
             dry_run, allow_pdb_violations, allow_moves, deadline):
    """Place every pending pod and report each pod's node, or kube's reason why not.

    \b
    Examples:
      kplace schedule state.json
      kplace schedule state.json --engine greedy --config sched.yaml
      kplace schedule state.json --window 500 --time-limit 30 --objective pack -o json --output-file plan.json
      kplace schedule state.json --bind manifest --output-file bindings.yaml && kubectl create -f bindings.yaml
      kplace schedule --kubeconfig ~/.kube/config --bind api --dry-run
      kplace schedule state.json --allow-moves 5
      kplace schedule big.json --time-limit 60 --deadline 60   # decided within a minute of wall time
      kplace schedule tenants.json --workers 1 --executor pool   # independent components side by side
    """
    from .output import dumps, write_atomic, write_data
    from .report import render_plan
    from .schedule import decide

    output, out_file = output_choice(output, out_file)
    if bind == "manifest" and not out_file:
        raise click.UsageError("--bind manifest needs --output-file FILE for the Binding manifest")
    if bind == "api" and not kubeconfig:
        raise click.UsageError("--bind api needs --kubeconfig")
    if allow_moves and engine != "cpsat":
        raise click.UsageError("--allow-moves needs --engine cpsat: kube-scheduler never moves a running pod")
    index, config = load_index(state, config_path, kubeconfig, context)
    opts = None
    if engine == "cpsat":
        from .cpsat import CpsatOptions

        opts = CpsatOptions(window=window, time_limit=time_limit, workers=workers, seed=seed, objective=objective,
                            deterministic=deterministic, tie_break=tie_break,
                            allow_pdb_violations=allow_pdb_violations, executor=executor, ray_address=ray_address,
                            deadline=time_limit if deadline is None else deadline or None)
    with schedule_progress(engine, opts, quiet) as on_pod:
        plan = decide(index, config, engine, cpsat_options=opts, tie_break=tie_break, seed=seed, on_pod=on_pod,
                      allow_pdb_violations=allow_pdb_violations, allow_moves=allow_moves)
    data = plan.to_dict()
    if bind == "none":
        if out_file:
            write_atomic(out_file, dumps(data))
    else:
        from .binder import commit
        from .binder.volumes import bind_timeout_of

        extra = {"bind_timeout": bind_timeout_of(config)} if bind == "api" else {}
        data["commit"] = commit(plan, index, bind, out_file=out_file, fmt=manifest_format, kubeconfig=kubeconfig,
                                context=context, dry_run=dry_run, **extra)
    if output in ("json", "yaml", "name"):
        for w in plan.warnings:  # the table shows them; machine formats keep stdout for the data
            _warn(w)
    if output in ("json", "yaml"):
        write_data(data, output)
    elif output == "name":
        for p in plan.placements:
            if p.node is not None:
                click.echo(f"pod/{p.pod}")
    else:
        render_plan(plan, wide=output == "wide")
        if bind != "none":
            from .binder.summary import render_commit

            render_commit(data["commit"])
    unplaced = sum(1 for p in plan.placements if p.node is None)
    if bind == "api":
        from .binder.summary import commit_shortfall

        short = commit_shortfall(data["commit"])
        if short:
            click.echo(f"kplace: error: {short}", err=True)
            sys.exit(EXIT_COMMIT)
    if fail_on_unplaced and unplaced:
        click.echo(f"kplace: error: {unplaced} of {len(plan.placements)} pending pod(s) left unplaced", err=True)
        sys.exit(EXIT_UNPLACED)


@main.command()
@STATE_ARG
@click.option("--pod", "pod_key", required=True, metavar="NAMESPACE/NAME", help="The pod to explain.")
@CONFIG_OPT
@click.option("--candidates", default="feasible", show_default=True, metavar="feasible|all|NODE,...",
              help="Score the feasible nodes (as kube does), every node as if feasible, or the listed nodes.")
@click.option("--plan", "plan_file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Explain the pod's outcome in this plan (JSON from `kplace schedule -o json`).")
@click.option("--engine", type=click.Choice(["cpsat", "greedy"]), default=None,
              help="Run this engine first and explain the pod's outcome in its plan.")
@click.option("--in-plan/--alone", "in_plan", default=None,
              help="In the plan (the default with --plan or --engine), or alone against the running cluster.")
@OUTPUT_OPT
@KUBECONFIG_OPT
@CONTEXT_OPT
@NAMESPACE_OPTS
def explain(state, pod_key, config_path, candidates, plan_file, engine, in_plan, output, kubeconfig, context):
    """Show every filter's verdict and every score, per node, for one pod, and the node kube would pick.

    Alone (the default without a plan), the pod is explained against the state as given: other pending pods are not
    placed first. With --plan or --engine, it is explained in the plan: on the plan's final state, with the nodes
    the plan's other pods took from it, and then alone.

    \b
    Examples:
      kplace explain state.json --pod default/web-0
      kplace explain state.json --pod default/web-0 --engine cpsat
      kplace explain state.json --pod default/web-0 --plan plan.json -o json
      kplace explain state.json --pod default/web-0 --candidates node-1,node-2
    """
    from .explain import explain_in_plan, explain_pod, render_explain, render_in_plan
    from .output import write_data

    output, _ = output_choice(output)
    if "/" not in pod_key:
        pod_key = f"{click.get_current_context().find_root().meta.get(_NAMESPACE) or 'default'}/{pod_key}"
    if plan_file and engine:
        raise click.UsageError("give --plan or --engine, not both")
    if in_plan and not (plan_file or engine):
        raise click.UsageError("--in-plan needs --plan FILE or --engine")
    index, config = load_index(state, config_path, kubeconfig, context)
    if (plan_file or engine) and in_plan is not False:
        if plan_file:
            from .verify import load_plan

            plan = load_plan(plan_file)
        else:
            from .schedule import decide

            plan = decide(index, config, engine)
        result = explain_in_plan(index, config, pod_key, plan, candidates)
        render = render_in_plan
    else:
        result, render = explain_pod(index, config, pod_key, candidates), render_explain
    if output in ("json", "yaml"):
        write_data(result, output)
    else:
        render(result)


@main.command()
@click.argument("state", nargs=-1, required=True, metavar="STATE... PLAN")
@OUTPUT_OPT
@CONFIG_OPT
@PDB_OPT
def verify(state, output, config_path, allow_pdb_violations):
    """Check a plan (JSON from `kplace schedule`) against the state; exit 1 on any violation.

    The last argument is the plan; the others are the state it was made for. A valid plan's score measure
    (each placed pod scored by the profile as if it were scheduled last into the plan's final state) is
    reported too, in total and per plugin.

    \b
    Examples:
      kplace schedule state.json -o json --output-file plan.json
      kplace verify state.json plan.json
    """
    from .measure import plan_measure
    from .output import write_data
    from .report import render_violations
    from .verify import load_plan, verify_plan

    output, _ = output_choice(output)
    if len(state) < 2:
        raise click.UsageError("give the state and then the plan: kplace verify STATE... PLAN")
    *state_files, plan_file = state
    try:
        plan = load_plan(plan_file)
    except KplaceError:
        if any(_is_plan(f) for f in state_files):
            raise click.UsageError(f"{plan_file} is not a plan but an earlier argument is: the plan comes last "
                                   "(kplace verify STATE... PLAN)") from None
        raise
    index, config = load_index(tuple(state_files), config_path)
    violations = verify_plan(index, plan, allow_pdb_violations)
    score = None if violations else plan_measure(index, config, plan)
    if output in ("json", "yaml"):
        write_data({"ok": not violations, "violations": [v.to_dict() for v in violations],
                    "score": score.to_dict() if score else None}, output)
    else:
        render_violations(violations)
        if score is not None:
            parts = ", ".join(f"{k} {v:,}" for k, v in sorted(score.per_plugin.items()))
            click.echo(f"score measure: {score.total:,} over {score.pods} placed pods ({score.mean:,.1f} per pod)"
                       + (f": {parts}" if parts else ""))
    sys.exit(1 if violations else 0)


def _is_plan(path: str) -> bool:
    from .verify import load_plan

    try:
        load_plan(path)
        return True
    except (KplaceError, OSError):
        return False


@main.command()
@click.argument("workload", metavar="WORKLOAD")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="Number of nodes (workload default).")
@click.option("--pods", type=click.IntRange(min=0), default=None,
              help="Number of pending pods (workload default); of all pods, bound ones included, for `scale`.")
@click.option("--pending", default=None, metavar="FRACTION|COUNT",
              help="`scale`: the pending pods, a fraction in [0, 1) of the Deployments' pods or a count "
                   "(--param pending=...).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Workload-specific parameter.")
@OUTPUT_OPTS("json", "yaml", file="Write the List here (atomically) instead of to stdout.")
def generate(workload, nodes, pods, pending, seed, params, output, out_file):
    """Generate a benchmark cluster state as a kubectl-style v1 List (on stdout, or --output-file).

    WORKLOAD is one of the generators that `kplace generate list` lists.

    \b
    Examples:
      kplace generate list
      kplace generate perf-basic --nodes 5000 --pods 10000 --output-file basic.json
      kplace generate dcm --nodes 500 --param fraction=100 > dcm.json
      kplace generate scale --nodes 50000 --pods 500000 --pending 100000 --output-file big.json
    """
    from kplace.instances.generators import generate as make
    from kplace.instances.generators import list_workloads, stream

    from .output import dumps_as, write_atomic, write_list, write_list_atomic

    output, out_file = output_choice(output, out_file)
    if workload == "list":
        for name, desc in list_workloads().items():
            click.echo(f"{name:28} {desc}")
        return
    kv = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--param")
        kv[key] = value
    if pending is not None:
        kv["pending"] = pending
    if output == "json":  # streamed: the big workloads never hold the whole List
        items, annotations = stream(workload, nodes=nodes, pods=pods, seed=seed, params=kv)
        if out_file in (None, "-"):
            write_list(sys.stdout, items, annotations)
            return
        kinds = write_list_atomic(out_file, items, annotations)
        click.echo(f"wrote {workload} to {out_file}: {kinds.get('Node', 0)} nodes, {kinds.get('Pod', 0)} pods "
                   f"({kinds.get('pending', 0)} pending), {sum(kinds.values()) - kinds.get('pending', 0)} objects",
                   err=True)
        return
    data = make(workload, nodes=nodes, pods=pods, seed=seed, params=kv)
    text = dumps_as(data, output)
    if out_file in (None, "-"):
        sys.stdout.write(text)
        return
    write_atomic(out_file, text)
    kinds = Counter(o.get("kind") for o in data.get("items", []))
    pending = sum(1 for o in data.get("items", []) if o.get("kind") == "Pod" and not o["spec"].get("nodeName"))
    click.echo(f"wrote {workload} to {out_file}: {kinds.get('Node', 0)} nodes, {kinds.get('Pod', 0)} pods "
               f"({pending} pending), {sum(kinds.values())} objects", err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
