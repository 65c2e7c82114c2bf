"""NodeVolumeLimits as CP-SAT constraints over a window's final state.

Per node n and CSI driver d with limit L: a literal u[h, n] per new unique volume h, shared by every window pod
that uses it (o[g, n] ≤ u, `Variables.occupied`), and |attached volumes of d on n| + Σ_h u[h, n] ≤ L, posted
only where the volumes that could come exceed it.
"""

from __future__ import annotations

from collections import defaultdict

from ...framework.encoding import ConstraintContext, PluginEncoding
from ..volumebinding.claims import catalog
from . import attached_volumes, node_limits, pod_csi_volumes


def csi_limits(ctx: ConstraintContext) -> None:
    """Per node and driver, attached + new unique volumes ≤ the limit (module doc)."""
    v, filters = ctx.handle, ctx.filters
    state, index = v.state, v.state.index
    csinodes = catalog(index).csinodes
    mine: dict[tuple[int, bool], dict[str, str]] = {}
    for n, entries in v.by_node.items():
        entries = [(g, var) for g, var in entries if g.rep.pod.spec.volumes and "NodeVolumeLimits" in filters[g.gid]]
        if not entries:
            continue
        csinode = csinodes.get(index.node_names[n])
        limits = node_limits(index, n, csinode)
        if not limits:
            continue
        attached = attached_volumes(state, n, csinode)
        handles: dict[str, tuple[str, list]] = {}
        for g, _ in entries:
            k = (g.gid, csinode is not None)
            if k not in mine:
                mine[k] = pod_csi_volumes(index, g.rep.pod, csinode, pending=True)[0]
            for h, lkey in mine[k].items():
                if h not in attached and lkey in limits:
                    handles.setdefault(h, (lkey, []))[1].append(g)
        per_key: dict[str, list[str]] = defaultdict(list)
        for h, (lkey, _) in handles.items():
            per_key[lkey].append(h)
        for lkey, hs in per_key.items():
            room = max(0, limits[lkey] - sum(1 for x in attached.values() if x == lkey))
            if len(hs) <= room:
                continue
            lits = []
            for h in hs:
                gs = handles[h][1]
                if len(gs) == 1:
                    lits.append(v.occupied(gs[0].gid, n))
                    continue
                u = v.model.new_bool_var(f"csi_{n}_{h}")
                for g in gs:
                    v.model.add(v.occupied(g.gid, n) <= u)
                v.aux_hints.append((u, lambda c, gs=gs, n=n: int(any(c.get(g.gid, {}).get(n, 0) > 0 for g in gs))))
                lits.append(u)
            v.model.add(sum(lits) <= room)


ENCODINGS = {"NodeVolumeLimits": PluginEncoding(constrain=csi_limits)}
