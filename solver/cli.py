"""The `kplace` command line: thin click commands over library functions.

Heavy libraries (ortools, the kubernetes client, matplotlib) are imported inside the commands that need
them, so `kplace --help` starts fast. Every KplaceError becomes one line on stderr and its exit code (2 for
bad input, 3 when the verifier rejects a plan).
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

import click
from kplace.models.errors import KplaceError


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
    "roadef-score": "kplace.solver.rebalance.roadef_cli:roadef_score",
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
def _parse_duration(text: str) -> float:
    """kubectl's --request-timeout: a number of seconds or a duration with a unit (500ms, 10s, 2m, 1h); 0: none."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if m is None:
        raise click.BadParameter(f"{text!r} is not a duration (examples: 30, 10s, 2m)")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def _set_request_timeout(_ctx, _param, value: str | None) -> None:
    if value is None:
        return
    from .binder.kube import TIMEOUTS

    seconds = _parse_duration(value)
    if seconds > 0:
        TIMEOUTS.call = TIMEOUTS.list = seconds


def KUBECONFIG_OPT(f):
    """`--kubeconfig FILE` and kubectl's `--request-timeout` (per API call; default 10 s, 60 s per list page)."""
    f = click.option("--request-timeout", default=None, expose_value=False, callback=_set_request_timeout,
                     metavar="DURATION", help="How long one API request may take before it fails (e.g. 5s, 1m).")(f)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                        help="Read the cluster through the API (when no STATE is given) / commit to it.")(f)
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

OUTPUT_OPT = click.option(
    "--output", "-O", "output", type=click.Choice(["table", "json"]), default="table", show_default=True,
    help="Human table or machine-readable JSON.",
)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(_version(), prog_name="kplace")
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
      kplace inspect cluster/ apps/deploy.yaml --output json
      kubectl get nodes,pods -A -o json | kplace inspect -
    """
    from kplace.models import compile_index

    from .inspect import render_summary, summarize

    index = compile_index(load_snapshot(state, kubeconfig, context))
    summary = summarize(index)
    if output == "json":
        from .output import write_json

        write_json(summary)
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
                     help="Seconds of CP-SAT search for the whole run (split over windows)."),
        click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
                     help="CP-SAT search workers."),
        click.option("--objective", type=click.Choice(["default", "pack", "balance"]), default="default",
                     show_default=True, help="After pods placed: the profile's scores, fewest nodes, or lowest peak."),
        click.option("--deterministic/--wall-clock", default=True, show_default=True,
                     help="Deterministic search (same seed, same plan) or wall-clock limits and a parallel portfolio."),
    ]):
        f = option(f)
    return f


def resolve_config(config_path: str | None, embedded: dict | None = None):
    """The SchedulerConfig from --config, or --policy-config-file, or the state's embedded one, or defaults."""
    from .framework.config import load_config

    ctx = click.get_current_context(silent=True)
    policy = ctx.find_root().meta.get(_POLICY_KEY) if ctx is not None else None
    return load_config(config_path, embedded, policy_path=policy)


def load_index(state: tuple[str, ...], config_path: str | None, kubeconfig: str | None = None,
               context: str | None = None):
    """(ClusterIndex, SchedulerConfig) from state files or the live cluster, and --config/--policy-config-file."""
    from kplace.models import compile_index

    snapshot = load_snapshot(state, kubeconfig, context)
    return compile_index(snapshot), resolve_config(config_path, snapshot.scheduler_config)


@main.command()
@STATE_ARG
@click.option("--engine", type=click.Choice(["cpsat", "greedy"]), default="cpsat", show_default=True,
              help="cpsat decides a window of pods at once; greedy reproduces kube-scheduler.")
@CPSAT_OPTS
@CONFIG_OPT
@click.option("--tie-break", type=click.Choice(["order", "random"]), default="order", show_default=True,
              help="order: kube 1.35's heap order (deterministic); random: uniform among top nodes, seeded.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for every random choice.")
@OUTPUT_OPT
@click.option("--bind", type=click.Choice(["none", "manifest", "api"]), default="none", show_default=True,
              help="none: report only; manifest: write v1 Bindings (and Evictions) to -o; api: POST pods/binding.")
@click.option("-o", "out_file", type=click.Path(dir_okay=False, writable=True), default=None,
              help="With --bind none: write the JSON plan here; with --bind manifest: the Binding manifest.")
