#!/usr/bin/env python3
"""Oracle for tests/dataset: vLLM's dataset sampling logic (vllm/benchmarks/datasets.py, 0.13) over a fake
tokenizer, printing JSON. Run with Debian's /usr/bin/python3 (numpy) for `random`/`prefix_repetition`;
`sharegpt`, `shuffle`, `choice` need only the stdlib.

Fake tokenizer (same as FakeTokenizer in dataset_test.cc): ids 0..vocab-1; decode(ids) = concatenation of
"t<id> " for ids not divisible by 7 (ids % 7 == 0 decode to nothing); encode(text) = the ids of the
"t<id>" words; special ids {0, 1}; num_special_tokens_to_add = 1; counting for sharegpt = UTF-8 bytes // 4 + 1
(a BOS)."""
import json
import random
import sys

VOCAB = 1000
SPECIAL = [0, 1]


def decode(ids):
    return "".join(f"t{i} " for i in ids if i % 7 != 0)


def encode(text):
    return [int(w[1:]) for w in text.split()]


def fixer(tokens, target, draw, max_retry=10):
    remain = max_retry
    mismatch = 0
    while True:
        prompt = decode(tokens)
        tokens = encode(prompt)
        if remain <= 0:
            if len(tokens) != target:
                mismatch = len(tokens) - target
            break
        if len(tokens) == target:
            break
        elif len(tokens) < target:
            tokens.extend(draw(target - len(tokens)))
        else:
            tokens = tokens[:target]
        remain -= 1
    return prompt, tokens, mismatch


def random_dataset(seed, n, input_len, output_len, r_in, r_out, prefix_len):
    import math
    import numpy as np
    rng = np.random.default_rng(seed)
    real = max(0, input_len - 1)
    ilo, ihi = math.floor(real * (1 - r_in)), math.ceil(real * (1 + r_in))
    olo, ohi = max(1, math.floor(output_len * (1 - r_out))), max(1, math.ceil(output_len * (1 + r_out)))
    input_lens = rng.integers(ilo, ihi + 1, size=n)
    output_lens = rng.integers(olo, ohi + 1, size=n)
    offsets = rng.integers(0, VOCAB, size=n)
    allowed = np.array(sorted(set(range(VOCAB)) - set(SPECIAL)))
    draw = lambda k: rng.integers(0, VOCAB, size=k).tolist()
    prefix = []
    if prefix_len > 0:
        prefix = allowed[rng.integers(0, len(allowed), size=prefix_len)].tolist()
        _, prefix, _ = fixer(prefix, prefix_len, draw)
    out = []
    for i in range(n):
        inner = allowed[(offsets[i] + i + np.arange(input_lens[i])) % len(allowed)].tolist()
        prompt, toks, _ = fixer(prefix + inner, prefix_len + int(input_lens[i]), draw)
        out.append([prompt, len(toks), int(output_lens[i])])
    return out


def prefix_repetition(seed, n, prefix_len, suffix_len, num_prefixes, output_len):
    import numpy as np
    random.seed(seed)
    np.random.seed(seed)
    draw = lambda k: np.random.randint(0, VOCAB, size=k).tolist()
    out = []
    per, rem = divmod(n, num_prefixes)
    for p in range(num_prefixes):
        _, prefix, _ = fixer(draw(prefix_len), prefix_len, draw)
        for _ in range(per + (1 if p < rem else 0)):
            _, suffix, _ = fixer(draw(suffix_len), suffix_len, draw)
            combined = prefix + suffix
            out.append([decode(combined), len(combined), output_len])
    random.shuffle(out)
    return out


def random_mm(seed, n, input_len, output_len, base_items, items_ratio, limit, buckets):
    """vLLM RandomMultiModalDataset.sample (images only): random text, then per request the item count
    (rng.integers), rng.choice over the normalized buckets and rng.integers(0, 256, (h, w, 3), uint8) pixels.
    Each image is reported as [h, w, sum of the pixel bytes, first 8 bytes]."""
    import math
    import numpy as np
    rng = np.random.default_rng(seed)
    real = max(0, input_len - 1)
    input_lens = rng.integers(real, real + 1, size=n)
    output_lens = rng.integers(output_len, output_len + 1, size=n)
    offsets = rng.integers(0, VOCAB, size=n)
    buckets = {k: v / sum(v for v in buckets.values() if v > 0) for k, v in buckets.items() if v > 0}
    lim = sum(v for k, v in limit.items() if k == "image")  # images only: no video bucket has p > 0
    mx = min(lim, math.ceil(base_items * (1 + items_ratio)))
    mn = max(0, math.floor(base_items * (1 - items_ratio)))
    allowed = np.array(sorted(set(range(VOCAB)) - set(SPECIAL)))
    draw = lambda k: rng.integers(0, VOCAB, size=k).tolist()
    out = []
    for i in range(n):
        inner = allowed[(offsets[i] + i + np.arange(input_lens[i])) % len(allowed)].tolist()
        prompt, toks, _ = fixer(inner, int(input_lens[i]), draw)
        images = []
        k = int(rng.integers(mn, mx + 1))
        while len(images) < k:
            cfg = rng.choice(list(buckets.keys()), p=list(buckets.values()))
            px = rng.integers(0, 256, (int(cfg[0]), int(cfg[1]), 3), dtype=np.uint8)
            images.append([int(cfg[0]), int(cfg[1]), int(px.astype(np.int64).sum()), px.reshape(-1)[:8].tolist()])
        out.append([prompt, len(toks), int(output_lens[i]), images])
    return out


