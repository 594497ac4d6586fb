#!/usr/bin/env python3
"""The weight-unpacking rate of the weight-only MoE kernels on Hopper (src/sim/physics.cc, KernelEfficiency::
upcast_Bps_per_sm), refitted.

Marlin and OpenAI's triton_kernels matmul_ogs dequantise int4 / MXFP4 expert weights to BF16 inside the GEMM
mainloop. AIConfigurator's moe_perf tables (shared/data/aic-ops) time them within 1-12% of each other on H100
(3.35 TB/s) and H200 (4.8 TB/s), where the BF16 / FP8 fused_moe rows of the same shapes differ by 1.3-1.4x:
their weight read is bound by the SMs (the same 132 on both), not by HBM. This script fits, per table, as
scripts/moe_overhead_fit.py does,

    latency = a + touched x t + touched x slice_bytes / R

over the balanced-routing rows at 1-64 tokens (expert parallelism 1, at least 32 experts), and prints R in
TB/s, as a fraction of the GPU's HBM bandwidth, and per SM; then, per kernel family, the median per-SM rate
(the value physics.cc uses) and the largest fraction of HBM any of its tables reached (a floor for the
family's HBM efficiency). It also prints the H100 / H200 latency ratio of each kernel over the rows both
GPUs measure (1.43 = HBM-bound, 1.0 = SM-bound). Standard library only.

Usage: scripts/moe_upcast_fit.py [STORE_DIR]   (default: ~/.cache/servelab/ops/aic-ops)
"""
import os
import statistics
import sys

from moe_overhead_fit import balanced_decode_rows, fit_fixed_costs

# (family, table under the store, kernel_source, moe_dtype, bytes per parameter). Bytes per parameter:
# int4 with a BF16 scale per 128 [assumption: the collector's group size]; MXFP4 with an E8M0 scale per 32.
TABLES = [
    ("marlin", "vllm/0.14.0", "vllm_marlin_moe", "int4_wo", 4.125 / 8),
    ("marlin", "vllm/0.19.0", "vllm_marlin_int4_moe", "int4_wo", 4.125 / 8),
    ("marlin", "vllm/0.24.0", "vllm_compressedtensorsw4a4mxfp4moe_marlin_marlinexperts_situ_as_silu",
     "w4a16_mxfp4", 4.25 / 8),
    ("triton_kernels", "vllm/0.24.0", "vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic",
     "w4a16_mxfp4", 4.25 / 8),
]
# (store folder, HBM bytes/s, SMs) of src/hardware/gpus.json.
GPUS = [("h100_sxm", 3.35e12, 132), ("h200_sxm", 4.8e12, 132)]


def rows(store, gpu, table, kernel, dtype):
    """balanced_decode_rows of one GPU's table; [] when it is missing."""
    path = os.path.join(store, gpu, "moe", table, "moe_perf.ops")
    return balanced_decode_rows(path, kernel, dtype) if os.path.exists(path) else []


def main():
    store = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/servelab/ops/aic-ops")
    per_sm, hbm_frac = {}, {}
    for family, table, kernel, dtype, bpp in TABLES:
        by_gpu = {}
        for gpu, hbm, sms in GPUS:
            r = rows(store, gpu, table, kernel, dtype)
            if len(r) < 4:
                print(f"{gpu}/{table} {kernel}: missing, skipped")
                continue
            by_gpu[gpu] = {(q["hidden"], q["inter"], q["topk"], q["experts"], q["tp"], q["tokens"]): q["latency_ms"]
                           for q in r}
            a, t, inv_r, rms, n = fit_fixed_costs(r, bpp)
            rate = 1 / inv_r
            print(f"{gpu}/{table} {kernel} {dtype}: {n} rows, a {a * 1e6:.1f} us, t {t * 1e6:.2f} us, "
                  f"R {rate / 1e12:.2f} TB/s = {rate / hbm:.2f} of HBM = {rate / sms / 1e9:.1f} GB/s per SM, "
                  f"rms {rms:.1%}")
            per_sm.setdefault(family, []).append(rate / sms)
            hbm_frac.setdefault(family, []).append(rate / hbm)
        if len(by_gpu) == 2:
            common = by_gpu["h100_sxm"].keys() & by_gpu["h200_sxm"].keys()
            ratio = statistics.median(by_gpu["h100_sxm"][k] / by_gpu["h200_sxm"][k] for k in common)
            print(f"  H100 / H200 latency, median over {len(common)} rows: {ratio:.3f}")
    for family, v in per_sm.items():
        print(f"{family}: median {statistics.median(v) / 1e9:.1f} GB/s per SM over {len(v)} tables; "
              f"highest fraction of HBM reached {max(hbm_frac[family]):.2f}")


if __name__ == "__main__":
    main()