@click.option("--manifest-format", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@KUBECONFIG_OPT
@CONTEXT_OPT
@click.option("--dry-run", is_flag=True, help="With --bind api: the API server's server-side dry run.")
def schedule(state, engine, window, time_limit, workers, objective, deterministic, config_path, tie_break, seed,
             output, bind, out_file, manifest_format, kubeconfig, context, dry_run):
    """Place every pending pod and report each pod's node, or kube's reason why not.

    \b
    Examples:
      kplace schedule state.json
      kplace schedule state.json --engine greedy --config sched.yaml
      kplace schedule state.json --window 500 --time-limit 30 --objective pack --output json -o plan.json
      kplace schedule state.json --bind manifest -o bindings.yaml && kubectl create -f bindings.yaml
      kplace schedule --kubeconfig ~/.kube/config --bind api --dry-run
    """
    from .output import dumps, write_atomic, write_json
    from .report import render_plan
    from .schedule import decide

    if bind == "manifest" and not out_file:
        raise click.UsageError("--bind manifest needs -o FILE for the Binding manifest")
    if bind == "api" and not kubeconfig:
        raise click.UsageError("--bind api needs --kubeconfig")
    index, config = load_index(state, config_path, kubeconfig, context)
    opts = None
    if engine == "cpsat":
        from .cpsat import CpsatOptions

        opts = CpsatOptions(window=window, time_limit=time_limit, workers=workers, seed=seed, objective=objective,
                            deterministic=deterministic, tie_break=tie_break)
    plan = decide(index, config, engine, cpsat_options=opts, tie_break=tie_break, seed=seed)
    data = plan.to_dict()
    if bind == "none":
        if out_file:
            write_atomic(out_file, dumps(data))
    else:
        from .binder import bind_timeout_of, commit

        extra = {"bind_timeout": bind_timeout_of(config)} if bind == "api" else {}
        data["commit"] = commit(plan, index, bind, out_file=out_file, fmt=manifest_format, kubeconfig=kubeconfig,
                                context=context, dry_run=dry_run, **extra)
    if output == "json":
        write_json(data)
    else:
        render_plan(plan)
        if bind != "none":
            from .binder import render_commit

            render_commit(data["commit"])
    if bind == "api":
        from .binder import commit_shortfall

        short = commit_shortfall(data["commit"])
        if short:
            click.echo(f"kplace: error: {short}", err=True)
            sys.exit(EXIT_COMMIT)


@main.command()
@STATE_ARG
@click.option("--pod", "pod_key", required=True, metavar="NAMESPACE/NAME", help="The pod to explain.")
@CONFIG_OPT
@click.option("--candidates", default="feasible", show_default=True, metavar="feasible|all|NODE,...",
              help="Score the feasible nodes (as kube does), every node as if feasible, or the listed nodes.")
@OUTPUT_OPT
@KUBECONFIG_OPT
@CONTEXT_OPT
def explain(state, pod_key, config_path, candidates, output, kubeconfig, context):
    """Show every filter's verdict and every score, per node, for one pod, and the node kube would pick.

    The pod is explained against the state as given (other pending pods are not placed first).

    \b
    Examples:
      kplace explain state.json --pod default/web-0
      kplace explain state.json --pod default/web-0 --candidates all --output json
      kplace explain state.json --pod default/web-0 --candidates node-1,node-2
    """
    from .explain import explain_pod, render_explain
    from .output import write_json

    if "/" not in pod_key:
        pod_key = f"default/{pod_key}"
    index, config = load_index(state, config_path, kubeconfig, context)
    result = explain_pod(index, config, pod_key, candidates)
    if output == "json":
        write_json(result)
    else:
        render_explain(result)


@main.command()
@click.argument("state", nargs=-1, required=True, metavar="STATE... PLAN")
@OUTPUT_OPT
@CONFIG_OPT
def verify(state, output, config_path):
    """Check a plan (JSON from `kplace schedule`) against the state; exit 1 on any violation.

    The last argument is the plan; the others are the state it was made for. A valid plan's score measure
    (each placed pod scored by the profile as if it were scheduled last into the plan's final state) is
    reported too, in total and per plugin.

    \b
    Examples:
      kplace schedule state.json --output json -o plan.json
      kplace verify state.json plan.json
    """
    from .measure import plan_measure
    from .output import write_json
    from .verify import load_plan, render_violations, verify_plan

    if len(state) < 2:
        raise click.UsageError("give the state and then the plan: kplace verify STATE... PLAN")
    *state_files, plan_file = state
    index, config = load_index(tuple(state_files), config_path)
    plan = load_plan(plan_file)
    violations = verify_plan(index, plan)
    score = None if violations else plan_measure(index, config, plan)
    if output == "json":
        write_json({"ok": not violations, "violations": [v.to_dict() for v in violations],
                    "score": score.to_dict() if score else None})
    else:
        render_violations(violations)
        if score is not None:
            parts = ", ".join(f"{k} {v:,}" for k, v in sorted(score.per_plugin.items()))
            click.echo(f"score measure: {score.total:,} over {score.pods} placed pods ({score.mean:,.1f} per pod)"
                       + (f": {parts}" if parts else ""))
    sys.exit(1 if violations else 0)


@main.command()
@click.argument("workload", metavar="WORKLOAD")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="Number of nodes (workload default).")
@click.option("--pods", type=click.IntRange(min=0), default=None, help="Number of pending pods (workload default).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Workload-specific parameter.")
@click.option("-o", "out_file", type=click.Path(dir_okay=False, writable=True), required=True,
              help="Where to write the kubectl-style v1 List (JSON), atomically.")
def generate(workload, nodes, pods, seed, params, out_file):
    """Generate a benchmark cluster state as a kubectl-style v1 List.

    WORKLOAD is one of the generators listed by `kplace generate list -o -`.

    \b
    Examples:
      kplace generate perf-basic --nodes 5000 --pods 10000 -o basic.json
      kplace generate dcm --nodes 500 --param fraction=100 -o dcm.json
    """
    from kplace.instances.generators import generate as make
    from kplace.instances.generators import list_workloads

    from .output import dumps, write_atomic

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
    data = make(workload, nodes=nodes, pods=pods, seed=seed, params=kv)
    if out_file == "-":
        sys.stdout.write(dumps(data))
    else:
        write_atomic(out_file, dumps(data))


if __name__ == "__main__":  # pragma: no cover
    main()
