"""`kplace rebalance`: the command (thin, over `plan.plan_rebalance`, `apply.apply_plan`, `periodic.run_every` and
`render.render_table`).

`--format roadef` is the deprecated spelling of `kplace roadef solve` (`kplace.solver.roadef`, reached through the
command registry, not imported): it warns and runs that command.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any

import click

from ..cli import (
    CONFIG_OPT,
    CONTEXT_OPT,
    EXECUTOR_OPTS,
    KUBECONFIG_OPT,
    NAMESPACE_OPTS,
    OUTPUT_OPTS,
    QUIET_OPT,
    STATE_ARG,
    load_index,
    output_choice,
    parse_duration,
)


@contextmanager
def _status(text: str, quiet: bool):
    """A spinner on stderr while the plan is made, on a terminal and unless --quiet; yields `say(line)`, which
    updates the spinner's text (off a terminal: prints the line on stderr; nothing with --quiet)."""
    from ..output import console as make_console

    con = make_console(stderr=True)
    if quiet:
        yield lambda line: None
        return
    if not con.is_terminal:
        yield lambda line: click.echo(f"kplace: {line}", err=True)
        return
    with con.status(text) as status:
        yield lambda line: status.update(f"{text}: {line}")


def _lns_progress(say) -> Any:
    def report(p: dict[str, Any]) -> None:
        say(f"neighbourhood search round {p['round']}: {p['neighbourhoods']} neighbourhoods solved, "
            f"{p['improved']} improved; goal gained {p['goal_gained']:g}, {p['moves']} moves")
    return report


def emit(plan: dict[str, Any], output: str, out_file: str | None) -> None:
    from ..output import dumps_as, write_atomic, write_data

    if out_file:
        write_atomic(out_file, dumps_as(plan, "yaml" if out_file.endswith((".yaml", ".yml")) else "json"))
    if output in ("json", "yaml"):
        write_data(plan, output)
    else:
        from .render import render_table

        render_table(plan)


def run_roadef(paths: tuple[str, ...], out_file: str | None, time_limit: float, seed: int, workers: int,
               output: str) -> None:
    """The deprecated `--format roadef`: one warning line, then `kplace roadef solve` (looked up in the command
    registry, so this package imports nothing of the ROADEF one)."""
    click.echo("kplace: warning: kplace rebalance --format roadef is deprecated; use kplace roadef solve", err=True)
    if len(paths) != 2 or not out_file:
        raise click.UsageError("--format roadef needs MODEL ASSIGNMENT and --output-file NEW_ASSIGNMENT")
    from ..cli import main

    ctx = click.get_current_context()
    group = main.get_command(ctx, "roadef")
    solve = group.get_command(ctx, "solve") if isinstance(group, click.Group) else None
    if solve is None:  # pragma: no cover - an install without the roadef package
        raise click.UsageError("--format roadef: this kplace has no `roadef` command")
    ctx.invoke(solve, model=paths[0], assignment=paths[1], out_file=out_file, time_limit=time_limit, seed=seed,
               workers=workers, output=output)


@click.command()
@STATE_ARG
@click.option("--goal", type=click.Choice(["pack", "balance", "repair", "all", "admit"]), default="pack",
              show_default=True,
              help="pack: free whole nodes; balance: thresholds (policy) or lowest peak; repair: fix violations; "
                   "all: repair then pack; admit: move what must move (fewest, cheapest moves) so pending pods fit.")
@click.option("--pods", "pod_keys", default=None, metavar="NAMESPACE/NAME,...",
              help="Only these pending pods are placed (default: every pending pod).")
@click.option("--max-moves", type=click.IntRange(min=0), default=None, help="At most N moves in the plan.")
@click.option("--max-moves-per-node", type=click.IntRange(min=0), default=None, help="At most N moves off a node.")
@click.option("--max-moves-per-namespace", type=click.IntRange(min=0), default=None,
              help="At most N moves per namespace.")
@click.option("--min-gain", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Goal gained per move, at least (nodes for pack, percentage points for balance); else no move.")
@click.option("--no-pending", is_flag=True, help="Do not place pending pods in the same model.")
@click.option("--neighbourhood-size", "neighbourhood", type=click.IntRange(min=0), default=None,
              help="Solve as a neighbourhood search of N nodes per step (0: one global model). Default: the global "
                   "model up to 1,000 nodes, 40-node neighbourhoods above.")
@EXECUTOR_OPTS
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False), default=None,
              help="RebalancePolicy or DeschedulerPolicy YAML: evictor rules, thresholds, owner caps.")
@CONFIG_OPT
@click.option("--time-limit", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds for the model.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="CP-SAT workers; with --format roadef, cooperating searches (one process each).")
@click.option("--deterministic/--wall-clock", default=True, show_default=True,
              help="Count --time-limit in CP-SAT's deterministic seconds (same seed, same moves) or in wall time.")
