"""What the pods bound on each node use, and the two filters that read it: NodePorts (a host port conflicts
with a bound pod's on the same protocol and port when the IPs are equal or either is 0.0.0.0) and
NodeResourcesFit (pods + 1 ≤ allocatable pods; for each requested native, extended, hugepages or
attachable-volumes resource r > 0: request(r) ≤ allocatable(r) − Σ bound requests(r))."""

from __future__ import annotations

from collections import Counter

from .records import CompiledPod

NATIVE = ("cpu", "memory", "ephemeral-storage")


class NodeUsage:
    """Per node: the bound pods (by key, in binding order), their summed requests and their host ports."""

    def __init__(self, count: int) -> None:
        self.on_node: list[dict[str, CompiledPod]] = [{} for _ in range(count)]
        self.used: list[Counter[str]] = [Counter() for _ in range(count)]
        self.ports: list[Counter[tuple[str, str, int]]] = [Counter() for _ in range(count)]

    def add(self, p: CompiledPod, n: int, sign: int) -> None:
        if sign > 0:
            self.on_node[n][p.key] = p
        else:
            del self.on_node[n][p.key]
        used = self.used[n]
        for r, v in p.requests.items():
            used[r] += sign * v
        if p.ports:
            ports = self.ports[n]
            for t in p.ports:
                ports[t] += sign

    def fails(self, p: CompiledPod, n: int, alloc: dict[str, int]) -> tuple[str, str] | None:
        """NodePorts, then NodeResourcesFit, for `p` on node `n` (allocatable `alloc`)."""
        for ip, proto, port in p.ports:
            for (uip, uproto, uport), k in self.ports[n].items():
                if k > 0 and (uproto, uport) == (proto, port) and (uip == ip or "0.0.0.0" in (ip, uip)):
                    return "NodePorts", f"host port {ip}:{port}/{proto} conflicts with {uip}:{port}/{proto}"
        if len(self.on_node[n]) + 1 > alloc.get("pods", 0):
            return "NodeResourcesFit", "Too many pods"
        used = self.used[n]
        for r, v in sorted(p.requests.items()):
            checked = r in NATIVE or "/" in r or r.startswith(("hugepages-", "attachable-volumes-"))
            if v > 0 and checked and v > alloc.get(r, 0) - used[r]:
                return "NodeResourcesFit", (f"Insufficient {r}: requests {v}, free "
                                            f"{alloc.get(r, 0) - used[r]} of {alloc.get(r, 0)}")
        return None
