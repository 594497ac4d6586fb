#!/usr/bin/python3
"""numpy oracle for servelab's metrics tests (run with Debian's /usr/bin/python3, which has numpy).

Reads one JSON document (path in argv[1]) and writes one JSON document to stdout.
Input:
  {"stats": [[x, ...], ...], "percentiles": [p, ...],            # plain numpy statistics
   "requests": [{"success", "prompt_len", "output_tokens", "ttft", "itl", "latency", "start_time"}, ...],
   "duration": s, "goodput": {"ttft": ms, "tpot": ms, "e2el": ms}}  # vLLM calculate_metrics
Output:
  {"stats": [{"mean", "median", "std", "percentiles": [...]}, ...], "metrics": {...}}

The metrics part re-states vLLM 0.13's `calculate_metrics` (vllm/benchmarks/serve.py) formulas as
described in shared/reference/vllm-bench-serve.md §4: numpy mean / median / population std /
percentile("linear"), x1000 to ms, `x or 0` for empty lists, TPOT only for > 1 output token, goodput with
inclusive SLOs in seconds, and the 0.13 per-second peak buckets.
"""
import json
import sys

import numpy as np


def stats(values, percentiles):
    return {
        "mean": float(np.mean(values)),
        "median": float(np.median(values)),
        "std": float(np.std(values)),
        "percentiles": [float(np.percentile(values, p)) for p in percentiles],
    }


def calculate_metrics(requests, dur_s, percentiles, goodput):
    actual_output_lens, total_input, completed, good_completed = [], 0, 0, 0
    itls, tpots, all_tpots, ttfts, e2els = [], [], [], [], []
    for r in requests:
        if r["success"]:
            output_len = r["output_tokens"]
            actual_output_lens.append(output_len)
            total_input += r["prompt_len"]
            tpot = 0
            if output_len > 1:
                tpot = (r["latency"] - r["ttft"]) / (output_len - 1)
                tpots.append(tpot)
            all_tpots.append(tpot)
            itls += r["itl"]
            ttfts.append(r["ttft"])
            e2els.append(r["latency"])
            completed += 1
        else:
            actual_output_lens.append(0)
    if goodput:
        valid, slos = [], []
        for key, values in (("ttft", ttfts), ("tpot", all_tpots), ("e2el", e2els)):
            if key in goodput:
                valid.append(values)
                slos.append(goodput[key] / 1000)
        for req in zip(*valid):
            if all(s >= v for s, v in zip(slos, req)):
                good_completed += 1

    max_output_tokens_per_s, max_concurrent_requests = 0.0, 0
    ok = [r for r in requests if r["success"]]
    if ok:
        t0 = min(r["start_time"] for r in ok)
        t_end = max(r["start_time"] + r["latency"] for r in ok)
        n = int(np.ceil(t_end - t0)) + 1
        tokens_per_second = np.zeros(n)
        concurrent_per_second = np.zeros(n)
        for r in ok:
            times = [r["start_time"] + r["ttft"]]
            current = times[0]
            for gap in r["itl"]:
                current += gap
                times.append(current)
            for t in times:
                b = int(t - t0)
                if 0 <= b < n:
                    tokens_per_second[b] += 1
            for s in range(int(r["start_time"] - t0), int((r["start_time"] + r["latency"]) - t0) + 1):
                concurrent_per_second[s] += 1
        max_output_tokens_per_s = float(np.max(tokens_per_second))
        max_concurrent_requests = int(np.max(concurrent_per_second))

    out = {
        "completed": completed,
        "failed": len(requests) - completed,
        "total_input": total_input,
        "total_output": sum(actual_output_lens),
        "request_throughput": completed / dur_s,
        "request_goodput": good_completed / dur_s,
        "output_throughput": sum(actual_output_lens) / dur_s,
        "total_token_throughput": (total_input + sum(actual_output_lens)) / dur_s,
        "max_output_tokens_per_s": max_output_tokens_per_s,
        "max_concurrent_requests": max_concurrent_requests,
    }
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        out["mean_%s_ms" % name] = float(np.mean(values or 0) * 1000)
        out["std_%s_ms" % name] = float(np.std(values or 0) * 1000)
        out["median_%s_ms" % name] = float(np.median(values or 0) * 1000)
        out["percentiles_%s_ms" % name] = [float(np.percentile(values or 0, p) * 1000) for p in percentiles]
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    percentiles = doc.get("percentiles", [99.0])
    result = {"numpy_version": np.__version__}
    result["stats"] = [stats(v, percentiles) for v in doc.get("stats", [])]
    if "requests" in doc:
        result["metrics"] = calculate_metrics(doc["requests"], doc["duration"], percentiles,
                                              doc.get("goodput", {}))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
