// Parsing of STUDY.toml with toml++ (errors carry the TOML path and line): one reader per section, in the
// order parse_study calls them (a later section may refer to an earlier one: knobs name engines, the
// objective names scenarios, the search names knobs). [load], [slo], [cost] and [[objectives]] are in
// load_parse.cc.
#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "servelab/common/printable.h"
#include "servelab/common/redact.h"
#include "servelab/engines/engine_module.h"
#include "servelab/hardware/hardware.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/study/study.h"
#include "tune/study/load_parse.h"
#include "tune/study/study_checks.h"
#include "tune/study/toml_guard.h"

namespace servelab::tune {

namespace {

/// Error context: origin file plus the TOML path being read.
struct Ctx {
  std::string origin;
  [[noreturn]] void fail(const toml::node* node, const std::string& path, const std::string& msg) const {
    int line = node ? static_cast<int>(node->source().begin.line) : 0;
    // Keys and values come from the file: bounded and escaped (a key may hold ESC, NUL or 50,000 bytes).
    const std::string p = common::printable(path, 200), m = common::printable(msg, 2000);
    if (line > 0) throw StudyError(fmt::format("{}:{}: {}: {}", origin, line, p, m));
    throw StudyError(fmt::format("{}: {}: {}", origin, p, m));
  }
  /// detail::fail_unknown_key, the key's path and the allowed list bounded and escaped as in fail().
  [[noreturn]] void fail_unknown_key(const toml::node* node, const std::string& path,
                                     const std::string& allowed) const {
    detail::fail_unknown_key(origin, node, common::printable(path, 200), common::printable(allowed, 2000));
  }
};

std::string scalar_text(const toml::node& n) {
  if (auto s = n.value<std::string>(); s && n.is_string()) return *s;
  if (n.is_integer()) return std::to_string(*n.value<int64_t>());
  if (n.is_floating_point()) return fmt::format("{}", *n.value<double>());
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  return "";
}

const toml::table* sub_table(const Ctx& c, const toml::table& t, const std::string& key,
                             const std::string& path, bool required) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) c.fail(&t, path, fmt::format("missing table [{}]", key));
    return nullptr;
  }
  if (!n->is_table()) c.fail(n, path + "." + key, "must be a table");
  return n->as_table();
}

std::string get_string(const Ctx& c, const toml::table& t, const std::string& key, const std::string& path,
                       std::optional<std::string> fallback) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (!fallback) c.fail(&t, path, fmt::format("missing key '{}'", key));
    return *fallback;
  }
  if (!n->is_string()) c.fail(n, path + "." + key, "must be a string");
  return *n->value<std::string>();
}

/// An inclusive range a number key must fall in (checked at load, so a bad value never reaches a launch).
struct Range {
  double lo, hi;
  bool lo_open = false;  ///< lo itself is excluded ("> 0" rather than "≥ 0")
};

std::string range_text(const Range& r) {
  if (r.lo_open) return fmt::format("> {} and ≤ {}", r.lo, r.hi);
  return fmt::format("in {}..{}", r.lo, r.hi);
}

double get_number(const Ctx& c, const toml::table& t, const std::string& key, const std::string& path,
                  double fallback, std::optional<Range> range = std::nullopt) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_number()) c.fail(n, path + "." + key, "must be a number");
  const double v = *n->value<double>();
  if (!std::isfinite(v)) c.fail(n, path + "." + key, "must be a finite number");
  if (range && (v < range->lo || v > range->hi || (range->lo_open && v == range->lo)))
    c.fail(n, path + "." + key, fmt::format("{} is out of range (must be {})", v, range_text(*range)));
  return v;
}

int get_int(const Ctx& c, const toml::table& t, const std::string& key, const std::string& path, int fallback,
            std::optional<Range> range = std::nullopt) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_integer()) c.fail(n, path + "." + key, "must be an integer");
  const int64_t v = *n->value<int64_t>();
  const Range r =
      range.value_or(Range{double(std::numeric_limits<int>::min()), double(std::numeric_limits<int>::max())});
  if (double(v) < r.lo || double(v) > r.hi || (r.lo_open && double(v) == r.lo))
    c.fail(n, path + "." + key, fmt::format("{} is out of range (must be {})", v, range_text(r)));
  return static_cast<int>(v);
}

bool get_bool(const Ctx& c, const toml::table& t, const std::string& key, const std::string& path,
              bool fallback) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_boolean()) c.fail(n, path + "." + key, "must be true or false");
  return *n->value<bool>();
}

std::vector<std::string> get_strings(const Ctx& c, const toml::table& t, const std::string& key,
                                     const std::string& path) {
  std::vector<std::string> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  if (!n->is_array()) c.fail(n, path + "." + key, "must be an array of strings");
  size_t i = 0;
  for (const auto& e : *n->as_array()) {
    if (!e.is_string() && !e.is_number())
      c.fail(&e, fmt::format("{}.{}[{}]", path, key, i), "must be a string");
    out.push_back(scalar_text(e));
    ++i;
  }
  return out;
}

std::map<std::string, std::string> get_string_map(const Ctx& c, const toml::table& t, const std::string& key,
                                                  const std::string& path) {
  std::map<std::string, std::string> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  if (!n->is_table()) c.fail(n, path + "." + key, "must be a table of strings");
  for (const auto& [k, v] : *n->as_table()) {
    if (!v.is_string() && !v.is_number() && !v.is_boolean())
      c.fail(&v, path + "." + key + "." + std::string(k.str()), "must be a string");
    out[std::string(k.str())] = scalar_text(v);
  }
  return out;
}

void check_keys(const Ctx& c, const toml::table& t, const std::string& path, std::set<std::string> allowed) {
  for (const auto& [k, v] : t) {
    if (!allowed.count(std::string(k.str()))) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      c.fail_unknown_key(&v, path.empty() ? std::string(k.str()) : path + "." + std::string(k.str()), list);
    }
  }
}

/// `{name}` placeholders in a text (JSON braces such as `{"method": ...}` are not placeholders).
std::vector<std::string> placeholders(const std::string& text) {
  static const std::regex kPlaceholder(R"(\{([A-Za-z_][A-Za-z0-9_]*)\})");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPlaceholder); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

