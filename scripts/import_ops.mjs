#!/usr/bin/env node
// Imports an AIConfigurator `systems/data` tree of measured operator tables (parquet) into servelab's op
// store: one sorted, column-wise binary file per table and an index.json, which the C++ memory-maps
// (src/ops/op_store.cc). Parquet is read with the npm packages hyparquet + hyparquet-compressors (ZSTD),
// never with a parser of our own.
//
//   node scripts/import_ops.mjs SRC_DATA_DIR OUT_DIR
//
// SRC_DATA_DIR: `<gpu>/<family>/<backend>/<version>/<table>_perf.parquet` (+ reuse.yaml), e.g.
// $SERVELAB_DATA_DIR/aic-ops/data. A table beside a reuse.yaml naming a donor release for it holds the rows
// that release measured anew; it is imported with the donor's other rows (mergeDonor), and index.json says
// so (inherited_from, inherited_rows). A reuse.yaml without a table of its own is followed by the reader. OUT_DIR is replaced atomically (written beside it, then renamed).
// hyparquet is found in make deps' npm cache (see npmDir).
//
// File format (little-endian), version 1:
//   bytes 0-7    magic "SLOPS01\n"
//   bytes 8-11   uint32 length H of the JSON header that follows
//   H bytes      header: table, gpu, family, backend, version, framework, device, rows, keys (exact-match
//                columns in sort order), axes (interpolation columns in sort order, after the keys), value
//                (the latency column, ms, or null), columns: [{name, type: "dict"|"i32"|"f32"|"f64", dict?: [...]}]
//   padding to a multiple of 8, then each column in `columns` order, each padded to 8 bytes: "dict" as
//   uint16 indices into its (sorted) dictionary, "i32" as int32, "f32" as float32 (the latency), "f64".
// Rows are sorted by keys then axes, so a lookup narrows the keys by binary search and walks the axes.
// Columns constant over a file (framework, version, device) go to the header; power and power_limit
// (W, on newer tables) are not imported.
import { readdirSync, statSync, readFileSync, writeFileSync, mkdirSync, rmSync, renameSync, existsSync } from 'fs'
import { join, dirname, relative } from 'path'
import { homedir } from 'os'
import { createRequire } from 'module'
import { pathToFileURL } from 'url'

// hyparquet lives in make deps' npm cache ($SERVELAB_NPM_DIR, else $SERVELAB_CACHE_DIR/npm, else
// $XDG_CACHE_HOME/servelab/npm or ~/.cache/servelab/npm); ES modules ignore NODE_PATH, so resolve by hand.
function npmDir() {
  if (process.env.SERVELAB_NPM_DIR) return process.env.SERVELAB_NPM_DIR
  const cache = process.env.SERVELAB_CACHE_DIR ||
    join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'servelab')
  return join(cache, 'npm')
}
async function load(pkg) {
  const dir = npmDir()
  let file
  try {
    file = createRequire(join(dir, 'package.json')).resolve(pkg)
  } catch {
    throw new Error(`import_ops: npm package ${pkg} not found under ${dir}/node_modules (run make deps)`)
  }
  return import(pathToFileURL(file).href)
}
const { parquetMetadataAsync, parquetRead, asyncBufferFromFile } = await load('hyparquet')
const { compressors } = await load('hyparquet-compressors')

export const FORMAT = 1
const HEADER_COLUMNS = ['framework', 'version', 'device']
const DROPPED = new Set(['power', 'power_limit'])

// Per table: the exact-match key columns (those absent from a file are skipped) and the interpolation
// axes with how to interpolate between and extrapolate beyond measured points (read by the C++ lookup):
//   space "linear" (latency linear in the axis) or "sqrt" (sqrt(latency) linear: AIConfigurator's rule
//   along prefill length); exponent p: beyond the largest measured value latency scales as (q/max)^p.
const ATTN_KEYS = ['op_name', 'kernel_source', 'attn_dtype', 'kv_cache_dtype', 'head_dim', 'window_size',
  'beam_width', 'num_key_value_heads']
