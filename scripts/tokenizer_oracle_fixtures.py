#!/usr/bin/env python3
"""Writes the synthetic sentencepiece-style tokenizer.json fixtures used by the tokenizer parity suite
(tests/tokenizer/fixtures/*_tokenizer.json). No real Llama/Mistral file is available offline, so these
reproduce their layouts exactly (Hugging Face's converted Llama-2 and Mistral-v0.3 tokenizer.json) over a
tiny BPE vocabulary trained here on sentences written for this purpose:

  llama_style     Llama-2: normalizer Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer, BPE with
                  byte_fallback + unk + fuse_unk, decoder Replace/ByteFallback/Fuse/Strip, BOS template.
  mistral_style   Mistral v0.3: Metaspace pre-tokenizer (prepend_scheme "first", split false), same
                  decoder chain, BOS template; added tokens with lstrip / rstrip / single_word.
  metaspace_style Metaspace (always, split true) inside a Sequence with Digits and every Split behavior,
                  NFKC + Lowercase normalizers, ignore_merges, Metaspace decoder, BOS+EOS template.

Usage: python3 scripts/tokenizer_oracle_fixtures.py [OUT_DIR]   (deterministic; rerun to regenerate)
"""
import collections
import json
import os
import sys

CORPUS = """
the quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun
servers measure tokens per second and time to first token for every request
a tokenizer splits text into pieces and maps each piece to an id in its vocabulary
the model reads the prompt then writes the answer one token at a time
batching many requests together keeps the accelerator busy and raises throughput
latency matters to people waiting for the first word of a reply
numbers like 2024 and 3.14 and 1000000 appear in many prompts
café résumé naïve façade über straße
你好 世界 我们 测试 分词
hello world hello there general greetings to everyone here
""".split("\n")

UNUSED = None


def train(words, n_merges):
    vocab_chars = sorted({c for w in words for c in w})
    counts = collections.Counter(words)
    seqs = {w: list(w) for w in counts}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, n in counts.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        (a, b), n = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if n < 2:
            break
        merges.append((a, b))
        for w in seqs:
            s, out, i = seqs[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    return vocab_chars, merges


def base_model(words, n_merges, ignore_merges=False):
    chars, merges = train(words, n_merges)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for c in chars:
        vocab.setdefault(c, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    if ignore_merges:
        vocab.setdefault("▁typhoon", len(vocab))  # reachable only through ignore_merges (no a-e: one piece)
    return {
        "type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
        "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": ignore_merges,
        "vocab": vocab, "merges": [[a, b] for a, b in merges],
    }


def added(i, content, special, normalized, lstrip=False, rstrip=False, single_word=False):
    return {"id": i, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def template(bos=True, eos=False):
    single, special = [], {}
    if bos:
        single.append({"SpecialToken": {"id": "<s>", "type_id": 0}})
        special["<s>"] = {"id": "<s>", "ids": [1], "tokens": ["<s>"]}
    single.append({"Sequence": {"id": "A", "type_id": 0}})
    if eos:
        single.append({"SpecialToken": {"id": "</s>", "type_id": 0}})
        special["</s>"] = {"id": "</s>", "ids": [2], "tokens": ["</s>"]}
    pair = single + [{"Sequence": {"id": "B", "type_id": 1}}]
    return {"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": special}


SP_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "tokenizer", "fixtures")
    os.makedirs(out, exist_ok=True)
    words = ["▁" + w for line in CORPUS for w in line.split()]
    specials = [added(0, "<unk>", True, False), added(1, "<s>", True, False), added(2, "</s>", True, False)]

    m = base_model(words, 300)
    llama = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": specials,
             "normalizer": {"type": "Sequence", "normalizers": [
                 {"type": "Prepend", "prepend": "▁"},
                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
             "pre_tokenizer": None, "post_processor": template(), "decoder": SP_DECODER, "model": m}

    m2 = base_model(words, 300)
    n = len(m2["vocab"])
    mistral_added = specials + [
        added(n, "[INST]", True, False, lstrip=True), added(n + 1, "[/INST]", True, False, rstrip=True),
        added(n + 2, "<tool>", False, True, single_word=True), added(n + 3, "▁ctrl", False, False)]
    mistral = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": mistral_added,
               "normalizer": None,
               "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
               "post_processor": template(), "decoder": SP_DECODER, "model": m2}

    m3 = base_model([w.lower() for w in words], 200, ignore_merges=True)
    n = len(m3["vocab"])
    meta = {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": specials + [added(n, "<mask>", True, True, lstrip=True, rstrip=True)],
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithPrevious", "invert": False},
                {"type": "Split", "pattern": {"Regex": "[,;]"}, "behavior": "Removed", "invert": False},
                {"type": "Split", "pattern": {"Regex": "x+"}, "behavior": "MergedWithNext", "invert": False},
                {"type": "Split", "pattern": {"Regex": "[a-e]+"}, "behavior": "Contiguous", "invert": True},
                {"type": "Digits", "individual_digits": False},
                {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}]},
            "post_processor": template(bos=True, eos=True),
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "ByteFallback"},
                {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}]},
            "model": m3}

    for name, doc in [("llama_style", llama), ("mistral_style", mistral), ("metaspace_style", meta)]:
        with open(os.path.join(out, name + "_tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
