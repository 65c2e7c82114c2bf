"""Published objective values of ROADEF 2012 set A, which `kplace roadef solve` reports its gap against.

`BEST_KNOWN`: the best-known values listed in the data folder's SOURCE.md (from filipesouzacit/MachineReassignment,
bestSolution.csv); `CHALLENGE_BEST`: the best of the 2012 challenge's qualification round (stegua's 2012 blog post,
quoted there too). The summary's `gap_percent` is 100 · (objective − BK) / BK. kplace's own results on these
instances are in docs/benchmarks.md (ROADEF section).
"""

from __future__ import annotations

BEST_KNOWN: dict[str, int] = {
    "a1_1": 44_306_501, "a1_2": 777_532_896, "a1_3": 583_005_717, "a1_4": 247_433_844, "a1_5": 727_578_309,
    "a2_1": 167, "a2_2": 720_671_548, "a2_3": 1_190_713_414, "a2_4": 1_680_609_218, "a2_5": 309_714_522,
}
CHALLENGE_BEST: dict[str, int] = {
    "a1_1": 44_306_501, "a1_2": 777_532_896, "a1_3": 583_005_717, "a1_4": 252_728_589, "a1_5": 727_578_309,
    "a2_1": 198, "a2_2": 816_523_983, "a2_3": 1_306_868_761, "a2_4": 1_681_353_943, "a2_5": 336_170_182,
}