const MLA_KEYS = ['op_name', 'kernel_source', 'mla_dtype', 'kv_cache_dtype', 'tp_size']
export const SPECS = {
  gemm_perf: { keys: ['op_name', 'kernel_source', 'gemm_dtype'],
    axes: [['n', 'linear', 1], ['k', 'linear', 1], ['m', 'linear', 1]] },
  context_attention_perf: { keys: [...ATTN_KEYS, 'step'],
    axes: [['num_heads', 'linear', 1], ['batch_size', 'linear', 1], ['isl', 'sqrt', 2]] },
  generation_attention_perf: { keys: [...ATTN_KEYS, 'isl'],
    axes: [['num_heads', 'linear', 1], ['batch_size', 'linear', 1], ['step', 'linear', 1]] },
  context_mla_perf: { keys: [...MLA_KEYS, 'step'],
    axes: [['num_heads', 'linear', 1], ['batch_size', 'linear', 1], ['isl', 'sqrt', 2]] },
  generation_mla_perf: { keys: [...MLA_KEYS, 'isl'],
    axes: [['num_heads', 'linear', 1], ['batch_size', 'linear', 1], ['step', 'linear', 1]] },
  mla_bmm_perf: { keys: ['op_name', 'kernel_source', 'bmm_dtype', 'num_heads'],
    axes: [['num_tokens', 'linear', 1]] },
  moe_perf: { keys: ['op_name', 'kernel_source', 'moe_dtype', 'distribution', 'hidden_size', 'inter_size',
    'topk', 'num_experts', 'moe_tp_size', 'moe_ep_size'], axes: [['num_tokens', 'linear', 1]] },
  nccl_perf: { keys: ['op_name', 'kernel_source', 'nccl_dtype', 'num_gpus'],
    axes: [['message_size', 'linear', 1]] },
  custom_allreduce_perf: { keys: ['op_name', 'kernel_source', 'allreduce_dtype', 'backend', 'implementation',
    'num_gpus'], axes: [['message_size', 'linear', 1]] },
  // Gated DeltaNet (linear attention): each kernel of a layer (chunked prefill, causal conv, recurrent decode,
  // conv-state update) per phase. The rows are model shapes (Qwen3.5 0.8B-397B, some at TP2: 8 key / 32 value
  // heads); the kernels do not read the model's hidden size, so `model_name`, `d_model` and the derived
  // `num_tokens` are dropped: rows of equal heads and lengths average. The key and value heads are axes
  // (attention TP slices them).
  gdn_perf: { keys: ['op_name', 'kernel_source', 'phase', 'head_k_dim', 'head_v_dim', 'd_conv'],
    axes: [['num_k_heads', 'linear', 1], ['num_v_heads', 'linear', 1], ['batch_size', 'linear', 1],
      ['seq_len', 'linear', 1]],
    drop: ['model_name', 'd_model', 'num_tokens'] },
}

// Module-level tables (a model's whole attention block: MLA, DSA, ...): the model, its architecture and the
// parallel layout are keys; batch and lengths are axes, as for the attention kernels.
const MODULE_KEYS = ['op_name', 'kernel_source', 'model', 'architecture', 'mla_dtype', 'kv_cache_dtype',
  'gemm_type', 'tp_size', 'compress_ratio', 'local_num_heads']

/** The spec of `table`: SPECS, or by name for the module tables (`*_context_module_perf`, ...). */
export function specOf(table) {
  if (SPECS[table]) return SPECS[table]
  if (table.endsWith('context_module_perf')) {
    return { keys: [...MODULE_KEYS, 'step'],
      axes: [['num_heads', 'linear', 1], ['batch_size', 'linear', 1], ['isl', 'sqrt', 2]] }
  }
  if (table.endsWith('generation_module_perf')) {
    return { keys: [...MODULE_KEYS, 'isl'],
      axes: [['num_heads', 'linear', 1], ['batch_size', 'linear', 1], ['step', 'linear', 1]] }
  }
  return null
}

