"""NodePorts as CP-SAT constraints over a window's final state: two pods never share a host port on a node.

This is the final-state form of kube's sequential check: for groups of identical pods, a final state satisfies it
exactly when some order of placing the pods passes kube's filter at every step.
"""

from __future__ import annotations

from collections import defaultdict

from ...framework.encoding import ConstraintContext, PluginEncoding


def host_ports(ctx: ConstraintContext) -> None:
    """Per node and (protocol, port): with wildcard users W and users of a specific IP S_ip,
    Σ_W y + Σ_{S_ip} y ≤ 1 for every ip; a group using a host port has y[g, n] ≤ 1."""
    v, groups = ctx.handle, ctx.groups
    for g in groups:
        if g.rep.host_ports:
            v.cap_per_node(g.gid, 1)
    for entries in v.by_node.values():
        users: dict[tuple[str, int], dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for g, var in entries:
            for ip, proto, port in set(g.rep.host_ports):
                users[(proto, port)][ip].append(var)
        for by_ip in users.values():
            wild = by_ip.get("0.0.0.0", [])
            specific = [ip for ip in by_ip if ip != "0.0.0.0"]
            if not specific and len(wild) > 1:
                v.model.add(sum(wild) <= 1)
            for ip in specific:
                if len(wild) + len(by_ip[ip]) > 1:
                    v.model.add(sum(wild) + sum(by_ip[ip]) <= 1)


ENCODINGS = {"NodePorts": PluginEncoding(constrain=host_ports)}
