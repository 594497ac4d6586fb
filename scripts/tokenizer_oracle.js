#!/usr/bin/env node
// Parity oracle for servelab's tokenizer: encodes every text of every real data file in the data
// directory, plus adversarial texts, with Hugging Face `tokenizers` (npm 0.23.2, the official Node
// binding of the Rust library) and writes the golden ids and decodes to <out>/tokenizer_golden.json.
// tests/tokenizer/parity_test.cc compares servelab's encode/decode against every case.
//
// Usage: node scripts/tokenizer_oracle.js --out DIR [--data DIR] [--cache DIR] [--fixtures DIR]
// Writes <out>/status.json: {"available": false, "reason": ...} when node packages are missing (the C++
// test then skips loudly), else {"available": true, ...}.
//
// Tokenizers compared (names used in the golden file):
//   deepseek      DeepSeek-V3 tokenizer.json (make deps cache) with the post-processor transformers'
//                 LlamaTokenizerFast installs from tokenizer_config.json (BOS + $A), i.e. what vLLM counts.
//   deepseek_v32  the same with <think>/</think> at 128798/128799 (servelab's V3.1/V3.2 registration).
//   gpt2          <data>/gpt2-tokenizer.json, FIXED for this oracle: "type": "BPE" added and every merge
//                 whose parts/result are not in the vocabulary dropped ("ĠCla ude"); npm tokenizers
//                 0.23.2 refuses the original file (servelab loads the original and drops the same merge).
//   llama_style, mistral_style, metaspace_style   synthetic sentencepiece-style BPE fixtures
//                 (tests/tokenizer/fixtures, written by scripts/tokenizer_oracle_fixtures.py).
'use strict';
const fs = require('fs');
const path = require('path');
const os = require('os');

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const repo = path.resolve(__dirname, '..');
const cacheDir = arg('--cache', process.env.SERVELAB_CACHE_DIR ||
    path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'servelab'));
const dataDir = arg('--data', process.env.SERVELAB_DATA_DIR || path.resolve(repo, '..', 'shared', 'data'));
const fixturesDir = arg('--fixtures', path.join(repo, 'tests', 'tokenizer', 'fixtures'));
const outDir = arg('--out', null);
if (!outDir) { console.error('usage: tokenizer_oracle.js --out DIR'); process.exit(2); }
fs.mkdirSync(outDir, { recursive: true });

// Skip the (30-60 s) oracle when its inputs are unchanged since the last run into this directory.
const crypto = require('crypto');
function fingerprint() {
  const h = crypto.createHash('sha256');
  const addFile = f => { try { const st = fs.statSync(f); h.update(`${f}:${st.size}:${st.mtimeMs}\n`); } catch (e) { h.update(`${f}:missing\n`); } };
  h.update(fs.readFileSync(__filename));
  for (const d of [dataDir, fixturesDir]) {
    try { for (const f of fs.readdirSync(d).sort()) addFile(path.join(d, f)); } catch (e) { h.update(`${d}:missing\n`); }
  }
  for (const f of ['tokenizers/deepseek-v3/tokenizer.json', 'tokenizers/deepseek-v3/tokenizer_config.json',
                   'npm/node_modules/tokenizers/package.json']) addFile(path.join(cacheDir, f));
  return h.digest('hex');
}
const inputsHash = fingerprint();
try {
  const prev = JSON.parse(fs.readFileSync(path.join(outDir, 'status.json'), 'utf8'));
  if (prev.available && prev.inputs === inputsHash && fs.existsSync(path.join(outDir, 'tokenizer_golden.json')) &&
      !process.argv.includes('--force')) {
    console.log('oracle: inputs unchanged, golden file is current (--force to regenerate)');
    process.exit(0);
  }
} catch (e) { /* no previous run */ }

function writeStatus(obj) { fs.writeFileSync(path.join(outDir, 'status.json'), JSON.stringify(obj) + '\n'); }

