"""`kplace roadef-score`: the official ROADEF/EURO 2012 objective of an assignment, and every violation."""

from __future__ import annotations

import click

from ..cli import OUTPUT_OPTS, output_choice
from ..output import write_data


@click.command("roadef-score")
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("assignment", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@OUTPUT_OPTS("table", "json", "yaml")
def roadef_score(model: str, assignment: str, new: str, output: str) -> None:
    """Score NEW (a machine per process) against the initial ASSIGNMENT of MODEL, as the challenge's checker.

    Prints the objective (load, balance, process move, service move and machine move costs, each already
    weighted) and every hard-constraint violation (capacity, transient capacity, conflict, spread,
    dependency). Exit code 1 when NEW violates a constraint, 2 on malformed input.

    \b
    Example:
      kplace roadef-score model_a1_1.txt assignment_a1_1.txt new_a1_1.txt
    """
    from .instance import read_assignment, read_instance
    from .scoring import score

    inst = read_instance(model)
    initial = read_assignment(assignment, inst)
    proposed = read_assignment(new, inst)
    obj, viol = score(inst, initial, proposed)
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
