"""`kplace roadef`: the ROADEF/EURO 2012 machine-reassignment problem (Google's), a reassignment of processes to
machines under capacity, transient capacity, conflict, spread and dependency constraints that minimises load,
balance and move costs (the Kubernetes reading of it is in `instance`).

- `instance`: the data, the file formats (parse, read, write);
- `scoring`: the exact official objective and every hard-constraint violation (the challenge's checker);
- `reference`: the published best values set A is compared with;
- `vectorised`: shift/swap moves evaluated with numpy (soft-transient annealing; the reference for `moves`);
- `moves`: the same moves compiled with numba (descent, annealing, big process rearrangements);
- `neighbourhoods`: which machines and processes a CP-SAT round frees;
- `subproblem`: the CP-SAT model of one round (variables, constraints, objective) and its solve;
- `search`: one search (`RoadefLNS`), its phases and how it picks among them;
- `portfolio`: cooperating searches in parallel processes, and the runner from files;
- `cli`: `kplace roadef solve` and `kplace roadef score`.

Parsing and scoring need numpy only; the search needs numba (`pip install 'kplace[roadef]'`). This package shares
nothing with the Kubernetes rebalancer (`kplace.solver.rebalance`) but the error types of `kplace.models`.
"""

from .instance import Balance, Instance, parse_assignment, parse_instance, read_assignment, read_instance
from .scoring import Objective, score

__all__ = ["Balance", "Instance", "Objective", "parse_assignment", "parse_instance", "read_assignment",
           "read_instance", "score"]
