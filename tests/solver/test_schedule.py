"""Deciding a plan: the verifier has the last word."""

import pytest
from kplace.models.plan import Placement
from kplace.solver import schedule as schedule_mod
from kplace.solver.framework.config import default_config
from kplace.solver.schedule import PlanRejected, decide
from kplace.solver.testing import build_state, node, pod


def _state():
    return build_state(node("a", cpu="1"), pod("p", cpu="500m"), pod("q", cpu="500m"))


def test_a_cpsat_plan_the_verifier_rejects_is_replaced_by_the_greedy_plan(monkeypatch):
    from kplace.solver import cpsat

    real = cpsat.schedule_cpsat

    def broken(index, config, opts):  # the real plan plus a pod the state does not have
        plan = real(index, config, opts)
        plan.placements.append(Placement("default/ghost", "a"))
        return plan

    monkeypatch.setattr(cpsat, "schedule_cpsat", broken)
    state = _state()
    plan = decide(state.index, default_config(), "cpsat")
    assert plan.warnings and plan.warnings[0].startswith("bug: the verifier rejected the CP-SAT plan")
    assert {p.pod for p in plan.placements} == {"default/p", "default/q"}
    assert all(w["status"] == "FALLBACK" for w in plan.windows)


def test_a_greedy_plan_the_verifier_rejects_is_never_output(monkeypatch):
    real = schedule_mod.schedule_greedy

    def broken(index, config, **kw):
        plan = real(index, config, **kw)
        plan.placements[0].node = "no-such-node"
        return plan

    monkeypatch.setattr(schedule_mod, "schedule_greedy", broken)
    with pytest.raises(PlanRejected, match="nothing is output"):
        decide(_state().index, default_config(), "greedy")


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_both_engines_plans_pass_the_verifier_on_a_simple_state(engine):
    plan = decide(_state().index, default_config(), engine)
    assert [p.node for p in plan.placements] == ["a", "a"]