/// Rejects a placeholder that nothing defines (e.g. `{tpp}` for `{tp}`): it would reach the engine verbatim.
void check_placeholders(const Ctx& c, const toml::node& n, const std::string& path,
                        const std::set<std::string>& defined) {
  const auto check_text = [&](const toml::node& e, const std::string& p) {
    if (!e.is_string()) return;
    for (const auto& name : placeholders(*e.value<std::string>())) {
      if (defined.count(name)) continue;
      std::string list;
      for (const auto& d : defined) list += (list.empty() ? "{" : ", {") + d + "}";
      c.fail(
          &e, p,
          fmt::format("undefined placeholder {{{}}} (defined here: {})", name, list.empty() ? "none" : list));
    }
  };
  if (const auto* a = n.as_array()) {
    for (size_t i = 0; i < a->size(); ++i) check_text(*a->get(i), fmt::format("{}[{}]", path, i));
  } else if (const auto* t = n.as_table()) {
    for (const auto& [k, v] : *t) check_text(v, path + "." + std::string(k.str()));
  } else {
    check_text(n, path);
  }
}

/// Checks the placeholders of `t[key]` (if present) against `defined`.
void check_key_placeholders(const Ctx& c, const toml::table& t, const std::string& key,
                            const std::string& path, const std::set<std::string>& defined) {
  if (const toml::node* n = t.get(key)) check_placeholders(c, *n, path + "." + key, defined);
}

const std::set<std::string> kStudyPlaceholders = {"model", "port", "host"};
const std::set<std::string> kScenarioPlaceholders = {"data_dir"};

std::string substitute(std::string s, const std::string& key, const std::string& value) {
  const std::string pat = "{" + key + "}";
  for (size_t pos = s.find(pat); pos != std::string::npos; pos = s.find(pat, pos + value.size()))
    s.replace(pos, pat.size(), value);
  return s;
}

KnobType parse_knob_type(const Ctx& c, const toml::table& t, const std::string& path) {
  std::string s = get_string(c, t, "type", path, std::string("string"));
  if (s == "layout") return KnobType::kLayout;
  if (s == "int") return KnobType::kInt;
  if (s == "float") return KnobType::kFloat;
  if (s == "string") return KnobType::kString;
  if (s == "bool") return KnobType::kBool;
  c.fail(t.get("type"), path + ".type", "unknown knob type '" + s + "' (layout, int, float, string, bool)");
}

bool type_matches(KnobType type, const toml::node& n) {
  switch (type) {
    case KnobType::kInt:
      return n.is_integer();
    case KnobType::kFloat:
      return n.is_number();
    case KnobType::kString:
      return n.is_string();
    case KnobType::kBool:
      return n.is_boolean();
    case KnobType::kLayout:
      return false;
  }
  return false;
}

KnobValue parse_value(const Ctx& c, const Knob& knob, const toml::node& n, const std::string& path) {
  KnobValue v;
  if (n.is_string() && *n.value<std::string>() == "default") {
    v.label = "default";
    v.is_default = true;
    return v;
  }
  if (knob.type == KnobType::kLayout) {
    if (!n.is_table()) c.fail(&n, path, "a layout value must be a table like {tp = 8, dp = 1, ep = 1}");
    const auto& t = *n.as_table();
    check_keys(c, t, path, {"label", "tp", "dp", "ep", "dp_attention", "dcp", "pp"});
    const Range ways{1, 4096};
    int tp = get_int(c, t, "tp", path, 1, ways), dp = get_int(c, t, "dp", path, 1, ways);
    int ep = get_int(c, t, "ep", path, 1, ways), dcp = get_int(c, t, "dcp", path, 1, ways);
    int pp = get_int(c, t, "pp", path, 1, ways);
    bool dpa = get_bool(c, t, "dp_attention", path, false);
    for (auto [name, x] : {std::pair{"tp", tp}, {"dp", dp}, {"ep", ep}, {"dcp", dcp}, {"pp", pp}})
      if (x < 1) c.fail(&n, path + "." + name, "must be ≥ 1");
    v.fields = {{"tp", std::to_string(tp)}, {"dp", std::to_string(dp)},
                {"ep", std::to_string(ep)}, {"dcp", std::to_string(dcp)},
                {"pp", std::to_string(pp)}, {"dp_attention", dpa ? "true" : "false"}};
    std::string label = fmt::format("tp{}", tp);
    if (dp > 1) label += fmt::format("-dp{}", dp);
    if (ep > 1) label += fmt::format("-ep{}", ep);
    if (pp > 1) label += fmt::format("-pp{}", pp);
    if (dcp > 1) label += fmt::format("-dcp{}", dcp);
    if (dpa) label += "-dpattn";
    v.label = get_string(c, t, "label", path, label);
    return v;
  }
  if (n.is_table()) {
    const auto& t = *n.as_table();
    const toml::node* value = t.get("value");
    if (!value) c.fail(&n, path, "a value table needs a 'value' key");
    if (!type_matches(knob.type, *value))
      c.fail(value, path + ".value", "value has the wrong type for this knob");
    for (const auto& [k, f] : t)
      if (k.str() != "label") v.fields[std::string(k.str())] = scalar_text(f);
    v.label = get_string(c, t, "label", path, scalar_text(*value));
    return v;
  }
  if (!type_matches(knob.type, n)) c.fail(&n, path, "value has the wrong type for this knob");
  v.fields["value"] = scalar_text(n);
  v.label = scalar_text(n);
  return v;
}

