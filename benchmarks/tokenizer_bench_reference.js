#!/usr/bin/env node
// Reference side of benchmarks/tokenizer_bench: encodes the same texts with Hugging Face `tokenizers`
// (npm, the Rust library's Node binding) on ONE thread and prints a JSON line with its own timing.
// Usage: RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node tokenizer_bench_reference.js \
//          NPM_TOKENIZERS_DIR TOKENIZER_JSON TEXTS_JSON REPEATS
// The texts are encoded with one encodeBatch call per repeat (single rayon thread): this times the Rust
// encode loop itself, not one N-API promise round trip per text. add_special_tokens = false.
'use strict';
const fs = require('fs');
const [modDir, tokFile, textsFile, repeatsArg] = process.argv.slice(2);
const { Tokenizer } = require(modDir);
const json = JSON.parse(fs.readFileSync(tokFile, 'utf8'));
if (!json.model.type) json.model.type = 'BPE';  // GPT-2's file: see scripts/tokenizer_oracle.js
const v = json.model.vocab;
json.model.merges = json.model.merges.filter(m => {
  const [a, b] = typeof m === 'string' ? m.split(' ') : m;
  return a in v && b in v && (a + b) in v;
});
const tok = Tokenizer.fromString(JSON.stringify(json));
const texts = JSON.parse(fs.readFileSync(textsFile, 'utf8'));
const bytes = texts.reduce((a, t) => a + Buffer.byteLength(t, 'utf8'), 0);
(async () => {
  let tokens = 0;
  for (const e of await tok.encodeBatch(texts, { addSpecialTokens: false })) tokens += e.getIds().length;  // warm-up
  const seconds = [];
  for (let r = 0; r < Number(repeatsArg); r++) {
    const t0 = process.hrtime.bigint();
    await tok.encodeBatch(texts, { addSpecialTokens: false });
    seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  seconds.sort((a, b) => a - b);
  console.log(JSON.stringify({ bytes, tokens, best_s: seconds[0], median_s: seconds[Math.floor(seconds.length / 2)] }));
})();
