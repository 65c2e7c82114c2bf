"""ImageLocality: nodes that already hold the pod's container images score higher, scaled by how widely
each image has spread (see `helpers`). Score only, already 0..100."""

from __future__ import annotations

import numpy as np

from ...framework import CycleState, Plugin
from ...framework.state import ClusterState
from .helpers import calculate_priority, sum_image_scores


class ImageLocality(Plugin):
    name = "ImageLocality"
    node_local_score = True  # the node's images, with their spread over the whole cluster

    def score(self, state: ClusterState, pod, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        spec = pod.spec
        images = [c.image for c in [*spec.init_containers, *spec.containers]]
        sums = sum_image_scores(state.index, images, np.asarray(nodes, dtype=np.int64))
        return calculate_priority(sums, len(images))


PLUGINS = [ImageLocality]
