#!/usr/bin/env python3
"""scripts/reproduce.py's interval and verdicts against hand computations."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce  # noqa: E402


def check(condition, what):
    if not condition:
        sys.exit(f"reproduce_test: {what}")


# 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.3026527: h = 4.3026527 / sqrt(3) = 2.48414.
mean, half, n = reproduce.interval([1.0, 2.0, 3.0])
check((mean, n) == (2.0, 3) and abs(half - 2.484138) < 1e-5, f"interval of 1, 2, 3: {mean}, {half}")
# 2, 4, 4, 4, 6: mean 4, sd sqrt(2), t(0.975, 4) = 2.7764451: h = 2.7764451 * sqrt(2) / sqrt(5) = 1.75598.
mean, half, n = reproduce.interval([2.0, 4.0, 4.0, 4.0, 6.0])
check(mean == 4.0 and abs(half - 1.755985) < 1e-5, f"interval of 2, 4, 4, 4, 6: {mean}, {half}")
check(math.isnan(reproduce.interval([1.0])[1]), "one value has no interval")

M = reproduce.MARGIN
cases = [
    (("lower", 0.05, 0.01), "reproduced"),        # [0.04, 0.06] above 0
    (("lower", -0.05, 0.01), "not reproduced"),   # below 0: reversed
    (("lower", 0.05, 0.06), "inconclusive"),      # includes 0
    (("similar", 0.0, M / 2), "reproduced"),      # inside ±M
    (("similar", 3 * M, M / 2), "not reproduced"),
    (("similar", -3 * M, M / 2), "not reproduced"),
    (("similar", M, M / 2), "inconclusive"),      # straddles M
    (("lower", 0.05, math.nan), "inconclusive"),  # one seed
]
for args, expected in cases:
    got = reproduce.verdict(*args)[0]
    check(got == expected, f"verdict{args}: {got}, expected {expected}")
print("reproduce_test: ok")
