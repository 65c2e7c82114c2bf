import pytest
from kplace.instances.generators import generate
from kplace.solver.output import dumps


@pytest.fixture(scope="session")
def frag_file(tmp_path_factory):
    """A small fragmentation trap: greedy strands the large pods, CP-SAT places them."""
    path = tmp_path_factory.mktemp("compare") / "frag.json"
    path.write_text(dumps(generate("fragmentation", nodes=8, pods=20, seed=0)), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def comparison(frag_file):
    from kplace.solver.cli import load_index
    from kplace.solver.compare import CompareOptions, run_compare

    index, config = load_index((str(frag_file),), None)
    return run_compare(index, config, CompareOptions(time_limit=2.0))