def hf_order(seed, streaming, rows_per_file):
    """Row order after HF datasets' load_dataset(...).shuffle(seed) (datasets 2.x/3.x): streaming =
    _shuffle_gen_kwargs (shard list shuffled by a copy of default_rng(seed)) then
    BufferShuffledExamplesIterable.__iter__ (buffer 1000, another copy), transcribed verbatim; map-style =
    default_rng(seed).permutation(n)."""
    import numpy as np
    offsets = [sum(rows_per_file[:f]) for f in range(len(rows_per_file))]
    total = sum(rows_per_file)
    if not streaming:
        return np.random.default_rng(seed).permutation(total).tolist()
    shards = list(range(len(rows_per_file)))
    np.random.default_rng(seed).shuffle(shards)

    def examples():
        for f in shards:
            for k in range(rows_per_file[f]):
                yield offsets[f] + k

    def _iter_random_indices(rng, buffer_size, random_batch_size=1000):
        while True:
            yield from (int(i) for i in rng.integers(0, buffer_size, size=random_batch_size))

    buffer_size = 1000
    rng = np.random.default_rng(seed)
    indices_iterator = _iter_random_indices(rng, buffer_size)
    mem_buffer = []
    out = []
    for x in examples():
        if len(mem_buffer) == buffer_size:
            i = next(indices_iterator)
            out.append(mem_buffer[i])
            mem_buffer[i] = x
        else:
            mem_buffer.append(x)
    rng.shuffle(mem_buffer)
    out.extend(mem_buffer)
    return out


def count(text):
    return len(text.encode("utf-8")) // 4 + 1


def sharegpt(path, seed, n, fixed_output, shuffle=True, oversample=True):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    idx = [i for i, e in enumerate(data) if "conversations" in e and len(e["conversations"]) >= 2]
    random.seed(seed)
    if shuffle:
        random.shuffle(idx)
    samples = []
    for i in idx:
        if len(samples) >= n:
            break
        conv = data[i]["conversations"]
        pl = count(conv[0]["value"])
        ol = fixed_output if fixed_output is not None else count(conv[1]["value"])
        ok = not (pl < 4 or (fixed_output is None and ol < 4) or pl > 1024 or pl + ol > 2048)
        if ok:
            samples.append([i, pl, ol, str(len(samples))])
    if oversample and len(samples) < n:
        random.seed(seed)
        base = list(samples)
        for k in range(n - len(base)):
            s = list(random.choice(base))
            s[3] = str(len(base) + k)
            samples.append(s)
    return samples


def main():
    kind = sys.argv[1]
    a = sys.argv[2:]
    if kind == "shuffle":
        seed, n = int(a[0]), int(a[1])
        random.seed(seed)
        v = list(range(n))
        random.shuffle(v)
        print(json.dumps(v))
    elif kind == "shuffle_many":  # seeds (comma list), sizes (comma list)
        out = []
        for seed in map(int, a[0].split(",")):
            for n in map(int, a[1].split(",")):
                random.seed(seed)
                v = list(range(n))
                random.shuffle(v)
                out.append(v)
            random.seed(seed)
            out.append([random.choice(range(94145)) for _ in range(200)])
        print(json.dumps(out))
    elif kind == "numpy_ints":  # Generator.integers and legacy randint over ranges hitting every code path
        import numpy as np
        ranges = [(0, 2), (5, 6), (0, 129280), (-1000, 1000), (0, 2**32), (0, 2**32 + 1), (0, 2**40 + 7),
                  (-(2**62), 2**62), (0, 2**31 - 1)]
        out = []
        for seed in map(int, a[0].split(",")):
            rng = np.random.default_rng(seed)
            out.append([rng.integers(lo, hi, size=7).tolist() for lo, hi in ranges])
            np.random.seed(seed % 2**32)
            out.append([np.random.randint(lo, hi, size=7, dtype=np.int64).tolist() for lo, hi in ranges])
        print(json.dumps(out))
    elif kind == "choice":
        seed, n, k = int(a[0]), int(a[1]), int(a[2])
        random.seed(seed)
        print(json.dumps([random.choice(range(n)) for _ in range(k)]))
    elif kind == "random":
        print(json.dumps(random_dataset(int(a[0]), int(a[1]), int(a[2]), int(a[3]), float(a[4]), float(a[5]), int(a[6]))))
    elif kind == "prefix_repetition":
        print(json.dumps(prefix_repetition(*map(int, a))))
    elif kind == "random_mm":  # seed n input_len output_len base ratio limit_json buckets_json([[h,w,t,p],...])
        buckets = {(b[0], b[1], b[2]): b[3] for b in json.loads(a[7])}
        print(json.dumps(random_mm(int(a[0]), int(a[1]), int(a[2]), int(a[3]), int(a[4]), float(a[5]),
                                   json.loads(a[6]), buckets)))
    elif kind == "hf_order":  # seed streaming(0/1) rows_per_file(comma list)
        print(json.dumps(hf_order(int(a[0]), a[1] == "1", [int(x) for x in a[2].split(",")])))
    elif kind == "sharegpt":
        fixed = None if a[3] == "none" else int(a[3])
        print(json.dumps(sharegpt(a[0], int(a[1]), int(a[2]), fixed)))
    else:
        sys.exit(f"unknown oracle {kind}")


if __name__ == "__main__":
    main()
