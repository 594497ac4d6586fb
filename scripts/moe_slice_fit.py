#!/usr/bin/env python3
"""How a fused-MoE kernel's compute efficiency falls as tensor parallelism slices its experts (src/sim/physics.h
kMoeSlice*, KernelEfficiency::slice_s0), fitted from the measured tables.

MoE TP cuts every expert's intermediate dimension into moe_tp slices of s = intermediate / moe_tp columns. At
a compute-bound token count each GPU then does 1/moe_tp of the FLOPs, but in GEMMs whose N (gate and up) and
K (down) are s: the per-tile prologue and epilogue weigh more against a shorter main loop, and fewer tiles
fill the SMs. Model: the efficiency at slice s is the kernel's large-shape efficiency x s / (s + s0). Fitted
per kernel_source and GPU generation over the balanced-routing rows at 8192 and 16384 tokens (expert
parallelism 1) of AIConfigurator's moe_perf tables (shared/data/aic-ops, as `make deps` imported them):
each row at moe_tp > 1 gives r = latency(tp 1) / tp / latency(tp), and s0 minimises the squared log error
of r against (s / (s + s0)) / (s1 / (s1 + s0)), s1 = intermediate. Rows with r > 1.1 (faster than linear:
the TP-1 row is not the kernel's steady state) are left out. Prints s0 per kernel and generation, the rows
it rests on and the rms log error. Standard library only.

Usage: scripts/moe_slice_fit.py [STORE_DIR]   (default: ~/.cache/servelab/ops/aic-ops)
"""
import collections
import glob
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moe_overhead_fit import load  # noqa: E402  (the SLOPS01 reader)

GENERATION = {"a100_sxm": "ampere", "h100_sxm": "hopper", "h200_sxm": "hopper", "b200_sxm": "blackwell",
              "b300_sxm": "blackwell"}
TOKENS = (8192, 16384)


def fit_s0(pairs):
    """The s0 (0-3000, step 5) of least squared log error over (s, s1, r) pairs, and that rms."""
    best = None
    for s0 in range(0, 3001, 5):
        err = sum((math.log((s / (s + s0)) / (s1 / (s1 + s0))) - math.log(r)) ** 2 for s, s1, r in pairs)
        if best is None or err < best[0]:
            best = (err, s0)
    return best[1], math.sqrt(best[0] / len(pairs))


def main():
    store = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/servelab/ops/aic-ops")
    by_kernel = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(store, "*", "moe", "*", "*", "moe_perf.ops"))):
        gpu = os.path.relpath(path, store).split(os.sep)[0]
        if gpu not in GENERATION:
            continue
        c = load(path)
        rows = collections.defaultdict(dict)
        for i in range(len(c["latency"])):
            if (c["distribution"][i] != "balanced" or c["moe_ep_size"][i] != 1 or
                    c["num_tokens"][i] not in TOKENS):
                continue
            key = (c["kernel_source"][i], c["moe_dtype"][i], c["hidden_size"][i], c["inter_size"][i],
                   c["topk"][i], c["num_experts"][i], c["num_tokens"][i])
            rows[key][c["moe_tp_size"][i]] = c["latency"][i]
        for key, by_tp in rows.items():
            if 1 not in by_tp:
                continue
            for tp, latency in by_tp.items():
                r = by_tp[1] / tp / latency
                if tp > 1 and r <= 1.1:
                    by_kernel[(GENERATION[gpu], key[0])].append((key[3] / tp, key[3], r))
    for (generation, kernel), pairs in sorted(by_kernel.items()):
        if len(pairs) < 5:
            continue
        s0, rms = fit_s0(pairs)
        print(f"{generation:<10} {kernel:<80} {len(pairs):5d} rows  s0 {s0:5d}  rms log {rms:.2f}")


if __name__ == "__main__":
    main()