std::vector<RenderPart> parse_render(const Ctx& c, const toml::node& n, const std::string& path,
                                     const std::set<std::string>& defined,
                                     const std::vector<KnobValue>& values) {
  std::vector<RenderPart> parts;
  std::vector<std::pair<const toml::node*, std::string>> when_nodes;  // each part's `when` and its key
  auto one = [&](const toml::node& p, const std::string& pp) {
    if (!p.is_table()) c.fail(&p, pp, "a rendering part must be a table {when, flags, env, reject}");
    const auto& t = *p.as_table();
    check_keys(c, t, pp, {"when", "flags", "env", "reject"});
    RenderPart r;
    r.when = get_string(c, t, "when", pp, std::string());
    r.flags = get_strings(c, t, "flags", pp);
    r.env = get_string_map(c, t, "env", pp);
    r.reject = get_string(c, t, "reject", pp, std::string());
    when_nodes.push_back({t.get("when"), pp + ".when"});
    check_key_placeholders(c, t, "flags", pp, defined);
    check_key_placeholders(c, t, "env", pp, defined);
    parts.push_back(std::move(r));
  };
  if (n.is_array()) {
    size_t i = 0;
    for (const auto& p : *n.as_array()) one(p, fmt::format("{}[{}]", path, i++));
  } else {
    one(n, path);
  }
  // Every condition now, not when the search reaches a value (study_checks.h).
  if (auto e = detail::check_conditions(parts, values))
    c.fail(when_nodes[e->part].first, when_nodes[e->part].second, e->message);
  return parts;
}

/// [hardware] nodes / gpus_per_node against gpu_count (study.h Hardware): any two give the third; gpu_count
/// alone splits as the twin's COUNTxGPU (hardware::parse_cluster), one node for a GPU the twin lacks.
void read_hardware_nodes(const Ctx& c, const toml::table& t, Hardware& h) {
  const bool count = t.contains("gpu_count"), nodes = t.contains("nodes"), per = t.contains("gpus_per_node");
  h.nodes = get_int(c, t, "nodes", "hardware", 1, Range{1, 1024});
  h.gpus_per_node = get_int(c, t, "gpus_per_node", "hardware", 8, Range{1, 1024});
  if (!nodes && !per) {
    try {
      const hardware::ClusterSpec cl = hardware::parse_cluster(fmt::format("{}x{}", h.gpu_count, h.gpu));
      h.nodes = cl.nodes, h.gpus_per_node = cl.gpus_per_node;
    } catch (const std::invalid_argument&) {
      h.nodes = 1, h.gpus_per_node = h.gpu_count;
    }
    return;
  }
  if (count && (!nodes || !per)) {
    const int given = nodes ? h.nodes : h.gpus_per_node;
    if (h.gpu_count % given != 0)
      c.fail(t.get(nodes ? "nodes" : "gpus_per_node"), nodes ? "hardware.nodes" : "hardware.gpus_per_node",
             fmt::format("{} does not divide gpu_count = {}", given, h.gpu_count));
    (nodes ? h.gpus_per_node : h.nodes) = h.gpu_count / given;
  }
  if (count && h.gpu_count != h.nodes * h.gpus_per_node)
    c.fail(t.get("gpu_count"), "hardware.gpu_count",
           fmt::format("{} is not nodes x gpus_per_node = {} x {}", h.gpu_count, h.nodes, h.gpus_per_node));
  h.gpu_count = h.nodes * h.gpus_per_node;
}

/// [k8s] (tune/k8s_spec.h); images are checked against the engines when manifests are rendered.
void read_k8s(const Ctx& c, const toml::table& t, K8sSpec& k) {
  check_keys(c, t, "k8s",
             {"namespace", "bench_image", "images", "gpu_resource", "results_claim", "model_cache_claim",
              "shm_gb", "credentials_secret", "rendezvous_port"});
  k.ns = get_string(c, t, "namespace", "k8s", k.ns);
  k.bench_image = get_string(c, t, "bench_image", "k8s", k.bench_image);
  k.images = get_string_map(c, t, "images", "k8s");
  k.gpu_resource = get_string(c, t, "gpu_resource", "k8s", k.gpu_resource);
  k.results_claim = get_string(c, t, "results_claim", "k8s", k.results_claim);
  k.model_cache_claim = get_string(c, t, "model_cache_claim", "k8s", k.model_cache_claim);
  k.shm_gb = get_int(c, t, "shm_gb", "k8s", k.shm_gb, Range{1, 4096});
  k.credentials_secret = get_string(c, t, "credentials_secret", "k8s", k.credentials_secret);
  k.rendezvous_port = get_int(c, t, "rendezvous_port", "k8s", k.rendezvous_port, Range{1, 65535});
}

/// Fails at `key` of `t` unless `id` is an identifier of at most `max_size` characters (study_checks.h):
/// `what` names the kind ("an engine name"), `use` what it is for.
void require_identifier(const Ctx& c, const toml::table& t, const char* key, const std::string& path,
                        const std::string& id, const char* what, std::size_t max_size, const char* use) {
  if (detail::is_identifier(id, max_size)) return;
  c.fail(
      t.get(key), path,
      fmt::format("\"{}\" is not {}: 1 to {} letters, digits, '.', '_' or '-', starting with a letter or "
                  "digit ({})",
                  id.size() > 60 ? id.substr(0, 60) + "..." : id, what, max_size, use));  // fail() escapes it
}

/// [study]: name, goal, target, repeats and the host/port engines serve on.
void read_study_section(const Ctx& c, const toml::table& root, Study& s) {
  const toml::table* st = sub_table(c, root, "study", "study", true);
  check_keys(c, *st, "study", {"name", "goal", "target", "repeats", "host", "port"});
  s.name = get_string(c, *st, "name", "study", std::nullopt);
  // It names the output directory (out/<name>), the store and the k8s objects: one safe path component.
  require_identifier(c, *st, "name", "study.name", s.name, "a study name", 128,
                     "it names the output directory out/<name>");
  s.goal = get_string(c, *st, "goal", "study", std::string());
  std::string target = get_string(c, *st, "target", "study", std::string("twin"));
  if (target == "twin")
    s.target = Target::kTwin;
  else if (target == "local")
    s.target = Target::kLocal;
  else if (target == "slurm")
    s.target = Target::kSlurm;
  else
    c.fail(
        st->get("target"), "study.target",
        "must be \"twin\", \"local\" or \"slurm\", got \"" + target +
            "\" (Kubernetes is not a run target: `servelab tune STUDY --target k8s --render DIR` writes one "
            "manifest per trial)");
  s.repeats = get_int(c, *st, "repeats", "study", 1, Range{1, 100});
  s.host = get_string(c, *st, "host", "study", std::string("127.0.0.1"));
  if (s.host.empty() || s.host.find_first_of(" /") != std::string::npos)
    c.fail(st->get("host"), "study.host", "must be a host name or address (e.g. \"127.0.0.1\")");
  s.port = get_int(c, *st, "port", "study", 8000, Range{1, 65535});
}

