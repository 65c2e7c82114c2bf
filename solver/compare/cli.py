"""`kplace compare`: registered lazily by `solver/cli.py` (LAZY_COMMANDS)."""

from __future__ import annotations

import time
from contextlib import contextmanager

import click

from ..cli import (
    CONFIG_OPT,
    CONTEXT_OPT,
    CPSAT_OPTS,
    EXECUTOR_OPTS,
    KUBECONFIG_OPT,
    MOVES_OPT,
    NAMESPACE_OPTS,
    OUTPUT_OPTS,
    PDB_OPT,
    STATE_ARG,
    load_index,
    output_choice,
)


@contextmanager
def _progress_display(time_limit: float, enabled: bool):
    """A rich progress display on stderr: one line per engine, CP-SAT's best objective and bound as they come."""
    if not enabled:
        yield None
        return
    from kplace.solver.output import console as make_console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = make_console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                        console=console, transient=True)
    tasks: dict[str, int] = {}
    label = {"greedy": "greedy (kube-scheduler)", "cpsat": "CP-SAT", "metrics": "metrics and diff",
             "kube": "the real kube-scheduler (oracle)"}

    def update(engine: str, ev: dict) -> None:
        kind = ev["type"]
        if kind == "start":
            total = time_limit if engine == "cpsat" else None
            tasks[engine] = progress.add_task(label[engine], total=total)
        elif kind == "end":
            task = progress.tasks[tasks[engine]]
            done = f": done in {ev['elapsed']:.2f} s" if engine != "metrics" else ": done"
            progress.update(tasks[engine], completed=task.total or 0, description=label[engine] + done)
            progress.stop_task(tasks[engine])
        elif kind == "solution":
            _t, obj, bound, stage = ev["event"]
            progress.update(tasks[engine], completed=min(time_limit, ev["elapsed"]),
                            description=f"{label[engine]}: {stage}: objective {obj:,.0f}, bound {bound:,.0f}")
        elif kind == "tick" and engine == "cpsat":
            progress.update(tasks[engine], completed=min(time_limit, ev["elapsed"]))

    with progress:
        yield update


@contextmanager
def _kube_states(index, baseline: str):
    """The file the real kube-scheduler reads: the state kplace loaded (namespace filters, expanded workloads and
    all), written to a temporary List. None unless the baseline is kube-scheduler (whose oracle must be built)."""
    if baseline != "kube-scheduler":
        yield None
        return
    import tempfile
    from pathlib import Path

    from kplace.instances.build import ALL_KINDS, as_list
    from kplace.solver.output import dumps

    from ..oracle import require_oracle
    from . import KubeBaseline

    require_oracle()  # says how to build it, before the engines run
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_text(dumps(as_list(index.snapshot, kinds=ALL_KINDS)), encoding="utf-8")
        yield KubeBaseline([str(path)], click.get_current_context().params.get("config_path"))


@click.command()
@STATE_ARG
@CPSAT_OPTS
@EXECUTOR_OPTS
@CONFIG_OPT
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for every random choice.")
@OUTPUT_OPTS("table", "wide", "json", "yaml")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="Write a self-contained HTML report (index.html, plots inline) and compare.json into this folder.")
@click.option("--baseline", type=click.Choice(["greedy", "kube-scheduler"]), default="greedy", show_default=True,
              help="kube-scheduler: also run the real kube-scheduler (oracle/bin/kube-oracle, `make -C oracle`) on "
                   "the state, compare CP-SAT's plan with its placements and say whether the greedy engine agrees.")
@KUBECONFIG_OPT
@NAMESPACE_OPTS
@CONTEXT_OPT
@PDB_OPT
@MOVES_OPT
def compare(state, time_limit, window, workers, objective, deterministic, executor, ray_address, config_path, seed,
            output, report_dir, baseline, kubeconfig, context, allow_pdb_violations, allow_moves):
    """Run kube-scheduler's greedy loop and the CP-SAT engine on the same state and compare them side by side.

    Both plans are verified; every figure (pods placed per priority, pending reasons, nodes used, allocation,
    fragmentation, soft constraints, score, wall time and peak memory) is computed from the two plans by the
    same code. Each engine runs in its own forked process: its peak memory is that process's peak RSS.

    \b
    Examples:
      kplace compare state.json
      kplace compare state.json --time-limit 30 --report report/   # then open report/index.html
      kplace compare state.json --objective pack -o json > compare.json
      kplace compare --kubeconfig ~/.kube/config --context prod --report report/
      kplace compare state.json --baseline kube-scheduler   # the real kube-scheduler as well (needs the oracle)
    """
    from ..output import write_data
    from . import CompareOptions, run_compare
    from .render import render_comparison

    output, _ = output_choice(output)
    index, config = load_index(state, config_path, kubeconfig, context)
    opts = CompareOptions(time_limit=time_limit, window=window, workers=workers, seed=seed, objective=objective,
                          deterministic=deterministic, allow_pdb_violations=allow_pdb_violations,
                          allow_moves=allow_moves, executor=executor, ray_address=ray_address)
    started = time.perf_counter()
    with _kube_states(index, baseline) as kube, _progress_display(time_limit, enabled=True) as progress:
        cmp = run_compare(index, config, opts, progress, kube)
    cmp.data["seconds"] = round(time.perf_counter() - started, 3)
    if report_dir:
        from .report import write_report

        paths = write_report(cmp, report_dir)
        click.echo(f"report: {paths['html']} (and {paths['json'].name})", err=True)
    if output in ("json", "yaml"):
        write_data(cmp.data, output)
    else:
        render_comparison(cmp.data, limit=None if output == "wide" else 20)
