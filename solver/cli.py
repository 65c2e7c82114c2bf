"""The `kplace` command line: thin click commands over library functions.

Heavy libraries (ortools, the kubernetes client, matplotlib) are imported inside the commands that need
them, so `kplace --help` starts fast. Every KplaceError becomes one line on stderr and exit code 2.
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


class _Group(click.Group):
    """Turns KplaceError into one clear line and a non-zero exit, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KplaceError as exc:
            click.echo(f"kplace: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:  # `kplace ... | head`
            sys.exit(0)


STATE_ARG = click.argument("state", nargs=-1, required=True, metavar="STATE...")
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
def inspect(state: tuple[str, ...], output: str) -> None:
    """Summarise exported cluster state: nodes, pods, capacity, PDBs and warnings.

    \b
    Examples:
      kplace inspect state.json
      kplace inspect cluster/ apps/deploy.yaml --output json
      kubectl get nodes,pods -A -o json | kplace inspect -
    """
    from kplace.models import compile_index, load_state

    from .inspect import render_summary, summarize

    index = compile_index(load_state(state))
    summary = summarize(index)
    if output == "json":
        from .output import write_json

        write_json(summary)
    else:
        render_summary(summary)


if __name__ == "__main__":  # pragma: no cover
    main()