let Tokenizer;
try {
  ({ Tokenizer } = require(path.join(cacheDir, 'npm', 'node_modules', 'tokenizers')));
} catch (e) {
  writeStatus({ available: false, reason: `npm tokenizers not loadable from ${cacheDir}/npm (run make deps): ${e.message}` });
  console.error('oracle unavailable:', e.message);
  process.exit(0);
}
const dsFile = path.join(cacheDir, 'tokenizers', 'deepseek-v3', 'tokenizer.json');
const gpt2File = path.join(dataDir, 'gpt2-tokenizer.json');
for (const f of [dsFile, gpt2File]) {
  if (!fs.existsSync(f)) {
    writeStatus({ available: false, reason: `missing ${f} (run make deps)` });
    process.exit(0);
  }
}

// ---- tokenizers ----
function deepseekJson(withThink) {
  const j = JSON.parse(fs.readFileSync(dsFile, 'utf8'));
  const cfg = JSON.parse(fs.readFileSync(path.join(path.dirname(dsFile), 'tokenizer_config.json'), 'utf8'));
  const bos = typeof cfg.bos_token === 'string' ? cfg.bos_token : cfg.bos_token.content;
  const bosId = j.added_tokens.find(t => t.content === bos).id;
  // transformers LlamaTokenizerFast.update_post_processor (add_bos_token=true, add_eos_token=false).
  j.post_processor = {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
           { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { [bos]: { id: bos, ids: [bosId], tokens: [bos] } },
  };
  if (withThink) {
    for (const t of j.added_tokens) {
      if (t.id === 128798) Object.assign(t, { content: '<think>', special: false, normalized: true });
      if (t.id === 128799) Object.assign(t, { content: '</think>', special: false, normalized: true });
    }
  }
  return JSON.stringify(j);
}
function gpt2FixedJson() {
  const j = JSON.parse(fs.readFileSync(gpt2File, 'utf8'));
  j.model.type = 'BPE';
  const v = j.model.vocab;
  const before = j.model.merges.length;
  j.model.merges = j.model.merges.filter(m => {
    const [a, b] = typeof m === 'string' ? m.split(' ') : m;
    return a in v && b in v && (a + b) in v;
  });
  const text = JSON.stringify(j);
  fs.writeFileSync(path.join(outDir, 'gpt2-tokenizer.fixed.json'), text);
  // A RoBERTa-like variant: ByteLevel add_prefix_space + Sequence[ByteLevel, RobertaProcessing]; servelab
  // loads this same file (written next to the golden file).
  j.pre_tokenizer.add_prefix_space = true;
  j.post_processor = { type: 'Sequence', processors: [
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    { type: 'RobertaProcessing', sep: ['<|endoftext|>', 50256], cls: ['<|endoftext|>', 50256], trim_offsets: true, add_prefix_space: true }] };
  fs.writeFileSync(path.join(outDir, 'gpt2_prefix_space.json'), JSON.stringify(j));
  return { text, dropped: before - j.model.merges.length };
}
const gpt2 = gpt2FixedJson();
const tokenizers = {
  deepseek: Tokenizer.fromString(deepseekJson(false)),
  deepseek_v32: Tokenizer.fromString(deepseekJson(true)),
  gpt2: Tokenizer.fromString(gpt2.text),
  gpt2_prefix_space: Tokenizer.fromFile(path.join(outDir, 'gpt2_prefix_space.json')),
};
for (const name of ['llama_style', 'mistral_style', 'metaspace_style']) {
  const f = path.join(fixturesDir, `${name}_tokenizer.json`);
  if (fs.existsSync(f)) tokenizers[name] = Tokenizer.fromFile(f);
}

// ---- texts ----
// Every string value of every real data file (every turn of every conversation, every question and
// answer), de-duplicated; tokenizer/model config files are not text data.
function collectStrings(v, out) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) collectStrings(x, out);
  else if (v && typeof v === 'object') for (const k of Object.keys(v)) collectStrings(v[k], out);
}
const dataTexts = [];
const seen = new Set();
const perFile = {};
for (const f of fs.readdirSync(dataDir).sort()) {
  if (f === 'gpt2-tokenizer.json' || f.includes('inference_config')) continue;
  if (!f.endsWith('.json') && !f.endsWith('.jsonl')) continue;
  const raw = fs.readFileSync(path.join(dataDir, f), 'utf8');
  const values = [];
  if (f.endsWith('.jsonl')) {
    raw.split('\n').forEach(line => { if (line.trim()) collectStrings(JSON.parse(line), values); });
  } else {
    collectStrings(JSON.parse(raw), values);
  }
  perFile[f] = values.length;
  values.forEach((t, i) => {
    if (seen.has(t)) return;
    seen.add(t);
    dataTexts.push({ name: `${f}#${i}`, text: t });
  });
}