/// [hardware] gpu_memory_gb: the GPU table's memory (hardware::GpuSpec::memory_bytes, as nvidia-smi reports
/// it) is the one source. A study may still give the key (older studies wrote the datasheet's figure): it
/// must agree with the table within 1.5 %, read as GB (10^9 bytes) or as GiB (the H200 datasheet's "141 GB"
/// is 143771 MiB = 140.4 GiB = 150.8 GB), else it is an error naming both values. Required for a GPU the
/// table lacks.
void read_gpu_memory(const Ctx& c, const toml::table& t, Hardware& h) {
  const toml::node* given = t.get("gpu_memory_gb");
  const double study_gb =
      given ? get_number(c, t, "gpu_memory_gb", "hardware", 0.0, Range{0, 10000, true}) : 0.0;
  const hardware::GpuSpec* gpu = nullptr;
  try {
    gpu = &hardware::gpu_by_name(h.gpu);
  } catch (const std::invalid_argument& e) {
    if (!given)
      c.fail(
          t.get("gpu"), "hardware.gpu",
          fmt::format("{}; for a GPU the table lacks, give hardware.gpu_memory_gb (GB per GPU)", e.what()));
    h.gpu_memory_gb = study_gb;
    return;
  }
  h.gpu_memory_gb = gpu->memory_bytes / 1e9;
  const double gib = gpu->memory_bytes / 1073741824.0;
  const auto near = [study_gb](double v) { return std::abs(study_gb - v) <= 0.015 * v; };
  if (given && !near(h.gpu_memory_gb) && !near(gib))
    c.fail(given, "hardware.gpu_memory_gb",
           fmt::format(
               "{:g} contradicts the GPU table: {} has {:.0f} MiB = {:.1f} GB = {:.1f} GiB (src/hardware); "
               "remove the key (the table is the one source) or fix hardware.gpu",
               study_gb, gpu->name, gpu->memory_bytes / 1048576.0, h.gpu_memory_gb, gib));
}

/// [hardware] (required): the GPU, how many, on how many nodes, memory per GPU (GB) and interconnect.
void read_hardware(const Ctx& c, const toml::table& ht, Hardware& h) {
  check_keys(c, ht, "hardware",
             {"gpu", "gpu_count", "gpu_memory_gb", "interconnect", "nodes", "gpus_per_node"});
  h.gpu = get_string(c, ht, "gpu", "hardware", std::nullopt);
  h.gpu_count = get_int(c, ht, "gpu_count", "hardware", h.gpu_count, Range{1, 4096});
  read_hardware_nodes(c, ht, h);
  read_gpu_memory(c, ht, h);
  h.interconnect = get_string(c, ht, "interconnect", "hardware", h.interconnect);
}

/// [slurm] (tune/study.h SlurmSpec): partition, account, GRES, GPUs per trial and node, time limit (min),
/// sbatch options. Defaults of the per-trial GPU counts come from `hw`.
void read_slurm(const Ctx& c, const toml::table& lt, const Hardware& hw, SlurmSpec& sl) {
  check_keys(c, lt, "slurm",
             {"partition", "account", "qos", "gres_name", "gpus_per_trial", "gpus_per_node", "time_limit_min",
              "max_parallel", "setup", "sbatch_args", "servelab", "poll_interval_s", "requeue"});
  sl.configured = true;
  sl.partition = get_string(c, lt, "partition", "slurm", sl.partition);
  sl.account = get_string(c, lt, "account", "slurm", sl.account);
  sl.qos = get_string(c, lt, "qos", "slurm", sl.qos);
  sl.gres_name = get_string(c, lt, "gres_name", "slurm", sl.gres_name);
  if (sl.gres_name.empty() || sl.gres_name.find_first_of(" :,") != std::string::npos)
    c.fail(lt.get("gres_name"), "slurm.gres_name", "must be a GRES name such as \"gpu\"");
  sl.gpus_per_trial = get_int(c, lt, "gpus_per_trial", "slurm", hw.gpu_count, Range{1, 4096});
  sl.gpus_per_trial_given = lt.contains("gpus_per_trial");
  sl.gpus_per_node =
      get_int(c, lt, "gpus_per_node", "slurm", std::min(hw.gpus_per_node, sl.gpus_per_trial), Range{1, 64});
  if (sl.gpus_per_trial > sl.gpus_per_node && sl.gpus_per_trial % sl.gpus_per_node != 0)
    c.fail(lt.get("gpus_per_trial"), "slurm.gpus_per_trial",
           fmt::format("{} GPUs do not fill whole nodes of {} (slurm.gpus_per_node)", sl.gpus_per_trial,
                       sl.gpus_per_node));
  // A week is the longest any cluster we know allows; more is a typing mistake.
  sl.time_limit_min = get_number(c, lt, "time_limit_min", "slurm", sl.time_limit_min, Range{0, 10080, true});
  sl.max_parallel = get_int(c, lt, "max_parallel", "slurm", sl.max_parallel, Range{1, 1000});
  sl.setup = get_strings(c, lt, "setup", "slurm");
  sl.sbatch_args = get_strings(c, lt, "sbatch_args", "slurm");
  for (size_t i = 0; i < sl.sbatch_args.size(); ++i)
    if (sl.sbatch_args[i].rfind("-", 0) != 0 || sl.sbatch_args[i].find('\n') != std::string::npos)
      c.fail(lt.get("sbatch_args"), fmt::format("slurm.sbatch_args[{}]", i),
             "must be one sbatch option starting with '-' (e.g. \"--constraint=h100\")");
  sl.servelab = get_string(c, lt, "servelab", "slurm", sl.servelab);
  sl.poll_interval_s =
      get_number(c, lt, "poll_interval_s", "slurm", sl.poll_interval_s, Range{0, 3600, true});
  sl.requeue = get_bool(c, lt, "requeue", "slurm", sl.requeue);
}

