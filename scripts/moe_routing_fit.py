#!/usr/bin/env python3
"""The routed experts a decode step touches under skewed routing (src/sim/physics.cc, kSkewedTouchedRatio),
re-derived from the measured tables.

A serving step's tokens do not spread over the experts uniformly at random: routing is skewed, and a step
reads the weights of fewer distinct experts than uniform routing would. AIConfigurator times every moe_perf
shape under balanced routing and under power_law_1.01, its default workload [recalled: aiconfigurator's
sdk default]. This script measures how many experts the power_law_1.01 rows touch:

1. Per table, fit latency = a + touched x t + touched x slice_bytes / (HBM x e) to its balanced rows at 1-64
   tokens (scripts/moe_overhead_fit.py: balanced routing touches min(experts, tokens x top-k)).
2. Invert it on the power_law_1.01 row of the same shape and tokens: touched = (latency - a) / (t +
   slice_bytes / (HBM x e)).
3. Divide by what uniform random routing touches, experts x (1 - (1 - top-k / experts)^tokens), and take
   the median per half-octave bin of the load lambda = tokens x top-k / experts.

It prints the ratio per bin and the C++ table physics.cc carries: the bins from 0.25 to 8, each ratio capped
at 1 (a skewed distribution touches no more distinct experts than a uniform one, in expectation; above 1 is
the fit's noise, and above lambda = 8 the call is no longer bound by its weight read, where the inversion
does not hold). Standard library only.

Usage: scripts/moe_routing_fit.py [STORE_DIR]   (default: ~/.cache/servelab/ops/aic-ops)
"""
import collections
import math
import os
import statistics
import sys

from moe_overhead_fit import TABLES, balanced_decode_rows, fit_fixed_costs, load

LAMBDA_BINS = [2 ** (i / 2) for i in range(-4, 7)]  # 0.25 ... 8, half-octave centres


def uniform_touched(tokens, top_k, experts):
    """Expected distinct experts `tokens` tokens touch, each picking top_k of `experts` uniformly."""
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def power_law_rows(path, kernel, dtype):
    """(tokens, top_k, experts, slice params, latency s) of the power_law_1.01 rows (ep 1, >= 32 experts)."""
    c = load(path)
    out = []
    for i in range(len(c["latency"])):
        if (c["kernel_source"][i], c["moe_dtype"][i], c["distribution"][i]) != (kernel, dtype, "power_law_1.01"):
            continue
        if c["moe_ep_size"][i] != 1 or c["num_experts"][i] < 32:
            continue
        params = 3.0 * c["hidden_size"][i] * c["inter_size"][i] / c["moe_tp_size"][i]
        out.append((c["num_tokens"][i], c["topk"][i], c["num_experts"][i], params, c["latency"][i] * 1e-3))
    return out


def main():
    store = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/servelab/ops/aic-ops")
    bins = collections.defaultdict(list)
    for table, kernel, dtype, bpp, hbm in TABLES:
        path = os.path.join(store, table, "moe_perf.ops")
        if not os.path.exists(path):
            print(f"{table}: missing, skipped")
            continue
        a, t, inv_e, _, _ = fit_fixed_costs(balanced_decode_rows(path, kernel, dtype), bpp, hbm)
        for tokens, top_k, experts, params, latency in power_law_rows(path, kernel, dtype):
            lam = tokens * top_k / experts
            b = min(range(len(LAMBDA_BINS)), key=lambda j: abs(math.log2(lam / LAMBDA_BINS[j])))
            if abs(math.log2(lam / LAMBDA_BINS[b])) > 0.25:
                continue
            touched = (latency - a) / (t + params * bpp / hbm * inv_e)
            bins[b].append(touched / uniform_touched(tokens, top_k, experts))
    ratios = []
    for b, centre in enumerate(LAMBDA_BINS):
        r = bins.get(b, [])
        med = statistics.median(r) if r else 1.0
        ratios.append(min(1.0, med))
        print(f"lambda {centre:6.3f}: {len(r):4d} rows, touched / uniform median {med:.3f}")
    print("C++ (lambda, ratio):", ", ".join(f"{{{c:.4g}, {v:.3f}}}" for c, v in zip(LAMBDA_BINS, ratios)))


if __name__ == "__main__":
    main()
