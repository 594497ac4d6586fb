#!/usr/bin/env python3
"""Generates a large ShareGPT-form JSON file (default ~640 MB, the size of ShareGPT_V3_unfiltered_cleaned_split
.json that vLLM's docs download) from the real conversations in the data directory, for benchmarking the
ShareGPT loader (benchmarks/dataset_bench).

Layout mirrors the real file: a top-level JSON array, pretty-printed with indent=2, ASCII-escaped
(json.dump defaults), records {"id": "...", "conversations": [{"from": "human"|"gpt", "value": "..."}, ...]}.
Each record chains 1-6 real human->gpt exchanges drawn at random from the *.sharegpt.json files and the
pairs sample (so the mean record is a few kB, like ShareGPT's multi-turn chats); about 3% of records keep
only a first human turn (from sharegpt_v3_first_turn_1000.json) so vLLM's ">= 2 turns" filter has work.
No text is invented; the same real texts repeat.

Usage: python3 scripts/gen_large_sharegpt.py [--out PATH] [--size-mb 640] [--seed 0] [--data DIR]
"""
import argparse
import glob
import json
import os
import random
import sys


def load_exchanges(data_dir):
    exchanges, first_turns = [], []
    files = sorted(glob.glob(os.path.join(data_dir, "*.sharegpt.json")))
    files.append(os.path.join(data_dir, "sharegpt_pairs_sample.json"))
    files.append(os.path.join(data_dir, "sharegpt_v4.3_tiny_multiturn.json"))
    for path in files:
        with open(path, encoding="utf-8") as f:
            for rec in json.load(f):
                turns = rec.get("conversations", [])
                for i in range(len(turns) - 1):
                    if turns[i].get("from") == "human" and turns[i + 1].get("from") == "gpt":
                        exchanges.append((turns[i]["value"], turns[i + 1]["value"]))
    with open(os.path.join(data_dir, "sharegpt_v3_first_turn_1000.json"), encoding="utf-8") as f:
        for rec in json.load(f):
            first_turns.extend(t["value"] for t in rec["conversations"][:1])
    return exchanges, first_turns


def main():
    default_data = os.environ.get("SERVELAB_DATA_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "servelab_sharegpt_large.json"))
    ap.add_argument("--size-mb", type=float, default=640.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=default_data)
    args = ap.parse_args()

    exchanges, first_turns = load_exchanges(args.data)
    if not exchanges:
        sys.exit(f"no human->gpt exchanges found in {args.data}")
    rng = random.Random(args.seed)
    target = int(args.size_mb * 1024 * 1024)
    written = 0
    n = 0
    with open(args.out, "w", encoding="ascii") as f:
        f.write("[\n")
        written += 2
        while written < target:
            if rng.random() < 0.03:
                conv = [{"from": "human", "value": rng.choice(first_turns)}]
            else:
                conv = []
                for _ in range(rng.randint(1, 6)):
                    q, a = rng.choice(exchanges)
                    conv.append({"from": "human", "value": q})
                    conv.append({"from": "gpt", "value": a})
            rec = {"id": f"gen{n:07d}_{rng.randrange(16 ** 4):04x}", "conversations": conv}
            text = ("" if n == 0 else ",\n") + "  " + json.dumps(rec, indent=2).replace("\n", "\n  ")
            f.write(text)
            written += len(text)
            n += 1
        f.write("\n]")
    print(f"wrote {args.out}: {n} records, {os.path.getsize(args.out) / 1e6:.1f} MB "
          f"from {len(exchanges)} real exchanges")


if __name__ == "__main__":
    main()