/// [bench]: arguments every scenario's bench run gets, and the warm-up run's ({data_dir} substituted).
void read_bench(const Ctx& c, const toml::table& bt, const std::string& data_dir, Study& s) {
  check_keys(c, bt, "bench", {"common_args", "warmup_args"});
  s.bench_common_args = get_strings(c, bt, "common_args", "bench");
  if (const toml::node* an = bt.get("common_args"))
    s.bench_common_args_origin = fmt::format("{}:{}: bench.common_args", c.origin, an->source().begin.line);
  s.warmup_args = get_strings(c, bt, "warmup_args", "bench");
  check_key_placeholders(c, bt, "common_args", "bench", {});
  check_key_placeholders(c, bt, "warmup_args", "bench", kScenarioPlaceholders);
  for (auto& a : s.warmup_args) a = substitute(a, "data_dir", data_dir);
}

/// One [[engines]] table at TOML path `p`: kind, version, launch command template, ready check, stop grace.
EngineSpec read_engine(const Ctx& c, const toml::table& t, const std::string& p) {
  check_keys(c, t, p,
             {"name", "kind", "version", "command", "base_flags", "env", "ready_paths", "ready_timeout_s",
              "stop_grace_s", "check_flags"});
  EngineSpec spec;
  spec.name = get_string(c, t, "name", p, std::nullopt);
  require_identifier(c, t, "name", p + ".name", spec.name, "an engine name", 64,
                     "it keys the study's trials and names the engine in reports");
  const auto kind = engines::engine_kind_from_name(get_string(c, t, "kind", p, spec.name));
  if (!kind) {
    std::string names;
    for (const auto& m : engines::engine_modules()) names += std::string(names.empty() ? "" : ", ") + m.name;
    c.fail(t.get("kind"), p + ".kind", "must name a registered engine (" + names + ")");
  }
  spec.kind = *kind;
  spec.version = get_string(c, t, "version", p, std::nullopt);
  spec.command = get_strings(c, t, "command", p);
  if (spec.command.empty()) c.fail(&t, p + ".command", "missing launch command template (array of strings)");
  spec.base_flags = get_strings(c, t, "base_flags", p);
  spec.env = get_string_map(c, t, "env", p);
  if (t.get("ready_paths")) spec.ready_paths = get_strings(c, t, "ready_paths", p);
  // A start-up budget beyond a day and a grace period beyond an hour are typing mistakes, not settings.
  spec.ready_timeout_s = get_number(c, t, "ready_timeout_s", p, spec.ready_timeout_s, Range{0, 86400, true});
  spec.stop_grace_s = get_number(c, t, "stop_grace_s", p, spec.stop_grace_s, Range{0, 3600});
  spec.check_flags = get_bool(c, t, "check_flags", p, spec.check_flags);
  for (const char* key : {"command", "base_flags", "env"})
    check_key_placeholders(c, t, key, p, kStudyPlaceholders);
  for (size_t i = 0; i < spec.ready_paths.size(); ++i)
    if (spec.ready_paths[i].empty() || spec.ready_paths[i][0] != '/')
      c.fail(t.get("ready_paths"), fmt::format("{}.ready_paths[{}]", p, i),
             "must be an HTTP path starting with '/' (e.g. \"/health\")");
  return spec;
}

/// [[engines]] (at least one, names unique).
void read_engines(const Ctx& c, const toml::table& root, Study& s) {
  const toml::node* en = root.get("engines");
  if (!en || !en->is_array_of_tables()) c.fail(en, "engines", "needs at least one [[engines]] table");
  size_t ei = 0;
  for (const auto& e : *en->as_array()) {
    const std::string p = fmt::format("engines[{}]", ei++);
    const auto& t = *e.as_table();
    EngineSpec spec = read_engine(c, t, p);
    for (const auto& other : s.engines)
      if (other.name == spec.name) c.fail(&t, p + ".name", "duplicate engine name '" + spec.name + "'");
    s.engines.push_back(std::move(spec));
  }
}

/// A knob's `render` table: per engine of `engines`, the flags its values become.
void read_knob_render(const Ctx& c, const toml::table& rt, const std::string& p,
                      const std::vector<EngineSpec>& engines, Knob& knob) {
  for (const auto& [engine, parts] : rt) {
    std::string en_name(engine.str());
    if (std::none_of(engines.begin(), engines.end(),
                     [&](const EngineSpec& es) { return es.name == en_name; }))
      c.fail(&parts, p + ".render." + en_name, "no engine named '" + en_name + "'");
    std::set<std::string> defined = kStudyPlaceholders;
    for (const auto& v : knob.values)
      for (const auto& [field, text] : v.fields) defined.insert(field);
    if (knob.type == KnobType::kLayout)
      defined.insert({"tp", "dp", "ep", "dcp", "pp", "dp_attention"});
    else
      defined.insert("value");  // a knob's own value, even when it lists only "default" (which renders none)
    knob.render[en_name] = parse_render(c, parts, p + ".render." + en_name, defined, knob.values);
    knob.render_origin[en_name] =
        fmt::format("{}:{}: {}.render.{}", c.origin, parts.source().begin.line, p, en_name);
  }
}

/// True when a knob's [knobs.render] (not yet parsed) puts a value into a credential: a credential-named flag
/// followed by an item with a placeholder (`["--api-key", "{value}"]`), `--api-key={value}`, or a
/// credential-named environment variable set from a placeholder. Such a knob is secret whatever its name.
bool renders_credential(const toml::table& knob) {
  const toml::table* rt = knob.get_as<toml::table>("render");
  if (!rt) return false;
  auto placeholder = [](const toml::node* n) {
    const auto* v = n ? n->as_string() : nullptr;
    return v && v->get().find('{') != std::string::npos;
  };
  auto flag_name = [](std::string f) {
    f = f.substr(0, f.find('='));
    return f.size() > 1 && f[0] == '-' ? f.substr(f.find_first_not_of('-')) : std::string();
  };
  for (const auto& [engine, parts] : *rt) {
    const toml::array* list = parts.as_array();
    if (!list) continue;
    for (const auto& part : *list) {
      const toml::table* pt = part.as_table();
      if (!pt) continue;
      if (const toml::array* flags = pt->get_as<toml::array>("flags"))
        for (std::size_t i = 0; i < flags->size(); ++i) {
          const auto* f = (*flags)[i].as_string();
          if (!f) continue;
          const std::string name = flag_name(f->get());
          if (name.empty() || !common::is_credential_name(name)) continue;
          if (f->get().find('=') != std::string::npos
                  ? placeholder(&(*flags)[i])
                  : i + 1 < flags->size() && placeholder(flags->get(i + 1)))
            return true;
        }
      if (const toml::table* env = pt->get_as<toml::table>("env"))
        for (const auto& [k, v] : *env)
          if (common::is_credential_name(std::string(k.str())) && placeholder(&v)) return true;
    }
  }
  return false;
}