// Adversarial texts (written here; no third-party text).
function lcg(seed) { let s = seed >>> 0; return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0); }
const adv = [];
const add = (name, text) => adv.push({ name, text });
const addHex = (name, hex) => adv.push({ name, hex });
add('empty', '');
for (let n = 1; n <= 12; n++) add(`spaces_${n}`, ' '.repeat(n));
for (let n = 1; n <= 6; n++) add(`space_run_word_${n}`, 'a' + ' '.repeat(n) + 'b' + ' '.repeat(n));
add('ws_mix', '\t\t  \n \n\n\n   x  \t y\u00a0\u00a0z\u3000\u3000end  ');
add('ws_unicode', 'a\u2000b\u2001c\u2002\u2003d\u205fe\u1680f\u180eg\u0085h\u2028i\u2029j\u200bk\ufeffl');
add('ws_only_newlines', '\n\n\n\n');
add('ws_trailing', 'trailing spaces   ');
add('ws_leading', '    leading spaces');
add('crlf_1', 'line1\r\nline2\r\n\r\n  \r\n\tx\r');
add('crlf_2', '\r\r\n\n\r a\r\n b\n\r c \r\n');
add('crlf_3', 'x:\r\n\r\n\r\n    y = 1\r\n    return y\r\n');
add('digits_1000', '1'.repeat(1000));
add('digits_mixed', '12345678901234567890 3.14159265358979 1,000,000 0x1F 1e-10 2024-01-01T12:00:00Z');
add('digits_unicode', '١٢٣٤٥٦٧ ①②③ Ⅻ ١٢٣ １２３４ ໑໒໓ 𝟏𝟐𝟑 ²³ ½');
add('digits_words', 'abc123def4567ghi 007 a1b2c3 v1.2.3-rc4');
add('cjk_zh', '你好，世界！这是一个测试句子，包含标点符号。我们来看看分词器如何处理它。');
add('cjk_ja', '日本語のテキストです。カタカナとひらがなを混ぜてみましょう：テスト、テスト。ｶﾀｶﾅ');
add('cjk_ko', '한국어 텍스트입니다. 토크나이저 테스트를 합니다!');
add('cjk_mixed', 'English中文日本語한국어mixed混合テキストtext123数字');
add('cjk_ext', '𠀀𠀁𪚥 龘 〇 ㈱ 々');
add('emoji_zwj', '👨‍👩‍👧‍👦 family 👩🏽‍💻 coder 🏳️‍🌈 flag 👍🏽 🇺🇸🇫🇷 emoji😀text🎉!');
add('emoji_run', '😀😃😄😁😆😅😂🤣☺️😊😇🙂🙃😉😌😍🥰😘');
add('emoji_keycap', '1️⃣ #️⃣ *️⃣ ❤️ ✔️ ©️ ™️');
add('combining', 'e\u0301 n\u0303 a\u0308\u0304 Zalgo: z\u0334\u0335\u0336a\u0337\u0338l\u0321\u0322g\u0327o\u0328');
add('combining_nfc_nfd', 'caf\u00e9 vs cafe\u0301; \u00c5ngstr\u00f6m vs A\u030angstro\u0308m');
add('scripts', 'हिन्दी क्षत्रिय العربية مرحبا עִבְרִית ภาษาไทย ελληνικά русский ქართული');
add('marks_alone', '\u0301\u0302 start with marks');
add('special_ds_1', '<｜begin▁of▁sentence｜>Hello<｜end▁of▁sentence｜>');
add('special_ds_2', 'User said: <｜User｜>hi<｜Assistant｜> and <｜tool▁calls▁begin｜>x<｜tool▁sep｜>');
add('special_ds_partial', '<｜User <｜User｜ ｜User｜> <｜begin▁of▁sentence|> <｜▁pad▁｜><｜▁pad▁｜>');
add('special_gpt2', 'a<|endoftext|>b <|endoftext|> <|endoftext|<|endoftext|>>');
add('special_think', '<think>reasoning</think>answer <think> </think>');
add('special_placeholder', '<｜place▁holder▁no▁798｜><｜place▁holder▁no▁799｜><|EOT|>');
add('flags_lstrip_rstrip', 'say  [INST]  hi  [/INST]  ok [INST][/INST] x\t[INST]\n');
add('flags_single_word', '<tool> a<tool> <tool>b (<tool>) _<tool> é<tool> <tool>1 <tool>');
add('ignore_merges_word', 'typhoon Typhoon typhoons the typhoon. TYPHOON tokenizer');
add('chat_think', '<｜begin▁of▁sentence｜>You are helpful.<｜User｜>What is 2+2?<｜Assistant｜><think>\nSimple sum.\n</think>\n\n4<｜end▁of▁sentence｜>');
add('flags_start_token', '[INST]hello world [/INST]');
add('flags_start_special', '<s>hello</s> <s> x');
add('flags_mask', 'the <mask> is  <mask>  here<mask>x');
add('flags_normalized_false', '▁ctrl ctrl▁ctrl x▁ctrl');
add('split_behaviors', 'well-known, semi;colon xx-xxl abcde-edcba 12-34 a,b;c');
add('byte_level_chars', 'ĠĊ Ġhello ▁hello Ã© Ċ');
add('contractions', "I'm you'll he'd we've they're it's 'S 'LL 'D O'Neil rock'n'roll ''");
add('code', 'def f(x):\n\tif x > 0:\n\t\treturn x ** 2  # square\n\treturn -x\n\nprint(f(3))\n');
add('code_json', '{"key": [1, 2.5, null, true], "nested": {"a": "b\\n"}}');
add('url', 'https://example.com/path?query=1&b=%20x#frag mailto:a@b.co');
add('punct_runs', '!!!??? ... --- *** ___ ((( ))) [[[ ]]] {{{ }}} """ \'\'\' ``` ~~~');
add('control', 'a\u0000b\u0001c\u0007d\u001be\u007ff');
add('astral', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕳𝖊𝖑𝖑𝖔 \u{10FFFF} \u{E000}\u{F8FF} \uFFFD\uFFFE');
add('ascii_all', Array.from({ length: 128 }, (_, i) => String.fromCharCode(i)).join(''));
add('latin1_all', Array.from({ length: 96 }, (_, i) => String.fromCharCode(160 + i)).join(''));
add('turkish_case', 'İSTANBUL ıi Iİ ß ẞ ΣΑΣ ﬁ ǅ');
add('fullwidth', 'ＡＢＣ　ｄｅｆ！？　１２３');
{
  const r = lcg(42);
  let w = '';
  for (let i = 0; i < 100000; i++) w += String.fromCharCode(97 + (r() % 26));
  add('word_100k_random', w);
  add('word_100k_a', 'a'.repeat(100000));
  let c = '';
  for (let i = 0; i < 33000; i++) c += String.fromCharCode(0x4e00 + (r() % 0x51a5));
  add('word_100k_cjk', c);
  add('spaces_100k', ' '.repeat(100000));
  add('digits_100k', '7'.repeat(100000));
}
addHex('invalid_ff', '61ff62');
addHex('invalid_overlong', 'c0afe080af');
addHex('invalid_surrogate', '41eda080eda0bd42');
addHex('invalid_above_max', 'f4908080f5');
addHex('invalid_truncated', 'e282 20 f09f98 20 f09f'.replace(/ /g, ''));
addHex('invalid_lone_continuation', '808182 48656c6c6f bf'.replace(/ /g, ''));
addHex('invalid_mixed', 'e4bda0e5a5bd ff e4b896 e7958c 0a c3'.replace(/ /g, ''));

// ---- encode ----
async function encodeAll(tok, texts, addSpecial) {
  const out = [];
  const batch = 256;
  for (let i = 0; i < texts.length; i += batch) {
    const encs = await tok.encodeBatch(texts.slice(i, i + batch), { addSpecialTokens: addSpecial });
    for (const e of encs) out.push(Array.from(e.getIds()));
  }
  return out;
}
async function decodeAll(tok, idss, skipSpecial) {
  const out = [];
  const batch = 256;
  for (let i = 0; i < idss.length; i += batch) out.push(...await tok.decodeBatch(idss.slice(i, i + batch), skipSpecial));
  return out;
}

(async () => {
  const t0 = Date.now();
  const cases = [];
  const textOf = c => c.hex !== undefined ? Buffer.from(c.hex, 'hex').toString('utf8') : c.text;
  async function run(list, names, kind) {
    const texts = list.map(textOf);
    const result = list.map((c, i) => Object.assign({ kind }, c, { ids: {}, ids_no_special: {}, decoded: {}, decoded_skip_special: {} },
                                                    c.hex !== undefined ? { text_utf8: texts[i] } : {}));
    for (const name of names) {
      const tok = tokenizers[name];
      if (!tok) continue;
      const ids = await encodeAll(tok, texts, true);
      // Without special tokens: every adversarial text; for data texts the ids differ from `ids` only by
      // the post-processor's tokens, which the adversarial set covers.
      const plain = kind === 'adversarial' ? await encodeAll(tok, texts, false) : ids;
      const dec = await decodeAll(tok, ids, false);
      const decSkip = await decodeAll(tok, ids, true);
      result.forEach((r, i) => {
        r.ids[name] = ids[i];
        // Stored only where it differs from `ids` (tokenizers without a BOS post-processor).
        if (JSON.stringify(plain[i]) !== JSON.stringify(ids[i])) r.ids_no_special[name] = plain[i];
        // The reference's decodes of `ids`; stored only where they are not the input text itself.
        if (dec[i] !== texts[i]) r.decoded[name] = dec[i];
        if (decSkip[i] !== texts[i]) r.decoded_skip_special[name] = decSkip[i];
      });
    }
    cases.push(...result);
  }
  await run(dataTexts, ['deepseek', 'gpt2'], 'data');
  // The synthetic sentencepiece-style fixtures also see a sample of real text (every 20th data text).
  await run(dataTexts.filter((_, i) => i % 20 === 0), ['llama_style', 'mistral_style', 'metaspace_style', 'gpt2_prefix_space'], 'data_sample');
  await run(adv, Object.keys(tokenizers), 'adversarial');
  const golden = {
    oracle: 'npm tokenizers ' + require(path.join(cacheDir, 'npm', 'node_modules', 'tokenizers', 'package.json')).version,
    files: { deepseek: dsFile, gpt2_original: gpt2File, gpt2_fixed_merges_dropped: gpt2.dropped },
    data_files: perFile,
    cases,
  };
  fs.writeFileSync(path.join(outDir, 'tokenizer_golden.json'), JSON.stringify(golden));
  const tokens = cases.reduce((a, c) => a + Object.values(c.ids).reduce((b, x) => b + x.length, 0), 0);
  writeStatus({ available: true, inputs: inputsHash, cases: cases.length, data_texts: dataTexts.length, adversarial: adv.length,
                tokens, seconds: (Date.now() - t0) / 1000 });
  console.log(`oracle: ${dataTexts.length} data texts + ${adv.length} adversarial, ${tokens} tokens, ${(Date.now() - t0) / 1000}s`);
})().catch(e => {
  writeStatus({ available: false, reason: 'oracle failed: ' + e.stack });
  console.error(e);
  process.exit(1);
});