function walk(dir, out = []) {
  for (const e of readdirSync(dir).sort()) {
    const p = join(dir, e)
    if (statSync(p).isDirectory()) walk(p, out)
    else out.push(p)
  }
  return out
}

/** The reuse declarations of a version directory's reuse.yaml: [{table, from_version}] (a tiny reader of
 *  the flat list AIConfigurator writes; anything else in the file is ignored). */
function readReuse(file) {
  const out = []
  let cur = null
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const t = line.match(/^\s*-?\s*table:\s*(\S+)/)
    if (t) { cur = { table: t[1] }; out.push(cur); continue }
    const v = line.match(/^\s*from_version:\s*['"]?([^'"\s]+)/)
    if (v && cur) cur.from_version = v[1]
  }
  return out.filter(r => r.from_version)
}

/** Every column of a parquet file as one array per column (hyparquet's onChunk: no row objects). */
async function readColumns(buf, names) {
  const cols = Object.fromEntries(names.map(n => [n, []]))
  await parquetRead({ file: buf, compressors, onChunk: ({ columnName, columnData, rowStart }) => {
    const dst = cols[columnName]
    for (let i = 0; i < columnData.length; i++) dst[rowStart + i] = columnData[i]
  } })
  return cols
}

const num = v => (typeof v === 'bigint' ? Number(v) : v)

/** How a column is stored: "dict" (strings), "i32" (integers that fit), "f32" (the latency value: float32
 *  keeps 7 significant digits, far inside the tables' run-to-run noise), else "f64". */
function columnType(name, data, value) {
  if (!data.every(v => v === null || v === undefined || typeof v === 'number' || typeof v === 'bigint')) return 'dict'
  if (name === value) return 'f32'
  if (data.every(v => { const x = num(v); return Number.isInteger(x) && x >= -2147483648 && x <= 2147483647 })) return 'i32'
  return 'f64'
}

/** A parquet file's columns: { names, raw: name -> values, nrows }. */
async function readTable(file) {
  const buf = await asyncBufferFromFile(file)
  const meta = await parquetMetadataAsync(buf)
  const names = meta.schema.slice(1).map(s => s.name)
  const raw = await readColumns(buf, names)
  const nrows = Number(meta.num_rows)
  for (const n of names) {
    if (raw[n].length !== nrows) throw new Error(`column ${n}: ${raw[n].length} values for ${nrows} rows`)
  }
  return { names, raw, nrows }
}

/** `own` with the rows of `donor` it has none of: a release directory holding its own table and a reuse.yaml
 *  naming a donor release for the same table measured only what changed (the manifest's
 *  "within_framework_dedup_rows") and inherits the rest, its own rows winning (AIConfigurator's resolver,
 *  perf_data_reuse_manifest.yaml). Own wins by group: a donor row is inherited only when the release measured
 *  no row of its group, the table's exact-match keys (SPECS) but MERGE_OPEN's, so that
 *  two collectors' names of one kernel (vLLM 0.22.0's BF16 GEMM rows as vllm_default, 0.24.0's as
 *  torch.nn.functional.linear)
 *  never meet in a group, where every lookup would be ambiguous. A table without a spec compares whole rows
 *  (every shared column but the latency, the dropped and the per-file ones). Columns only one table has are
 *  null in the other's rows. */
// Key columns a twin lookup leaves open or tries in turn (the kernel's and operator's names; MoE's routing
// distribution: power_law_1.01, then balanced): a group spans their values, so the release's own rows of a
// shape under any of them keep the donor's out.
const MERGE_OPEN = new Set(['op_name', 'kernel_source', 'distribution'])

export function mergeDonor(own, donor, table) {
  const names = [...own.names, ...donor.names.filter(n => !own.names.includes(n))]
  const spec = specOf(table)
  const both = n => own.names.includes(n) && donor.names.includes(n)
  const group = spec
    ? spec.keys.filter(n => both(n) && !MERGE_OPEN.has(n))
    : own.names.filter(n => both(n) && n !== 'latency' && !DROPPED.has(n) && !HEADER_COLUMNS.includes(n))
  const key = (t, i) => JSON.stringify(group.map(c => num(t.raw[c][i]) ?? null))
  const have = new Set()
  for (let i = 0; i < own.nrows; i++) have.add(key(own, i))
  const take = []
  for (let i = 0; i < donor.nrows; i++) if (!have.has(key(donor, i))) take.push(i)
  const raw = {}
  for (const n of names) {
    const a = own.raw[n] ?? new Array(own.nrows).fill(null)
    raw[n] = a.concat(take.map(i => (donor.raw[n] ? donor.raw[n][i] : null)))
  }
  return { names, raw, nrows: own.nrows + take.length, inherited: take.length }
}

async function importTable(loaded, parts) {
  const { names, raw, nrows } = loaded
  const table = parts.table
  const header = { table, gpu: parts.gpu, family: parts.family, backend: parts.backend, version: parts.version,
    framework: null, device: null, rows: nrows }
  // framework, version and device are constant over a file: they go to the header (a column that is not
  // constant is stored as a column, see below). The directory's version names the release; the file's own
  // is kept too.
  const varying = new Set()
  for (const c of HEADER_COLUMNS) {
    if (!names.includes(c)) continue
    const vals = new Set(raw[c].map(v => String(num(v))))
    if (vals.size > 1) varying.add(c)
    else if (vals.size === 1) header[c === 'version' ? 'measured_version' : c] = [...vals][0]
  }
  const spec = specOf(table)
  const dropped = new Set([...DROPPED, ...(spec?.drop ?? [])])
  const uniq = names.filter(c => !dropped.has(c) && (!HEADER_COLUMNS.includes(c) || varying.has(c)))
  const value = uniq.includes('latency') ? 'latency' : null
  let keys, axes
  if (spec) {
    keys = spec.keys.filter(c => uniq.includes(c))
    axes = spec.axes.filter(([c]) => uniq.includes(c)).map(([name, space, exponent]) => ({ name, space, exponent }))
    // Columns the spec does not name stay exact-match keys, after the spec's.
    for (const c of uniq) {
      if (c !== value && !varying.has(c) && !keys.includes(c) && !axes.some(a => a.name === c)) keys.push(c)
    }
  } else {
    keys = uniq.filter(c => c !== value && !varying.has(c))
    axes = []
  }
  // A framework / version / device column that varies inside one release directory records re-runs of the
  // collector (h200 vLLM 0.19.0's decode attention holds rows of 0.19.0 and 0.19.1): stored, but not a
  // key, so the lookup averages the runs of one point like any duplicate rows.
  // Encoded cells: dictionary index for strings (dictionary sorted, so index order is text order), else
  // the number (NaN for a missing value).
  const columns = []
  const enc = {}
  for (const c of uniq) {
    const type = columnType(c, raw[c], value)
    const col = { name: c, type }
    if (type === 'dict') {
      const text = raw[c].map(v => String(num(v) ?? ''))
      col.dict = [...new Set(text)].sort()
      if (col.dict.length > 65535) throw new Error(`column ${c} has ${col.dict.length} distinct values (max 65535)`)
      const at = new Map(col.dict.map((t, i) => [t, i]))
      enc[c] = Float64Array.from(text, t => at.get(t))
    } else {
      enc[c] = Float64Array.from(raw[c], v => (v === null || v === undefined ? NaN : Number(num(v))))
    }
    columns.push(col)
  }
  const order = [...keys, ...axes.map(a => a.name)].map(c => enc[c])
  const idx = Int32Array.from({ length: nrows }, (_, i) => i)
  idx.sort((a, b) => {
    for (const col of order) { const x = col[a], y = col[b]; if (x !== y) return x < y ? -1 : 1 }
    return a - b
  })
  Object.assign(header, { keys, axes, value, columns })
  const json = Buffer.from(JSON.stringify(header), 'utf8')
  const pad8 = n => (n + 7) & ~7
  const width = { dict: 2, i32: 4, f32: 4, f64: 8 }
  let size = pad8(12 + json.length)
  for (const c of columns) size += pad8(width[c.type] * nrows)
  const out = Buffer.alloc(size)
  out.write('SLOPS01\n', 0, 'latin1')
  out.writeUInt32LE(json.length, 8)
  json.copy(out, 12)
  let off = pad8(12 + json.length)
  for (const c of columns) {
    const src = enc[c.name]
    const w = width[c.type]
    const dst = c.type === 'dict' ? new Uint16Array(nrows) : c.type === 'i32' ? new Int32Array(nrows)
      : c.type === 'f32' ? new Float32Array(nrows) : new Float64Array(nrows)
    for (let i = 0; i < nrows; i++) dst[i] = src[idx[i]]
    Buffer.from(dst.buffer).copy(out, off)
    off += pad8(w * nrows)
  }
  return { header, bytes: out }
}

async function main() {
  const [src, outDir] = process.argv.slice(2)
  if (!src || !outDir) {
    console.error('usage: node scripts/import_ops.mjs SRC_DATA_DIR OUT_DIR')
    process.exit(2)
  }
  if (!existsSync(src) || !statSync(src).isDirectory()) {
    console.error(`import_ops: ${src}: not a directory (expected an AIConfigurator systems/data tree)`)
    process.exit(1)
  }
  const tmp = `${outDir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  const index = { format: FORMAT, source: src, tables: [], reuse: [] }
  let rowsTotal = 0
  const files = walk(src)
  // Every reuse declaration first: a table imported with its own rows also inherits its donor's (mergeDonor).
  const donorOf = new Map()  // "gpu/family/backend/version/table" -> donor version
  for (const file of files) {
    const rel = relative(src, file).split('/')
    if (rel.length !== 5 || rel[4] !== 'reuse.yaml') continue
    const [gpu, family, backend, version] = rel
    for (const r of readReuse(file)) {
      index.reuse.push({ gpu, family, backend, version, table: r.table, from_version: r.from_version })
      donorOf.set([gpu, family, backend, version, r.table].join('/'), r.from_version)
    }
  }
  // A release's table with its donors' rows (a donor may declare its own; bounded, no cycles).
  async function load(gpu, family, backend, version, table, depth = 0) {
    const file = join(src, gpu, family, backend, version, `${table}.parquet`)
    const own = existsSync(file) ? await readTable(file) : null
    const donor = donorOf.get([gpu, family, backend, version, table].join('/'))
    if (!donor || depth >= 8) return own
    const inherited = await load(gpu, family, backend, donor, table, depth + 1)
    if (!own || !inherited) return own ?? inherited
    const merged = mergeDonor(own, inherited, table)
    merged.donor = donor
    return merged
  }
  for (const file of files) {
    const rel = relative(src, file).split('/')
    if (rel.length !== 5) continue
    const [gpu, family, backend, version, name] = rel
    if (!name.endsWith('.parquet')) continue
    const table = name.replace(/\.parquet$/, '')
    let imported, loaded
    try {
      loaded = await load(gpu, family, backend, version, table)
      imported = await importTable(loaded, { gpu, family, backend, version, table })
    } catch (e) {
      throw new Error(`import_ops: ${file}: ${e.message}`)
    }
    const path = join(gpu, family, backend, version, `${table}.ops`)
    mkdirSync(dirname(join(tmp, path)), { recursive: true })
    writeFileSync(join(tmp, path), imported.bytes)
    const entry = { gpu, family, backend, version, table, rows: imported.header.rows, device: imported.header.device, path }
    if (loaded.donor) Object.assign(entry, { inherited_from: loaded.donor, inherited_rows: loaded.inherited })
    index.tables.push(entry)
    rowsTotal += imported.header.rows
  }
  writeFileSync(join(tmp, 'index.json'), JSON.stringify(index, null, 1))
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(dirname(outDir), { recursive: true })
  renameSync(tmp, outDir)
  console.log(`import_ops: ${index.tables.length} tables, ${rowsTotal} rows, ${index.reuse.length} reuse declarations -> ${outDir}`)
}

main().catch(e => { console.error(e.message); process.exit(1) })
