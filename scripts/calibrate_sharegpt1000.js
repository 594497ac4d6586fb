#!/usr/bin/env node
// Builds the engine twin's `sharegpt-1000` workload: 1000 (prompt_len, output_len) pairs whose totals match
// the reference study (vLLM's ShareGPT sampling of the full ShareGPT_V3 file: 1000 requests, 219,111 input
// tokens, about 197k output tokens). The full file is not available here, so (all deterministic):
//  1. Prompts: the 1000 real ShareGPT first prompts in shared/data/sharegpt_v3_first_turn_1000.json, in file
//     order, tokenized with DeepSeek-V3's tokenizer including BOS (vLLM's sampler counts
//     len(tokenizer(prompt).input_ids)). Their sum is 171,329: this file was pre-filtered towards short
//     prompts, so every length is scaled by 219111/171329 (= 1.2789) and rounded by largest remainder so the
//     total is exactly 219,111 (minimum 4 tokens, vLLM's prompt_len >= 4 filter).
//  2. Output lengths: the real reply lengths (same tokenizer, BOS-inclusive as vLLM counts completions) of
//     every assistant turn in the paired files (*.sharegpt.json and sharegpt_pairs_sample.json, 2,400
//     replies), restricted to vLLM's filter range [4, 2048]; 1000 evenly spaced quantiles of that pool,
//     assigned to the prompts in a seeded (mulberry32, seed 42) random order, clamped to vLLM's
//     prompt + output <= 2048 filter, then mapped x -> x_max (x / x_max)^b (longest reply and order kept,
//     b by bisection) so the total is 197,162 tokens = the mean "Total generated
//     tokens" of the 12 released full-success vLLM/SGLang ShareGPT runs (the engines stop at EOS a little
//     before max_tokens, so this is the study's effective output total).
// Output: src/sim/sharegpt1000_lengths.inc (numbers only, no text). Rerun: make deps; node scripts/calibrate_sharegpt1000.js
const fs = require('fs');
const path = require('path');
const home = process.env.HOME;
const cache = process.env.SERVELAB_CACHE_DIR || path.join(process.env.XDG_CACHE_HOME || path.join(home, '.cache'), 'servelab');
const {Tokenizer} = require(path.join(cache, 'npm/node_modules/tokenizers'));
const dataDir = process.env.SERVELAB_DATA_DIR || path.join(__dirname, '../../shared/data');
const kInputTotal = 219111, kOutputTotal = 197162;

function mulberry32(a) {
  return function() {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
// Rounds non-negative reals to integers with the given exact sum (largest remainder), each >= lo.
function roundToTotal(xs, total, lo) {
  const fl = xs.map(x => Math.max(lo, Math.floor(x)));
  let rest = total - fl.reduce((a, b) => a + b, 0);
  const order = xs.map((x, i) => [x - Math.floor(x), i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (let k = 0; rest > 0; k = (k + 1) % order.length, rest--) fl[order[k][1]]++;
  for (let k = order.length - 1; rest < 0; k = (k - 1 + order.length) % order.length) {
    const i = order[k][1];
    if (fl[i] > lo) { fl[i]--; rest++; }
  }
  return fl;
}

(async () => {
  const tok = await Tokenizer.fromFile(path.join(cache, 'tokenizers/deepseek-v3/tokenizer.json'));
  const len = async s => (await tok.encode(s)).getIds().length;
  const prompts = JSON.parse(fs.readFileSync(path.join(dataDir, 'sharegpt_v3_first_turn_1000.json')));
  const raw = [];
  for (const r of prompts) raw.push(await len(r.conversations[0].value));
  const rawSum = raw.reduce((a, b) => a + b, 0);
  const inLens = roundToTotal(raw.map(x => x * kInputTotal / rawSum), kInputTotal, 4);

  const pool = [];
  const files = fs.readdirSync(dataDir).filter(f => f.endsWith('.sharegpt.json')).concat(['sharegpt_pairs_sample.json']).sort();
  for (const f of files) {
    for (const r of JSON.parse(fs.readFileSync(path.join(dataDir, f)))) {
      for (const c of r.conversations) if (c.from === 'gpt') pool.push(await len(c.value));
    }
  }
  const kept = pool.filter(x => x >= 4 && x <= 2048).sort((a, b) => a - b);
  const q = [];
  for (let i = 0; i < 1000; i++) q.push(kept[Math.min(kept.length - 1, Math.floor((i + 0.5) * kept.length / 1000))]);
  const rnd = mulberry32(42);
  for (let i = q.length - 1; i > 0; i--) { const j = Math.floor(rnd() * (i + 1)); [q[i], q[j]] = [q[j], q[i]]; }
  // Real ShareGPT replies are shorter than GPT-4 answers but keep a long tail (vLLM's filter admits up
  // to 2048 - prompt). A power map x -> x_max * (x / x_max)^b keeps the pool's longest reply and its
  // order, and b is found by bisection so the total is kOutputTotal (after the prompt + output <= 2048
  // clamp). Scaling every length by one factor instead would cut the tail that sets the run's duration.
  const xmax = Math.max(...q);
  const mapped = b => q.map((x, i) => Math.min(2048 - inLens[i], xmax * Math.pow(x / xmax, b)));
  let lo = 0.5, hi = 8;
  for (let iter = 0; iter < 100; iter++) {
    const mid = (lo + hi) / 2;
    const s = mapped(mid).reduce((a, b) => a + b, 0);
    if (s > kOutputTotal) lo = mid; else hi = mid;
  }
  const exponent = (lo + hi) / 2;
  const out = mapped(exponent);
  const outLens = roundToTotal(out, kOutputTotal, 4);
  for (let i = 0; i < 1000; i++) if (inLens[i] + outLens[i] > 2048) throw new Error('filter violated at ' + i);

  const lines = [];
  lines.push('// Generated by scripts/calibrate_sharegpt1000.js; do not edit. {prompt_len, output_len} per request.');
  lines.push(`// prompts: ${raw.length} (raw token sum ${rawSum} -> ${kInputTotal}); reply pool: ${pool.length} replies from ${files.join(', ')}, ${kept.length} in [4, 2048]; output sum ${kOutputTotal}; power-map exponent ${exponent.toFixed(4)}.`);
  for (let i = 0; i < 1000; i += 10) {
    lines.push(inLens.slice(i, i + 10).map((x, k) => `{${x}, ${outLens[i + k]}},`).join(' '));
  }
  fs.writeFileSync(path.join(__dirname, '../src/sim/sharegpt1000_lengths.inc'), lines.join('\n') + '\n');
  console.log(`raw prompt sum ${rawSum}; pool ${pool.length} (${kept.length} kept, median ${kept[kept.length >> 1]}); wrote 1000 pairs`);
})();