@click.option("--deadline", type=click.FloatRange(min=0), default=None,
              help="Wall-clock seconds for the search (loading, the checks and the waves not included). Once passed, "
                   "no search runs, the plan keeps the moves found so far and says so; a plan that ends before it "
                   "is the deterministic one. Default: none (the search spends --time-limit, deterministic seconds "
                   "by default, which a loaded machine runs slower than the wall clock).")
@click.option("--seed", type=int, default=0, show_default=True)
@OUTPUT_OPTS("table", "json", "yaml", file="Write the plan here (JSON, or YAML for .yaml/.yml); with --format "
                                          "roadef, the new assignment.")
@click.option("--apply", "do_apply", is_flag=True, help="Carry the plan out (Eviction API, wave by wave).")
@KUBECONFIG_OPT
@NAMESPACE_OPTS
@CONTEXT_OPT
@click.option("--timeout", type=click.FloatRange(min=0.1), default=300.0, show_default=True,
              help="With --apply: seconds per wave to retry evictions a PDB refuses and to wait for replacements "
                   "bound and Running.")
@click.option("--scheduler-name", default="kplace", show_default=True,
              help="With --apply: replacement pods with this schedulerName are bound to their planned nodes.")
@click.option("--every", default=None, metavar="DURATION", help="Run periodically (e.g. 10m) instead of once.")
@click.option("--runs", type=click.IntRange(min=1), default=None, help="With --every: stop after N runs.")
@click.option("--metrics-port", type=click.IntRange(min=1, max=65535), default=None,
              help="With --every: serve Prometheus metrics on this port.")
@click.option("--format", "fmt", type=click.Choice(["k8s", "roadef"]), default="k8s", show_default=True,
              help="Deprecated: roadef (STATE is MODEL ASSIGNMENT of a ROADEF 2012 instance) is now `kplace roadef "
                   "solve`.")
@QUIET_OPT
def rebalance(state, goal, pod_keys, max_moves, max_moves_per_node, max_moves_per_namespace, min_gain, no_pending,
              neighbourhood, executor, ray_address, policy_path,
              config_path, time_limit, workers, deterministic, deadline, seed, output, out_file, do_apply, kubeconfig,
              context, timeout, scheduler_name, every, runs, metrics_port, fmt, quiet):
    """Propose (and with --apply, carry out) bounded, PDB-safe moves that pack, balance or repair the cluster.

    Dry run by default: the plan says what it simulated. Every move has a destination; moves come in waves
    that are safe one after the other (capacity with both copies counted, PodDisruptionBudgets, hard rules).

    \b
    Examples:
      kplace rebalance state.json
      kplace rebalance state.json --goal balance --policy policy.yaml -o json --output-file plan.json
      kplace rebalance state.json --goal repair --max-moves 20 --max-moves-per-node 2
      kplace rebalance state.json --goal admit --pods ml/trainer-0 --max-moves 3
      kplace rebalance --kubeconfig ~/.kube/config --apply --every 10m
    """
    output, out_file = output_choice(output, out_file)
    if fmt == "roadef":
        run_roadef(state, out_file, time_limit, seed, workers, output)
        return
    if do_apply and not kubeconfig:
        raise click.UsageError("--apply needs --kubeconfig")
    if runs is not None and every is None:
        raise click.UsageError("--runs goes with --every")
    if goal == "admit" and no_pending:
        raise click.UsageError("--goal admit places pending pods: it cannot go with --no-pending")
    only = frozenset(k.strip() for k in pod_keys.split(",") if k.strip()) if pod_keys else None
    from .model import RebalanceOptions
    from .plan import plan_rebalance
    from .policy import load_policy

    policy = load_policy(policy_path)
    opts = RebalanceOptions(goal=goal, max_moves=max_moves, max_moves_per_node=max_moves_per_node,
                            max_moves_per_namespace=max_moves_per_namespace, min_gain=min_gain,
                            time_limit=time_limit, workers=workers, seed=seed, place_pending=not no_pending,
                            deterministic=deterministic, only_pending=only, neighbourhood=neighbourhood,
                            executor=executor, ray_address=ray_address, deadline=deadline or None)

    def once() -> dict:
        index, config = load_index(state, config_path, kubeconfig, context)
        with _status(f"rebalancing ({goal}, up to {time_limit:g} s of search)", quiet) as say:
            opts.on_progress = _lns_progress(say)
            plan = plan_rebalance(index, config, policy, opts)
        if do_apply:
            from .apply import apply_plan

            plan["dry_run"] = False
            plan["apply"] = apply_plan(plan, index, kubeconfig, context, timeout=timeout,
                                       scheduler_name=scheduler_name)
        emit(plan, output, out_file)
        return plan

    if every:
        from .periodic import Metrics, run_every

        interval = parse_duration(every)
        plan = run_every(once, interval, runs, Metrics(metrics_port),
                         lambda n, exc: click.echo(f"kplace: error (run {n}): {exc}", err=True))
    else:
        plan = once()
    if do_apply and plan is not None and not plan["apply"]["completed"]:
        sys.exit(1)
