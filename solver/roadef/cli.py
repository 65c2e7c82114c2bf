"""`kplace roadef solve|score`: a ROADEF/EURO 2012 instance solved, or an assignment scored as the challenge's checker.

The old spellings, `kplace rebalance --format roadef MODEL ASSIGNMENT ...` and `kplace roadef-score`, still work for
one release: they print a one-line deprecation warning on stderr and run these commands.
"""

from __future__ import annotations

import click

from ..cli import OUTPUT_OPTS, output_choice

_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def deprecated(old: str, new: str) -> None:
    """The one line an old spelling prints on stderr before it runs `new`."""
    click.echo(f"kplace: warning: {old} is deprecated; use {new}", err=True)


@click.group(context_settings=_SETTINGS)
def roadef() -> None:
    """ROADEF/EURO 2012 machine reassignment (Google's): solve an instance, or score an assignment.

    MODEL and ASSIGNMENT are the challenge's files (model_*.txt, assignment_*.txt). `solve` needs the roadef extra
    (numba): pip install 'kplace[roadef]'.

    \b
    Examples:
      kplace roadef solve model_a1_1.txt assignment_a1_1.txt --output-file new_a1_1.txt --time-limit 300
      kplace roadef score model_a1_1.txt assignment_a1_1.txt new_a1_1.txt
    """


@roadef.command(context_settings=_SETTINGS)
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("assignment", type=click.Path(dir_okay=False))
@click.option("--time-limit", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds for the whole run (reading the files and writing the result included).")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Cooperating searches, one process each (CP-SAT single-threaded in each).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the first search (the others take the next ones); same seed and work, same result.")
@OUTPUT_OPTS("table", "json", "yaml", file="Write the new assignment here (required).")
def solve(model: str, assignment: str, time_limit: float, workers: int, seed: int, output: str,
          out_file: str | None) -> None:
    """Reassign MODEL's processes, starting from the feasible initial ASSIGNMENT, within --time-limit seconds.

    Writes the best assignment found to --output-file (atomically; always feasible) and prints a summary: the
    initial and final objectives term by term, the gap to the best-known value, the work done. Each improvement is
    reported on stderr as it comes. The first run compiles the search's moves (numba; cached afterwards).

    \b
    Examples:
      kplace roadef solve model_a1_1.txt assignment_a1_1.txt --output-file new_a1_1.txt --time-limit 300
      kplace roadef solve model_a2_2.txt assignment_a2_2.txt --output-file new.txt --workers 1 --seed 3 -o json
    """
    output, out_file = output_choice(output, out_file)
    if not out_file:
        raise click.UsageError("roadef solve needs --output-file NEW_ASSIGNMENT (where the new assignment goes)")
    from .portfolio import run_roadef

    def progress(line: str) -> None:  # each improvement, on stderr (stdout keeps the summary)
        click.echo(f"kplace: {line.strip()}", err=True)

    summary = run_roadef(model, assignment, out_file, time_limit, seed, searches=workers, log=progress)
    if output == "table":
        for k, v in summary.items():
            click.echo(f"{k}: {v}")
    else:
        from ..output import write_data

        write_data(summary, output)


@roadef.command(context_settings=_SETTINGS)
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("assignment", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@OUTPUT_OPTS("table", "json", "yaml")
def score(model: str, assignment: str, new: str, output: str) -> None:
    """Score NEW (a machine per process) against the initial ASSIGNMENT of MODEL, as the challenge's checker.

    Prints the objective (load, balance, process move, service move and machine move costs, each already
    weighted) and every hard-constraint violation (capacity, transient capacity, conflict, spread,
    dependency). Exit code 1 when NEW violates a constraint, 2 on malformed input. Needs no extra.

    \b
    Example:
      kplace roadef score model_a1_1.txt assignment_a1_1.txt new_a1_1.txt
    """
    from ..output import write_data
    from .instance import read_assignment, read_instance
    from .scoring import score as score_assignment

    inst = read_instance(model)
    initial = read_assignment(assignment, inst)
    proposed = read_assignment(new, inst)
    obj, viol = score_assignment(inst, initial, proposed)
    output, _ = output_choice(output)
    if output in ("json", "yaml"):
        write_data({"objective": obj.as_dict(), "feasible": not viol, "violations": viol}, output)
    else:
        rows = [("load cost", obj.load), ("balance cost", obj.balance), ("process move cost", obj.process_move),
                ("service move cost", obj.service_move), ("machine move cost", obj.machine_move)]
        for label, value in rows:
            click.echo(f"{label:<20}{value:>20,}")
        click.echo(f"{'objective':<20}{obj.total:>20,}")
        click.echo(f"{'moved processes':<20}{obj.moved_processes:>20,}")
        if viol:
            click.echo(f"INFEASIBLE: {len(viol)} violation(s)")
            for line in viol:
                click.echo(f"  {line}")
        else:
            click.echo("feasible")
    if viol:
        raise SystemExit(1)


@click.command("roadef-score", hidden=True, context_settings=_SETTINGS)
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("assignment", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@OUTPUT_OPTS("table", "json", "yaml")
@click.pass_context
def roadef_score(ctx: click.Context, model: str, assignment: str, new: str, output: str) -> None:
    """Deprecated: use `kplace roadef score` (the same arguments and output)."""
    deprecated("kplace roadef-score", "kplace roadef score")
    ctx.invoke(score, model=model, assignment=assignment, new=new, output=output)
