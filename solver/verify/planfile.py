"""Reading a plan file: the JSON `kplace schedule --output json` writes, checked field by field.

A bad file raises one InputError naming the file and the field (`placements[3].node`), never a traceback.
"""

from __future__ import annotations

from pathlib import Path

from kplace.models.errors import InputError
from kplace.models.io import parse_json
from kplace.models.plan import Eviction, Move, Placement, Plan


def _want(cond: bool, path: str, where: str, what: str) -> None:
    if not cond:
        raise InputError(what, source=path, field=where)


def _strings(obj: dict, names: tuple[str, ...], src: str, at: str) -> None:
    for name in names:
        _want(isinstance(obj.get(name), str) and obj[name] != "", src, f"{at}.{name}", "must be a non-empty string")


def _list(data: dict, name: str, src: str) -> list:
    raw = data.get(name, [])
    _want(isinstance(raw, list), src, name, "must be a list")
    return raw


def _placement(p: object, src: str, at: str) -> Placement:
    _want(isinstance(p, dict), src, at, "must be an object with `pod` and `node`")
    pod, node = p.get("pod"), p.get("node")
    _want(isinstance(pod, str) and "/" in pod, src, f"{at}.pod", "must be a string `namespace/name`")
    _want("node" in p, src, f"{at}.node", "missing (null for an unplaced pod)")
    _want(node is None or (isinstance(node, str) and node != ""), src, f"{at}.node", "must be a node name or null")
    reason = p.get("reason")
    _want(reason is None or isinstance(reason, str), src, f"{at}.reason", "must be a string or null")
    nominated = p.get("nominated", False)
    _want(isinstance(nominated, bool), src, f"{at}.nominated", "must be true or false")
    vb = p.get("volume_bindings", {})
    _want(isinstance(vb, dict) and all(isinstance(k, str) and "/" in k and isinstance(v, str) and v
                                       for k, v in vb.items()), src, f"{at}.volume_bindings",
          "must map claims `namespace/name` to a PV name or \"(dynamic)\"")
    return Placement(pod, node, reason, 0, nominated, dict(vb))


def _eviction(e: object, src: str, at: str) -> Eviction:
    _want(isinstance(e, dict), src, at, "must be an object with `pod`, `node` and `preemptor`")
    _strings(e, ("pod", "node", "preemptor"), src, at)
    prio = e.get("priority", 0)
    _want(isinstance(prio, int) and not isinstance(prio, bool), src, f"{at}.priority", "must be an integer")
    pdb = e.get("pdb_violation", False)
    _want(isinstance(pdb, bool), src, f"{at}.pdb_violation", "must be true or false")
    return Eviction(e["pod"], e["node"], e["preemptor"], prio, pdb)


def _move(m: object, src: str, at: str) -> Move:
    _want(isinstance(m, dict), src, at, "must be an object with `pod`, `from`, `to` and `wave`")
    _strings(m, ("pod", "from", "to"), src, at)
    wave = m.get("wave", 1)
    _want(isinstance(wave, int) and not isinstance(wave, bool) and wave >= 1, src, f"{at}.wave",
          "must be an integer ≥ 1")
    admits = m.get("admits", [])
    _want(isinstance(admits, list) and all(isinstance(a, str) for a in admits), src, f"{at}.admits",
          "must be a list of `namespace/name`")
    return Move(m["pod"], m["from"], m["to"], wave, list(admits))


def load_plan(path: str | Path) -> Plan:
    """Read the JSON `kplace schedule --output json` writes. Bad files raise InputError naming file and field."""
    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the plan: {exc.strerror or exc}", source=src) from None
    except UnicodeDecodeError:
        raise InputError("the plan is not UTF-8 text", source=src) from None
    data = parse_json(text, src)
    _want(isinstance(data, dict), src, "", "a plan is a JSON object with `placements`")
    _want("placements" in data, src, "placements", "missing")
    engine = data.get("engine", "unknown")
    _want(isinstance(engine, str), src, "engine", "must be a string")
    plan = Plan(engine=engine)
    plan.placements = [_placement(p, src, f"placements[{i}]") for i, p in enumerate(_list(data, "placements", src))]
    plan.evictions = [_eviction(e, src, f"evictions[{i}]") for i, e in enumerate(_list(data, "evictions", src))]
    plan.moves = [_move(m, src, f"moves[{i}]") for i, m in enumerate(_list(data, "moves", src))]
    return plan
