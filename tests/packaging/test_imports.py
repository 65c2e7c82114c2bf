"""Import contracts: the seams stay where they are. The models import nothing that decides; the verifier imports
only the models (it shares no code with the engines or the encodings); the framework imports no plugin (the
plugins register themselves with it, `framework.config.use_registry`); the Kubernetes rebalancer and ROADEF share
no code but the models (the deprecated `rebalance --format roadef` reaches `roadef solve` through the command
registry); the rebalancer's library imports no command, and carrying a plan out (`rebalance.apply`) reads the plan,
not the planner; the CP-SAT engine's parts (baselines, scopes, components, ranking, assembly) are tied together by
`cpsat/window.py` alone; the binders and their shared pieces commit a verified plan with the models, the output
helpers and each other only, and the shared pieces import no binder. Imports inside functions count."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"models": "kplace.models", "solver": "kplace.solver", "instances": "kplace.instances"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT)
    parts = [PACKAGES[rel.parts[0]], *rel.parts[1:]]
    parts[-1] = parts[-1].removesuffix(".py")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under `if TYPE_CHECKING:` (imports for annotations, never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports(source: str, module: str, is_package: bool = False, runtime: bool = False) -> set[str]:
    """Every module `source` imports (relative imports resolved against `module`), at any depth; with `runtime`,
    not those only a type checker reads."""
    out: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]
    tree = ast.parse(source)
    skip = _type_checking_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                target = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)  # `from pkg import submodule`
    return out


def _product_files(folder: str) -> list[Path]:
    return [p for p in sorted((ROOT / folder).rglob("*.py")) if not p.name.startswith("test_")]


def _violations(files: list[Path], forbidden) -> list[str]:
    out = []
    for path in files:
        mod = _module_name(path)
        for target in imports(path.read_text(encoding="utf-8"), mod, path.name == "__init__.py"):
            if forbidden(target):
                out.append(f"{path.relative_to(ROOT)} imports {target}")
    return out


ROADEF = "kplace.solver.roadef"
VERIFY = "kplace.solver.verify"


def _within(target: str, package: str) -> bool:
    return target == package or target.startswith(package + ".")


BINDER = "kplace.solver.binder"
BINDER_SHARED = ["objects", "order", "outcomes", "retry", "volumes", "summary", "kube"]
BINDER_COMMIT = [ROOT / "solver" / "binder" / f"{m}.py" for m in [*BINDER_SHARED, "manifest", "api"]]

CONTRACTS = {
    "the models import nothing from the solver": (
        _product_files("models"), lambda t: t.startswith("kplace.solver")),
    "the verifier imports only the models": (
        _product_files("solver/verify"),
        lambda t: t.startswith("kplace.") and not (_within(t, "kplace.models") or _within(t, VERIFY))),
    "the framework imports no plugin and no engine": (
        [p for p in _product_files("solver/framework")],
        lambda t: t.startswith(("kplace.solver.plugins", "kplace.solver.greedy", "kplace.solver.cpsat"))),
    "the rebalancer imports nothing of ROADEF": (
        _product_files("solver/rebalance"), lambda t: _within(t, ROADEF)),
    "the CP-SAT engine's parts import nothing of the window orchestration that ties them together": (
        [p for p in _product_files("solver/cpsat") if p.name not in ("window.py", "__init__.py", "moves.py")],
        lambda t: _within(t, "kplace.solver.cpsat.window")),
    "ROADEF imports nothing of the rebalancer": (
        _product_files("solver/roadef"), lambda t: _within(t, "kplace.solver.rebalance")),
    "the rebalancer's library imports no command (only its cli.py does)": (
        [p for p in _product_files("solver/rebalance") if p.name != "cli.py"],
        lambda t: _within(t, "click") or t.endswith(".cli") or ".cli." in t),
    "rebalance.apply imports nothing else of the rebalancer": (
        [ROOT / "solver" / "rebalance" / "apply.py"], lambda t: _within(t, "kplace.solver.rebalance")),
    "ROADEF's solver imports only the models and itself (its command, the CLI's options too)": (
        [p for p in _product_files("solver/roadef") if p.name != "cli.py"],
        lambda t: t.startswith("kplace.") and not any(_within(t, k) for k in ("kplace.models", ROADEF))),
    "the binders import only the models, the output helpers and the binder's pieces": (
        BINDER_COMMIT,
        lambda t: t.startswith("kplace.") and not any(_within(t, k) for k in ("kplace.models", "kplace.solver.output",
                                                                               BINDER))),
    "the binder's shared pieces import no binder": (
        [ROOT / "solver" / "binder" / f"{m}.py" for m in BINDER_SHARED],
        lambda t: _within(t, BINDER) and not any(_within(t, f"{BINDER}.{m}") for m in BINDER_SHARED)),
}


@pytest.mark.parametrize("contract", list(CONTRACTS))
def test_the_import_contract_holds(contract):
    files, forbidden = CONTRACTS[contract]
    assert files
    assert _violations(files, forbidden) == []


def test_a_forbidden_import_inside_a_function_is_found(tmp_path):
    source = "def f():\n    from ..plugins import registry\n    return registry\n"
    found = imports(source, "kplace.solver.framework.config")
    assert "kplace.solver.plugins" in found and "kplace.solver.plugins.registry" in found
    assert CONTRACTS["the framework imports no plugin and no engine"][1]("kplace.solver.plugins")


def test_the_verifier_may_import_itself_and_the_models_but_not_an_engine():
    forbidden = CONTRACTS["the verifier imports only the models"][1]
    found = imports("from ..plugins.nodeports import fits\nfrom .records import Term\n", "kplace.solver.verify.replay")
    assert "kplace.solver.verify.records" in found and not forbidden("kplace.solver.verify.records")
    assert forbidden("kplace.solver.plugins.nodeports") and forbidden("kplace.solver.verifyx")
    assert not forbidden("kplace.models.selectors")


def import_graph(files: list[Path], name_of=_module_name):
    """The modules and which of them each imports when it runs (at any depth: a function's imports count), as a
    networkx digraph."""
    import networkx as nx

    modules = {name_of(p): p for p in files}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for mod, path in modules.items():
        for target in imports(path.read_text(encoding="utf-8"), mod, path.name == "__init__.py", runtime=True):
            if target in modules and target != mod:
                graph.add_edge(mod, target)
    return graph


def test_no_two_modules_of_the_product_import_each_other_even_through_others():
    import networkx as nx

    files = [p for folder in PACKAGES for p in _product_files(folder) if p.name != "testing.py"]
    assert [" -> ".join(c) for c in nx.simple_cycles(import_graph(files))] == []


def test_an_import_cycle_through_a_function_is_found_and_one_for_annotations_only_is_not(tmp_path):
    import networkx as nx

    sources = {"a": "def f():\n    from .b import g\n    return g\n", "b": "from .a import f\n",
               "c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import x\n",
               "d": "from .c import y\n"}
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source)
    graph = import_graph(sorted(tmp_path.glob("*.py")), lambda p: f"kplace.solver.cyc.{p.stem}")
    assert [sorted(c) for c in nx.simple_cycles(graph)] == [["kplace.solver.cyc.a", "kplace.solver.cyc.b"]]