/// The `ki`-th [[knobs]] table: type, values (labels unique), baseline, per-engine render.
Knob read_knob(const Ctx& c, const toml::table& t, size_t ki, const std::vector<EngineSpec>& engines) {
  Knob knob;
  knob.name = get_string(c, t, "name", fmt::format("knobs[{}]", ki), std::nullopt);
  require_identifier(c, t, "name", fmt::format("knobs[{}].name", ki), knob.name, "a knob name", 64,
                     "it keys the study's trials: vllm{name=value}");
  const std::string p = fmt::format("knobs[{}] ({})", ki, knob.name);
  check_keys(c, t, p, {"name", "type", "description", "values", "baseline", "render", "lower_saves_memory"});
  knob.type = parse_knob_type(c, t, p);
  knob.lower_saves_memory = get_bool(c, t, "lower_saves_memory", p, false);
  if (knob.lower_saves_memory && knob.type != KnobType::kInt && knob.type != KnobType::kFloat)
    c.fail(t.get("lower_saves_memory"), p + ".lower_saves_memory", "applies to int and float knobs only");
  knob.description = get_string(c, t, "description", p, std::string());
  const toml::node* vn = t.get("values");
  if (!vn || !vn->is_array() || vn->as_array()->empty())
    c.fail(vn ? vn : &t, p + ".values", "needs a non-empty array of values");
  // A credential-named knob (api_key, hf_token), or one that renders into a credential flag or variable,
  // shows no value: its labels are "<redacted-N>" (N from 1 in file order) and its values are kept for
  // rendering only (Knob::secret_values).
  const bool secret = common::is_credential_name(knob.name) || renders_credential(t);
  std::vector<std::string> written;  // labels as written, for `baseline`
  size_t vi = 0;
  for (const auto& v : *vn->as_array()) {
    KnobValue kv = parse_value(c, knob, v, fmt::format("{}.values[{}]", p, vi++));
    written.push_back(kv.label);
    if (secret && !kv.is_default) {
      if (auto f = kv.fields.find("value"); f != kv.fields.end())
        knob.secret_values.push_back({f->second, fmt::format("<redacted-{}>", vi)});
      kv.label = fmt::format("<redacted-{}>", vi);
    }
    // Duplicates found through the index (a pairwise scan took seconds at 30,000 values).
    if (!knob.value_index.emplace(kv.label, knob.values.size()).second)
      c.fail(&v, p + ".values", "duplicate value label '" + kv.label + "'");
    knob.values.push_back(std::move(kv));
  }
  // A scalar baseline of an int, float or bool knob is its value's label (`baseline = 256` as the docs write
  // it, not only "256"); a string knob's, and a layout's label, stay strings.
  const toml::node* b = t.get("baseline");
  knob.baseline =
      b && (b->is_integer() || b->is_floating_point() || b->is_boolean()) && type_matches(knob.type, *b)
          ? scalar_text(*b)
          : get_string(c, t, "baseline", p, knob.values.front().label);
  for (size_t i = 0; secret && i < written.size(); ++i)
    if (written[i] == knob.baseline) knob.baseline = knob.values[i].label;
  // A scalar baseline may name a labelled value by its value ({label = "off", value = 0}, baseline = 0).
  if (b && !b->is_string() && !knob.value_index.count(knob.baseline))
    for (const auto& v : knob.values)
      if (auto f = v.fields.find("value"); f != v.fields.end() && f->second == knob.baseline) {
        knob.baseline = v.label;
        break;
      }
  if (!knob.value_index.count(knob.baseline))
    c.fail(t.get("baseline"), p + ".baseline", "names no value of this knob: '" + knob.baseline + "'");
  if (const toml::table* rt = sub_table(c, t, "render", p, false)) read_knob_render(c, *rt, p, engines, knob);
  return knob;
}

/// [[knobs]] (optional, names unique); needs the engines read first (render tables name them).
void read_knobs(const Ctx& c, const toml::table& root, Study& s) {
  const toml::node* kn = root.get("knobs");
  if (!kn) return;
  if (!kn->is_array_of_tables()) c.fail(kn, "knobs", "knobs must be [[knobs]] tables");
  size_t ki = 0;
  for (const auto& k : *kn->as_array()) {
    const auto& t = *k.as_table();
    Knob knob = read_knob(c, t, ki, s.engines);
    const std::string p = fmt::format("knobs[{}] ({})", ki++, knob.name);
    for (const auto& o : s.knobs)
      if (o.name == knob.name) c.fail(&t, p + ".name", "duplicate knob '" + knob.name + "'");
    s.knobs.push_back(std::move(knob));
  }
}

