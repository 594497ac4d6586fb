#!/usr/bin/env python3
"""The routed experts' fixed costs of src/sim/physics.h (kMoeCallLatencyS, kMoeExpertOverheadS), refitted.

Fits, by least squares, the measured latency of a fused-MoE call to

    latency = a + touched x t + touched x slice_bytes / (HBM bandwidth x e)

over the balanced-routing rows at 1-64 tokens (expert parallelism 1, at least 32 experts) of one kernel and
weight format in AIConfigurator's moe_perf tables, as `make deps` imported them (format SLOPS01 of
scripts/import_ops.mjs). touched = min(experts, tokens x top-k) (balanced routing spreads the rows evenly);
slice_bytes = 3 x hidden x intermediate / moe_tp x bytes per parameter. `a` is the call's fixed time, `t`
what each touched expert costs beyond its bytes, `e` the fraction of HBM bandwidth the weight read reaches.
Prints a, t and e per table and their medians. Standard library only.

Usage: scripts/moe_overhead_fit.py [STORE_DIR]   (default: ~/.cache/servelab/ops/aic-ops)
"""
import array
import json
import math
import os
import statistics
import struct
import sys

# (table under the store, kernel_source, moe_dtype, bytes per parameter, HBM bytes/s of the GPU
# (src/hardware/gpus.json)). Bytes per parameter: int4 with a BF16 scale per 128 [assumption: the
# collector's group size]; NVFP4 with an FP8 scale per 16; BF16; FP8 per tensor.
TABLES = [
    ("h100_sxm/moe/vllm/0.14.0", "vllm_marlin_moe", "int4_wo", 4.125 / 8, 3.35e12),
    ("h100_sxm/moe/vllm/0.14.0", "vllm_fused_moe", "bfloat16", 2.0, 3.35e12),
    ("h100_sxm/moe/vllm/0.14.0", "vllm_fused_moe", "fp8", 1.0, 3.35e12),
    ("h200_sxm/moe/vllm/0.14.0", "vllm_marlin_moe", "int4_wo", 4.125 / 8, 4.8e12),
    ("h200_sxm/moe/vllm/0.14.0", "vllm_fused_moe", "bfloat16", 2.0, 4.8e12),
    ("b200_sxm/moe/vllm/0.19.0", "vllm_flashinfer_trtllm_moe_fp4", "nvfp4", 4.5 / 8, 8e12),
]
TOKENS = {1, 2, 4, 8, 16, 32, 64}


def load(path):
    """The columns of one SLOPS01 table: name -> list of values (dictionary columns decoded)."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:7] != b"SLOPS01":
        raise SystemExit(f"{path}: not an SLOPS01 op table (re-run make deps)")
    hlen = struct.unpack("<I", b[8:12])[0]
    header = json.loads(b[12:12 + hlen])
    rows = header["rows"]
    off = (12 + hlen + 7) // 8 * 8
    cols = {}
    for c in header["columns"]:
        width, code = {"dict": (2, "H"), "i32": (4, "i"), "f32": (4, "f"), "f64": (8, "d")}[c["type"]]
        a = array.array(code)
        a.frombytes(b[off:off + width * rows])
        off += (width * rows + 7) // 8 * 8
        cols[c["name"]] = [c["dict"][i] for i in a] if c["type"] == "dict" else list(a)
    return cols


def balanced_decode_rows(path, kernel, dtype):
    """The rows of the moe_perf table at `path` both fits use: `kernel`'s `dtype` rows with balanced routing,
    expert parallelism 1, at least 32 experts and TOKENS tokens, as dicts (hidden, inter, topk, experts, tp,
    tokens, latency_ms, touched = min(experts, tokens x top-k), params = 3 x hidden x inter / tp, the
    parameters of one expert's slice)."""
    c = load(path)
    out = []
    for i in range(len(c["latency"])):
        if (c["kernel_source"][i], c["moe_dtype"][i], c["distribution"][i]) != (kernel, dtype, "balanced"):
            continue
        tokens, experts = c["num_tokens"][i], c["num_experts"][i]
        if c["moe_ep_size"][i] != 1 or experts < 32 or tokens not in TOKENS:
            continue
        hidden, inter, topk, tp = c["hidden_size"][i], c["inter_size"][i], c["topk"][i], c["moe_tp_size"][i]
        out.append({"hidden": hidden, "inter": inter, "topk": topk, "experts": experts, "tp": tp,
                    "tokens": tokens, "latency_ms": c["latency"][i], "touched": min(experts, tokens * topk),
                    "params": 3.0 * hidden * inter / tp})
    return out


def solve(x, y):
    """Least squares y ~ x (rows of regressors), by the normal equations."""
    n = len(x[0])
    m = [[sum(r[i] * r[j] for r in x) for j in range(n)] + [sum(r[i] * v for r, v in zip(x, y))]
         for i in range(n)]
    for col in range(n):
        p = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[p] = m[p], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col])]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit_fixed_costs(rows, bytes_per_param, bandwidth=1.0):
    """Least squares latency = a + touched x t + touched x slice_bytes / (bandwidth x e) over `rows`
    (balanced_decode_rows), slice_bytes = params x bytes_per_param. Returns (a, t, 1 / e, rms relative
    error, rows): with bandwidth 1, 1 / e is the inverse of the read rate in bytes/s."""
    x = [(1.0, r["touched"], r["touched"] * r["params"] * bytes_per_param / bandwidth) for r in rows]
    y = [r["latency_ms"] * 1e-3 for r in rows]
    a, t, inv_e = solve(x, y)
    rms = math.sqrt(sum(((v - a - t * q[1] - inv_e * q[2]) / v) ** 2 for q, v in zip(x, y)) / len(y))
    return a, t, inv_e, rms, len(y)


def main():
    store = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/servelab/ops/aic-ops")
    a_all, t_all = [], []
    for table, kernel, dtype, bpp, hbm in TABLES:
        path = os.path.join(store, table, "moe_perf.ops")
        if not os.path.exists(path):
            print(f"{table}: missing, skipped")
            continue
        a, t, inv_e, rms, n = fit_fixed_costs(balanced_decode_rows(path, kernel, dtype), bpp, hbm)
        print(f"{table} {kernel} {dtype}: {n} rows, a {a * 1e6:.1f} us, t {t * 1e6:.2f} us, "
              f"e {1 / inv_e:.3f}, rms {rms:.1%}")
        a_all.append(a)
        t_all.append(t)
    if a_all:
        print(f"median: a {statistics.median(a_all) * 1e6:.1f} us, t {statistics.median(t_all) * 1e6:.2f} us")


if __name__ == "__main__":
    main()
