"""ImageLocality maths (kube's image_locality.go), with the cluster-wide image table cached per index.

kube keys a node's images by the names the node reports, unchanged; only the pod's image names are
normalised (`:latest` appended when the part after the last `/` has no tag). An image's size and spread
come from the cluster-wide summary: the size of the first node that reported the name, and how many nodes
report it.

    sum(n)  = Σ over init + regular containers whose image node n has of trunc(size · spread / total_nodes)
    max     = 1000 MiB · (#containers + #initContainers),  min = 23 MiB
    score   = 100 · (clamp(sum, min, max) − min) / (max − min)     (integer division)
"""

from __future__ import annotations

import numpy as np
from kplace.models.index import ClusterIndex

from ..helper import go_div

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
CACHE_KEY = "ImageLocality/images"


def normalized_image_name(name: str) -> str:
    """Append `:latest` when the last `:` does not come after the last `/` (no tag)."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


def image_table(index: ClusterIndex) -> dict[str, tuple[int, np.ndarray, int]]:
    """Reported image name → (size in bytes, bool mask of the nodes that report it, number of such nodes)."""
    hit = index.cache.get(CACHE_KEY)
    if hit is None:
        sizes: dict[str, int] = {}
        holders: dict[str, list[int]] = {}
        for n, node in enumerate(index.nodes):
            for img in node.status.images:
                for name in img.names:
                    sizes.setdefault(name, img.size_bytes)
                    ids = holders.setdefault(name, [])
                    if not ids or ids[-1] != n:
                        ids.append(n)
        hit = {}
        for name, ids in holders.items():
            mask = np.zeros(len(index.nodes), dtype=bool)
            mask[ids] = True
            hit[name] = (sizes[name], mask, len(ids))
        index.cache[CACHE_KEY] = hit
    return hit  # type: ignore[return-value]


def sum_image_scores(index: ClusterIndex, images: list[str], nodes: np.ndarray) -> np.ndarray:
    """Per node: Σ over the pod's container images present on the node of trunc(size · holders / total)."""
    table = image_table(index)
    total = len(index.nodes)
    out = np.zeros(len(nodes), dtype=np.int64)
    for image in images:
        entry = table.get(normalized_image_name(image))
        if entry is None:
            continue
        size, mask, holders = entry
        scaled = int(float(size) * (float(holders) / float(total)))
        out += np.where(mask[nodes], scaled, 0)
    return out


def calculate_priority(sums: np.ndarray, num_containers: int) -> np.ndarray:
    """Clamp to [23 MiB, 1000 MiB · num_containers] and scale to 0..100."""
    hi = MAX_CONTAINER_THRESHOLD * num_containers
    if num_containers > 0 and not sums.any():  # no image anywhere: every node clamps to the minimum, score 0
        return np.zeros(len(sums), dtype=np.int64)
    clamped = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, np.where(sums > hi, hi, sums))
    return go_div(100 * (clamped - MIN_THRESHOLD), hi - MIN_THRESHOLD)