/// [[scenarios]] (at least one, ids unique and without '@'): bench arguments ({data_dir} substituted),
/// weight, load points.
void read_scenarios(const Ctx& c, const toml::table& root, const std::string& data_dir, Study& s) {
  const toml::node* sn = root.get("scenarios");
  if (!sn || !sn->is_array_of_tables()) c.fail(sn, "scenarios", "needs at least one [[scenarios]] table");
  size_t si = 0;
  for (const auto& e : *sn->as_array()) {
    const std::string p = fmt::format("scenarios[{}]", si++);
    const auto& t = *e.as_table();
    check_keys(c, t, p, {"id", "description", "args", "weight", "load"});
    Scenario sc;
    sc.id = get_string(c, t, "id", p, std::nullopt);
    sc.description = get_string(c, t, "description", p, std::string());
    sc.args = get_strings(c, t, "args", p);
    if (const toml::node* an = t.get("args"))
      sc.args_origin = fmt::format("{}:{}: {}.args", c.origin, an->source().begin.line, p);
    check_key_placeholders(c, t, "args", p, kScenarioPlaceholders);
    for (auto& a : sc.args) a = substitute(a, "data_dir", data_dir);
    sc.weight = get_number(c, t, "weight", p, 1.0, Range{0, 1e6, true});
    if (sc.id.find('@') != std::string::npos)  // '@' marks a load point in trial keys ("sharegpt@c16")
      c.fail(t.get("id"), p + ".id", "must not contain '@' (it marks a load point: sharegpt@c16)");
    require_identifier(c, t, "id", p + ".id", sc.id, "a scenario id", 64,
                       "it keys the study's trials and names the scenario in reports");
    sc.load = detail::parse_load_table(t, "load", p, c.origin);
    for (const auto& o : s.scenarios)
      if (o.id == sc.id) c.fail(&t, p + ".id", "duplicate scenario id '" + sc.id + "'");
    s.scenarios.push_back(std::move(sc));
  }
}

/// [objective] (optional): kind, metric, SLOs (ms) and the scenarios it is computed on. Default: throughput
/// of the first scenario.
void read_objective(const Ctx& c, const toml::table& root, Study& s) {
  s.objective.scenarios = {s.scenarios.front().id};
  const toml::table* ot = sub_table(c, root, "objective", "objective", false);
  if (!ot) return;
  check_keys(c, *ot, "objective", {"kind", "metric", "slo_ms", "scenarios"});
  std::string kind = get_string(c, *ot, "kind", "objective", std::string("throughput"));
  if (kind == "throughput")
    s.objective.kind = Objective::Kind::kThroughput;
  else if (kind == "goodput")
    s.objective.kind = Objective::Kind::kGoodput;
  else if (kind == "geomean")
    s.objective.kind = Objective::Kind::kGeomean;
  else
    c.fail(ot->get("kind"), "objective.kind", "must be throughput, goodput or geomean");
  const std::string metric = get_string(c, *ot, "metric", "objective", std::string("total_token_throughput"));
  try {
    s.objective.metric = metric_label(metric);
  } catch (const StudyError& e) {
    c.fail(ot->get("metric"), "objective.metric", e.what());
  }
  // tune maximises its objective: a latency (ms, lower is better) there would pick the slowest launch.
  if (s.objective.kind != Objective::Kind::kGoodput && s.objective.metric.find("(ms)") != std::string::npos)
    c.fail(ot->get("metric"), "objective.metric",
           "'" + metric +
               "' is a latency (ms, lower is better) and tune maximises its objective, so it would pick "
               "the slowest launch: bound it instead ([[constraints]] {metric = \"" +
               metric +
               "\", max = ...}) beside a throughput objective, use kind = \"goodput\" with slo_ms, or "
               "evaluate it with [[objectives]] kind = \"min_latency\" after a throughput objective");
  if (s.objective.kind == Objective::Kind::kGoodput) s.objective.metric = "Request goodput (req/s)";
  if (const toml::table* slo = sub_table(c, *ot, "slo_ms", "objective", false)) {
    for (const auto& [key, node] : *slo) {
      const std::string k(key.str());
      if (k != "ttft" && k != "tpot" && k != "e2el")
        c.fail(&node, "objective.slo_ms." + k, "SLO must be ttft, tpot or e2el");
      s.objective.slo_ms[k] = get_number(c, *slo, k, "objective.slo_ms", 0, Range{0, 1e9, true});
    }
  }
  if (s.objective.kind == Objective::Kind::kGoodput && s.objective.slo_ms.empty())
    c.fail(ot, "objective.slo_ms", "goodput needs at least one SLO, e.g. slo_ms = { ttft = 20000 }");
  if (ot->get("scenarios")) s.objective.scenarios = get_strings(c, *ot, "scenarios", "objective");
  if (s.objective.kind == Objective::Kind::kGeomean && !ot->get("scenarios")) {
    s.objective.scenarios.clear();
    for (const auto& sc : s.scenarios) s.objective.scenarios.push_back(sc.id);
  }
  for (const auto& id : s.objective.scenarios)
    if (std::none_of(s.scenarios.begin(), s.scenarios.end(), [&](const Scenario& x) { return x.id == id; }))
      c.fail(ot->get("scenarios"), "objective.scenarios", "no scenario with id '" + id + "'");
  if (s.objective.scenarios.empty()) c.fail(ot, "objective.scenarios", "must name at least one scenario");
}

/// [[constraints]] (optional): a metric with a min and/or max a feasible config must meet.
void read_constraints(const Ctx& c, const toml::table& root, Study& s) {
  const toml::node* cn = root.get("constraints");
  if (!cn) return;
  if (!cn->is_array_of_tables()) c.fail(cn, "constraints", "must be [[constraints]] tables");
  size_t ci = 0;
  for (const auto& e : *cn->as_array()) {
    const std::string p = fmt::format("constraints[{}]", ci++);
    const auto& t = *e.as_table();
    check_keys(c, t, p, {"metric", "min", "max"});
    Constraint k;
    const std::string metric = get_string(c, t, "metric", p, std::nullopt);
    try {
      k.metric = metric_label(metric);
    } catch (const StudyError& err) {
      c.fail(t.get("metric"), p + ".metric", err.what());
    }
    if (t.get("min")) k.min = get_number(c, t, "min", p, 0);
    if (t.get("max")) k.max = get_number(c, t, "max", p, 0);
    if (!k.min && !k.max) c.fail(&t, p, "a constraint needs min and/or max");
    if (k.min && k.max && *k.min > *k.max)
      c.fail(t.get("min"), p + ".min", fmt::format("min {} is above max {}", *k.min, *k.max));
    s.constraints.push_back(k);
  }
}

