import numpy as np
import pytest
from kplace.solver.framework import CycleState
from kplace.solver.plugins.imagelocality import ImageLocality
from kplace.solver.plugins.imagelocality.helpers import normalized_image_name
from kplace.solver.testing import build_state, node, pod

MB = 1024 * 1024


def run(node_images, containers, init=()):
    nodes = [node(f"n{i}", images=imgs) for i, imgs in enumerate(node_images)]
    spec = {"containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(containers)],
            "initContainers": [{"name": f"i{i}", "image": im} for i, im in enumerate(init)]}
    state = build_state(nodes, pod("p", spec=spec))
    pl, p, cycle, ids = ImageLocality(), state.index.pending[0], CycleState(), np.arange(len(nodes))
    return pl.normalize(pl.score(state, p, cycle, ids), p, cycle).tolist()


CASES = [
    ("An image on half the nodes counts half its size.", [[("app:v1", 500 * MB)], []], ["app:v1"], (), [23, 0]),
    ("An image on every node counts its full size.", [[("app:v1", 500 * MB)], [("app:v1", 500 * MB)]], ["app:v1"], (),
     [48, 48]),
    ("An untagged pod image matches the node's :latest name.", [[("nginx:latest", 500 * MB)], []], ["nginx"], (),
     [23, 0]),
    ("The node's reported names are not normalised.", [[("nginx", 500 * MB)], []], ["nginx"], (), [0, 0]),
    ("An image used by two containers counts twice against a doubled maximum.",
     [[("app:v1", 500 * MB)], [("app:v1", 500 * MB)]], ["app:v1", "app:v1"], (), [49, 49]),
    ("Init container images count and raise the maximum.",
     [[("init:v1", 500 * MB)], [("init:v1", 500 * MB)]], ["absent:v1"], ["init:v1"], [24, 24]),
    ("The sum is clamped to 1000 MiB per container.", [[("big:v1", 3000 * MB)], [("big:v1", 3000 * MB)]], ["big:v1"],
     (), [100, 100]),
    ("Images below 23 MiB score nothing.", [[("tiny:v1", 20 * MB)], [("tiny:v1", 20 * MB)]], ["tiny:v1"], (), [0, 0]),
    ("A registry port is not mistaken for a tag.", [[("localhost:5000/app:latest", 500 * MB)], []],
     ["localhost:5000/app"], (), [23, 0]),
    ("A node without the pod's images scores 0.", [[], []], ["app:v1"], (), [0, 0]),
]


@pytest.mark.parametrize(("name", "node_images", "containers", "init", "want"), CASES, ids=[c[0] for c in CASES])
def test_image_locality(name, node_images, containers, init, want):
    assert run(node_images, containers, init) == want


NAMES = [("nginx", "nginx:latest"), ("nginx:1.2", "nginx:1.2"), ("host:5000/a", "host:5000/a:latest"),
         ("host:5000/a:b", "host:5000/a:b"), ("repo/a@sha256:abc", "repo/a@sha256:abc")]


@pytest.mark.parametrize(("raw", "want"), NAMES, ids=[f"{r!r} normalises to {w!r}." for r, w in NAMES])
def test_normalized_image_name(raw, want):
    assert normalized_image_name(raw) == want


def test_an_image_size_comes_from_the_first_node_reporting_it():
    # 500 MiB is the first size seen; spread 2/3 → 333 MiB on both holders.
    got = run([[("app:v1", 500 * MB)], [("app:v1", 100 * MB)], []], ["app:v1"])
    assert got == [100 * (int(500 * MB * (2 / 3)) - 23 * MB) // (977 * MB)] * 2 + [0]
