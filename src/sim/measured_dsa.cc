// servelab/sim: the DSA module tables (a DeepSeek Sparse Attention layer's whole attention block per engine
// release) read as the step model uses them: the rows of a checkpoint of the same attention, per cached
// prefix, without their fixed part's growth (measured_ops.h DsaModule, measured_dsa_module).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "sim/measured_ops.h"
#include "sim/op_memo.h"

namespace servelab::sim::detail {

std::pair<std::optional<std::size_t>, std::optional<std::size_t>> PrefixedSurfaces::around(
    double batch, double length, double cached) const {
  auto inside = [&](std::size_t i) {
    bool out = false;
    surface[i]->at(batch, length, &out);
    return !out;
  };
  const auto first_above =
      static_cast<std::size_t>(std::upper_bound(prefix.begin(), prefix.end(), cached) - prefix.begin());
  std::optional<std::size_t> lo, hi;
  for (std::size_t i = first_above; i-- > 0;)
    if (inside(i)) {
      lo = i;
      break;
    }
  if (lo && prefix[*lo] == cached) return {lo, lo};
  for (std::size_t i = first_above; i < prefix.size(); ++i)
    if (inside(i)) {
      hi = i;
      break;
    }
  return {lo, hi};
}

double PrefixedSurfaces::smallest() const {
  double t = std::numeric_limits<double>::infinity();
  for (const auto& s : surface) t = std::min(t, s->fixed_ms);
  return t;
}

namespace {

/// Whether checkpoint `id` (model::resolve_model, offline; memoised) has a layer whose attention is `a` at
/// hidden size `hidden`. False when its config cannot be found: a row of an unknown shape times nothing.
bool has_attention(const std::string& id, const model::MlaAttention& a, int hidden) {
  static std::mutex mu;
  static std::map<std::string, std::optional<model::ModelSpec>> specs;  // guarded by mu
  std::optional<model::ModelSpec> spec;
  bool known = false;
  {
    std::lock_guard lock(mu);
    if (auto it = specs.find(id); it != specs.end()) spec = it->second, known = true;
  }
  if (!known) {
    std::optional<model::ModelSpec> found;
    try {
      found = model::resolve_model(id);
    } catch (const std::exception&) {
    }
    std::lock_guard lock(mu);
    spec = specs.emplace(id, std::move(found)).first->second;
  }
  if (!spec) return false;
  if (spec->hidden_size != hidden) return false;
  return std::any_of(spec->layers.begin(), spec->layers.end(), [&](const model::LayerGroup& g) {
    const auto* m = std::get_if<model::MlaAttention>(&g.layer.attention);
    return m && *m == a;
  });
}

/// `s` without the batch sizes whose rows grow faster than the batch from the one before, compared at a
/// length both measured: a block's time is a fixed part plus work linear in its rows, so such a row was timed
/// another way (SGLang 0.5.14's DSA decode rows at 512 requests: 1.4 ms where 128 take 0.2, launched eagerly
/// past the CUDA-graph sizes [inference]; the step model counts eager launches apart).
OpSurface without_launch_mode_changes(const OpSurface& s) {
  OpSurface out;
  for (std::size_t i = 0; i < s.outer.size(); ++i) {
    if (i > 0) {
      // Compared at a length both batches measured (none: not compared).
      const ops::OpCurve &a = s.curves[i - 1], &b = s.curves[i];
      const double x = std::max(a.x.front(), b.x.front());
      if (x <= std::min(a.x.back(), b.x.back()) && b.at(x) > a.at(x) * s.outer[i] / s.outer[i - 1]) break;
    }
    out.outer.push_back(s.outer[i]);
    out.curves.push_back(s.curves[i]);
  }
  return out;
}

/// batch_surface of a DSA module table on the rows measured at the launch's heads: each batch's curve only
/// at the lengths whose lookup is not extrapolated (the batch sizes measured only at other head counts left
/// out: extrapolated along num_heads, the whole block would scale from the origin); dsa_grid continues a
/// curve past its last length along the smaller batch's rows, and past the largest batch left the block
/// scales with the batch (OpSurface::fixed_ms). Every batch when none was measured at these heads; null when
/// the table has no row.
std::shared_ptr<const OpSurface> dsa_batch_surface(const ops::OpTable& table, ops::OpQuery q,
                                                   const char* inner) {
  const auto all = batch_surface(table, q, inner);
  if (!all) return nullptr;
  auto own = std::make_shared<OpSurface>();
  for (std::size_t b = 0; b < all->outer.size(); ++b) {
    // Only the points measured at these heads and this batch (the grids are irregular: SGLang 0.5.14's
    // sparse prefill at a 1,536-token prefix starts at 1,024 tokens for one request, at 4 for four).
    q["batch_size"] = all->outer[b];
    const ops::OpCurve& c = all->curves[b];
    ops::OpCurve exact = c;
    exact.x.clear(), exact.y_ms.clear();
    for (std::size_t k = 0; k < c.x.size(); ++k) {
      q[inner] = c.x[k];
      const auto r = table.lookup(q);
      if (r.ok && !r.extrapolated) exact.x.push_back(c.x[k]), exact.y_ms.push_back(c.y_ms[k]);
    }
    if (!exact.x.empty()) own->outer.push_back(all->outer[b]), own->curves.push_back(std::move(exact));
  }
  return own->outer.empty() ? all : own;
}

/// The least latency (ms) any point of `s` measured: a DSA phase's fixed part (the smallest shape's time,
/// or below it where rows of neighbouring shapes scatter).
double least_latency(const OpSurface& s) {
  double t = std::numeric_limits<double>::infinity();
  for (const auto& c : s.curves)
    for (double y : c.y_ms) t = std::min(t, y);
  return t;
}

/// A DSA module surface as the step model reads it: `s` with its fixed part `fixed_ms` (the part that
/// grows with neither batch nor length) and each batch's curve continued past its last measured length along
/// the next smaller batch's, that batch's work (its latency less the fixed part) scaled by the two batches'
/// measured work ratio where this one's rows end: the grids stop short at large batches (SGLang 0.5.14
/// decode: 16,384 tokens of history at 16 requests, 4,096 at 32 and 64, 2,048 at 128), and OpAxis's scaling
/// from the origin would scale the fixed part with the length and miss the dense-to-sparse step at
/// index_topk. Lookups there are outside the grid (OpSurface::measured_end).
std::shared_ptr<const OpSurface> dsa_grid(OpSurface s, double fixed_ms) {
  s.fixed_ms = fixed_ms;
  s.measured_end.clear();
  for (const auto& c : s.curves) s.measured_end.push_back(c.x.back());
  for (std::size_t k = 1; k < s.curves.size(); ++k) {
    const ops::OpCurve& prev = s.curves[k - 1];
    ops::OpCurve& c = s.curves[k];
    // The work ratio where this batch's rows end (the rows' own, not the batch ratio: neighbouring batches'
    // work differs by 1.3-1.4x in SGLang 0.5.14's decode rows, not 2x).
    const double end = c.x.back();
    const double prev_work = prev.at(end) - fixed_ms, own_work = c.y_ms.back() - fixed_ms;
    const double ratio = prev_work > 0 && own_work > 0 ? own_work / prev_work : s.outer[k] / s.outer[k - 1];
    for (std::size_t j = 0; j < prev.x.size(); ++j) {
      if (prev.x[j] <= end) continue;
      const double y = fixed_ms + (prev.y_ms[j] - fixed_ms) * ratio;
      c.x.push_back(prev.x[j]);
      c.y_ms.push_back(std::max(y, c.y_ms.back()));
    }
  }
  return std::make_shared<const OpSurface>(std::move(s));
}

/// Which rows of a DSA module table a surface takes.
enum class DsaPath { kDecode, kSparsePrefill, kDensePrefill };

/// The kernel_source label of `path` for a layer that runs its indexer (`indexer`) or reuses the previous
/// layer's selection, among `labels` (see measured_dsa_module); empty when none fits.
std::string dsa_label(std::vector<std::string> labels, DsaPath path, bool indexer) {
  std::sort(labels.begin(), labels.end());
  for (const auto& l : labels) {
    const bool dense = l.find("dense_mha") != std::string::npos;
    const bool skip = l.find("skip_indexer") != std::string::npos;
    if (path == DsaPath::kDensePrefill ? dense : !dense && skip != indexer) return l;
  }
  return {};
}

/// The rows of `model` on `path` narrowed to the layer's kernel, dtypes, TP and heads, with its label in
/// `*kernel`; nullopt when none.
std::optional<ops::OpQuery> dsa_query(const ops::OpTable& table, const DsaModuleShape& shape,
                                      const std::string& model, DsaPath path, std::string* kernel) {
  ops::OpQuery q{{"model", model},
                 {"kv_cache_dtype", std::string(measured_kv_dtype(shape.kv_dtype))},
                 {"gemm_type", std::string(shape.gemm_dtype)}};
  if (path == DsaPath::kDecode) q["isl"] = 1.0;
  const std::string label = dsa_label(table.distinct("kernel_source", q), path, shape.attention.indexer);
  if (label.empty()) return std::nullopt;
  q["kernel_source"] = label;
  // A label whose rows come under both modules (SGLang 0.5.14 on B300: GLM-5.2-NVFP4's dense-MHA prefill as
  // dsa_context_module and as dsa_context_module_skip_indexer) is read under the layer's own: an op_name
  // left open made every such lookup ambiguous, and its short prompts took the sparse rows (B300 TTFT 1.36x
  // B200's). A label under one module only is read there, whichever the layer's.
  const auto op_names = table.distinct("op_name", q);
  const std::string module = table.table().substr(0, table.table().rfind("_perf")) +
                             (shape.attention.indexer ? "" : "_skip_indexer");
  if (op_names.size() > 1 && std::find(op_names.begin(), op_names.end(), module) != op_names.end())
    q["op_name"] = module;
  // Rows keyed by the attention TP they emulate, else one rank's heads timed as tp_size 1.
  const auto tps = table.distinct("tp_size", q);
  if (std::find(tps.begin(), tps.end(), std::to_string(shape.tp)) != tps.end())
    q["tp_size"] = double(shape.tp);
  else if (tps.size() == 1 && tps.front() == "1")
    q["tp_size"] = 1.0;
  else if (!tps.empty())
    return std::nullopt;
  q["num_heads"] = shape.heads;
  *kernel = label;
  return q;
}

/// The decode surface of the DSA block (dsa_grid; its fixed part the least time its rows measured), or null;
/// null with the reason in `*left_out` when no batch's rows reach a KV history of index_topk: below it the
/// block attends to every cached token, past it to index_topk of them while the indexer scans the whole
/// history, so rows of short histories cannot be continued into the sparse regime (OpSurface scaling from
/// the origin would grow their fixed part with the history too).
std::shared_ptr<const OpSurface> dsa_decode(const ops::OpTable& table, const DsaModuleShape& shape,
                                            const std::string& model, std::string* kernel,
                                            std::string* left_out) {
  const auto q = dsa_query(table, shape, model, DsaPath::kDecode, kernel);
  const auto measured = q ? dsa_batch_surface(table, *q, "step") : nullptr;
  if (!measured) {
    kernel->clear();
    return nullptr;
  }
  double longest = 0;
  for (const auto& c : measured->curves) longest = std::max(longest, c.x.back());
  if (longest < shape.attention.index_topk) {
    *left_out = fmt::format(
        "decode from the roofline (the decode rows of {} end at a KV history of {:.0f} tokens, below "
        "index_topk {}: they say nothing of the sparse regime)",
        model, longest, shape.attention.index_topk);
    kernel->clear();
    return nullptr;
  }
  OpSurface s = without_launch_mode_changes(*measured);
  const double fixed = least_latency(s);
  return dsa_grid(std::move(s), fixed);
}

/// The prefill surfaces of the DSA block on `path`, one per measured cached prefix (dsa_grid each; each
/// prefix's fixed part the least time its own rows measured).
PrefixedSurfaces dsa_prefill(const ops::OpTable& table, const DsaModuleShape& shape, const std::string& model,
                             DsaPath path, std::string* kernel) {
  PrefixedSurfaces out;
  auto q = dsa_query(table, shape, model, path, kernel);
  if (!q) return out;
  std::vector<double> prefixes;
  for (const auto& v : table.distinct("step", *q)) prefixes.push_back(std::stod(v));
  std::sort(prefixes.begin(), prefixes.end());
  for (double p : prefixes) {
    (*q)["step"] = p;
    const auto m = dsa_batch_surface(table, *q, "isl");
    if (!m) continue;
    OpSurface s = without_launch_mode_changes(*m);
    // A prefix measured at one shape (SGLang 0.5.14 from 155,648 tokens on) cannot tell fixed part from work.
    if (s.curves.size() == 1 && s.curves.front().x.size() < 2) continue;
    const double fixed = least_latency(s);  // each prefix its own: its rows' floors differ (0.85-1.45 ms)
    out.prefix.push_back(p);
    out.surface.push_back(dsa_grid(std::move(s), fixed));
  }
  if (out.empty()) kernel->clear();
  return out;
}

}  // namespace

std::shared_ptr<const DsaModule> measured_dsa_module(const ops::OpStore& store, const OpSource& src,
                                                     const DsaModuleShape& shape) {
  if (shape.attention.index_topk <= 0 || !shape.gemm_dtype || shape.heads <= 0) return nullptr;
  const char* names[2] = {"dsa_generation_module_perf", "dsa_context_module_perf"};
  std::shared_ptr<const ops::OpTable> tables[2];
  std::string key = src.gpu + "|" + src.backend + "|" + shape.model_id + "|" + number_key(shape.heads) + "|" +
                    std::to_string(shape.tp) + "|" + measured_kv_dtype(shape.kv_dtype) + "|" +
                    shape.gemm_dtype + "|" + std::to_string(shape.hidden) + "|" +
                    std::to_string(shape.attention.indexer);
  for (int i = 0; i < 2; ++i) {
    const std::string release = table_release(store, src, names[i]);
    key += "|" + release;
    if (!release.empty()) tables[i] = store.table(src.gpu, src.backend, release, names[i]);
  }
  const auto& a = shape.attention;
  key +=
      fmt::format("|{},{},{},{},{},{},{},{},{}", a.heads, a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim,
                  a.qk_rope_head_dim, a.v_head_dim, a.index_topk, a.index_heads, a.index_head_dim);
  static Memo<DsaModule> memo;
  return memo.get(key, [&]() -> std::shared_ptr<const DsaModule> {
    // Checkpoints with rows, the launch's own first: the first whose attention is the layer's.
    std::vector<std::string> models;
    for (const auto& t : tables)
      if (t)
        for (const auto& m : t->distinct("model", {}))
          if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    std::sort(models.begin(), models.end());
    std::stable_partition(models.begin(), models.end(),
                          [&](const std::string& m) { return m == shape.model_id; });
    for (const auto& m : models) {
      if (!has_attention(m, shape.attention, shape.hidden)) continue;
      auto out = std::make_shared<DsaModule>();
      out->model = m;
      if (tables[0])
        out->decode = dsa_decode(*tables[0], shape, m, &out->decode_kernel, &out->decode_left_out);
      if (tables[1]) {
        out->prefill = dsa_prefill(*tables[1], shape, m, DsaPath::kSparsePrefill, &out->prefill_kernel);
        out->prefill_dense = dsa_prefill(*tables[1], shape, m, DsaPath::kDensePrefill, &out->dense_kernel);
      }
      // A checkpoint with no row of the layer's own kernel (only the dense-MHA prefill every layer shares)
      // does not stand for it.
      if (out->decode || !out->prefill.empty()) return out;
    }
    return nullptr;
  });
}

}  // namespace servelab::sim::detail