/// [search] (optional): strategy, knob order (names of `knobs`), top-k, trial budget, minimum gain (%).
void read_search(const Ctx& c, const toml::table& qt, const std::vector<Knob>& knobs, SearchSpec& q) {
  check_keys(c, qt, "search",
             {"strategy", "knob_order", "top_k", "max_trials", "min_gain_pct", "ablation", "twin_band_pct"});
  q.strategy_set = qt.get("strategy") != nullptr;
  std::string strat = get_string(c, qt, "strategy", "search", std::string("greedy"));
  if (strat == "greedy")
    q.strategy = Strategy::kGreedy;
  else if (strat == "grid")
    q.strategy = Strategy::kGrid;
  else if (strat == "twin-guided")
    q.strategy = Strategy::kTwinGuided;
  else
    c.fail(qt.get("strategy"), "search.strategy", "must be greedy, grid or twin-guided");
  q.knob_order = get_strings(c, qt, "knob_order", "search");
  for (const auto& k : q.knob_order)
    if (std::none_of(knobs.begin(), knobs.end(), [&](const Knob& x) { return x.name == k; }))
      c.fail(qt.get("knob_order"), "search.knob_order", "no knob named '" + k + "'");
  q.top_k = get_int(c, qt, "top_k", "search", q.top_k, Range{1, 100000});
  if (q.top_k < 2) c.fail(qt.get("top_k"), "search.top_k", "must be ≥ 2 (a ranking needs two points)");
  q.max_trials = get_int(c, qt, "max_trials", "search", q.max_trials, Range{1, 1000000});
  q.min_gain_pct = get_number(c, qt, "min_gain_pct", "search", q.min_gain_pct, Range{0, 100});
  q.ablation = get_bool(c, qt, "ablation", "search", q.ablation);
  q.twin_band_pct = get_number(c, qt, "twin_band_pct", "search", 0.0, Range{0, 1000});
}

/// [recommendation] (optional): the rule that picks the recommended config, and its threshold (%).
void read_recommendation(const Ctx& c, const toml::table& rt, RecommendationSpec& r) {
  check_keys(c, rt, "recommendation", {"rule", "threshold_pct"});
  const std::string rule = get_string(c, rt, "rule", "recommendation", std::string("trade_off"));
  if (rule == "trade_off")
    r.rule = RecommendationRule::kTradeOff;
  else if (rule == "objective")
    r.rule = RecommendationRule::kObjective;
  else if (rule == "no_regression")
    r.rule = RecommendationRule::kNoRegression;
  else
    c.fail(rt.get("rule"), "recommendation.rule", "must be trade_off, objective or no_regression");
  r.threshold_pct = get_number(c, rt, "threshold_pct", "recommendation", r.threshold_pct, Range{0, 1e6});
}

/// `text` with every run of more than 16 digits cut to its first 6 and its length ("123456... (100
/// digits)"): toml++ quotes a value it cannot represent whole, up to 126 characters of it.
std::string shorten_digit_runs(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j - i > 16) {
      out += text.substr(i, 6) + fmt::format("... ({} digits)", j - i);
    } else {
      out.append(text, i, std::max<size_t>(j - i, 1));
      if (j == i) ++j;
    }
    i = j;
  }
  return out;
}

/// The TOML document `text`, or a StudyError with line and column.
toml::table parse_toml(const std::string& text, const std::string& origin) {
  detail::check_toml_shape(text, origin);  // before toml++ recurses into it
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw StudyError(fmt::format("{}:{}:{}: TOML syntax error: {}", origin, e.source().begin.line,
                                 e.source().begin.column,
                                 common::printable(shorten_digit_runs(std::string(e.description())), 300)));
  }
}

}  // namespace

Study parse_study(const std::string& text, const std::string& origin, const std::filesystem::path& data_dir) {
  Ctx c{origin};
  const toml::table root = parse_toml(text, origin);
  check_keys(
      c, root, "",
      {"study", "model", "hardware", "bench", "engines", "knobs", "scenarios", "objective", "constraints",
       "search", "recommendation", "load", "slo", "cost", "objectives", "k8s", "slurm"});
  Study s;
  s.source_text = text;
  read_study_section(c, root, s);
  const toml::table* mt = sub_table(c, root, "model", "model", true);
  check_keys(c, *mt, "model", {"id", "config"});
  s.model = get_string(c, *mt, "id", "model", std::nullopt);
  if (mt->get("config"))
    s.model_config =
        substitute(get_string(c, *mt, "config", "model", std::nullopt), "data_dir", data_dir.string());
  if (const toml::table* ht = sub_table(c, root, "hardware", "hardware", true))
    read_hardware(c, *ht, s.hardware);
  if (const toml::table* kt = sub_table(c, root, "k8s", "k8s", false)) read_k8s(c, *kt, s.k8s);
  if (const toml::table* lt = sub_table(c, root, "slurm", "slurm", false)) {
    read_slurm(c, *lt, s.hardware, s.slurm);
  } else {
    s.slurm.gpus_per_trial = s.hardware.gpu_count;
    s.slurm.gpus_per_node = std::min(s.hardware.gpus_per_node, s.hardware.gpu_count);
  }
  if (s.target == Target::kSlurm && !root.get("slurm"))
    c.fail(&root, "slurm", "target \"slurm\" needs a [slurm] section (partition, time_limit_min, ...)");
  const std::string data = data_dir.string();
  if (const toml::table* bt = sub_table(c, root, "bench", "bench", false)) read_bench(c, *bt, data, s);
  read_engines(c, root, s);
  read_knobs(c, root, s);
  read_scenarios(c, root, data, s);
  read_objective(c, root, s);
  read_constraints(c, root, s);
  if (const toml::table* qt = sub_table(c, root, "search", "search", false))
    read_search(c, *qt, s.knobs, s.search);
  if (!s.search.strategy_set) s.search.strategy = default_strategy(s.target);
  if (const toml::table* rt = sub_table(c, root, "recommendation", "recommendation", false))
    read_recommendation(c, *rt, s.recommendation);
  if (s.search.knob_order.empty())
    for (const auto& k : s.knobs) s.search.knob_order.push_back(k.name);
  detail::parse_load_sections(root, origin, s);
  return s;
}

}  // namespace servelab::tune
