// The engine table (engine_module.h): the built-in modules (each engine's folder defines its own),
// registration and the start-up check that every module sets every hook.
#include "servelab/engines/engine_module.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <stdexcept>

#include "engines/engine_hooks.h"
#include "engines/engines_detail.h"
#include "engines/launch_detail.h"
#include "engines/version.h"
#include "servelab/common/text.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {
namespace {

[[noreturn]] void invalid(const EngineModule& m, const std::string& what) {
  throw std::invalid_argument(std::string("engine module '") + (m.name ? m.name : "") + "': " + what);
}

// The start-up check: a module names itself, is started some way, and sets every hook.
void check_module(const EngineModule& m, const std::deque<EngineModule>& table) {
  if (!m.name || !*m.name) invalid(m, "no name");
  if (!m.product_name || !*m.product_name) invalid(m, "no product_name");
  if (!m.default_version) invalid(m, "no default_version");
  if (m.releases.empty()) invalid(m, "no releases (the releases whose flags and defaults are modelled)");
  if (std::none_of(m.releases.begin(), m.releases.end(),
                   [&](const EngineRelease& r) { return r.version == m.default_version; }))
    invalid(m, std::string("default_version '") + m.default_version + "' is not one of its releases");
  for (const auto& r : m.releases)
    if (r.version.empty() || r.family.empty())
      invalid(m, "release '" + r.version + "' needs a version and a fitted-parameter family");
  if (m.programs.empty()) invalid(m, "no programs (how the engine is started)");
  for (const auto& p : m.programs)
    if (p.recorded.empty() || p.executable.empty() == p.python_module.empty())
      invalid(m, "program '" + p.recorded + "' needs a recorded form and either an executable or a module");
  const std::pair<const char*, bool> hooks[] = {
      {"parse", m.parse != nullptr},
      {"render", m.render != nullptr},
      {"render_env", m.render_env != nullptr},
      {"resolve", m.resolve != nullptr},
      {"check_request", m.check_request != nullptr},
      {"heads_indivisible_error", m.heads_indivisible_error != nullptr},
      {"config_file.flag", m.config_file.flag != nullptr},
      {"config_file.path", m.config_file.path != nullptr},
      {"config_file.apply", m.config_file.apply != nullptr},
      {"stated_node_placement", m.stated_node_placement != nullptr},
      {"node_launch", m.node_launch != nullptr},
      {"version_probe_package", m.version_probe_package != nullptr},
      {"prefix_cache_reset_path", m.prefix_cache_reset_path != nullptr},
      {"op_tables", m.op_tables != nullptr},
      {"cpu_prior", m.cpu_prior.cpu_step_ms > 0 && m.cpu_prior.api_request_ms > 0},
  };
  for (const auto& [field, set] : hooks)
    if (!set) invalid(m, std::string("'") + field + "' is not set");
  const metrics::ServerMetricNames& names = m.server_metrics;
  if (names.engine.empty()) invalid(m, "'server_metrics.engine' is not set");
  if (names.prefix.empty() && !names.iteration_stats)
    invalid(m, "'server_metrics' needs a metric-name prefix or iteration_stats");
  if (names.iteration_stats && names.iteration_stats->entry_keys.empty())
    invalid(m, "'server_metrics.iteration_stats.entry_keys' is empty");
  if (names.prefix_cache_unit.empty()) invalid(m, "'server_metrics.prefix_cache_unit' is not set");
  for (const auto& other : table) {
    if (other.kind == m.kind || std::string(other.name) == m.name)
      invalid(m, std::string("kind or name already registered (by '") + other.name + "')");
    for (const auto& p : m.programs)
      for (const auto& q : other.programs)
        if (p.recorded == q.recorded)
          invalid(m, "program '" + p.recorded + "' is already '" + other.name +
                         "''s: a launch would be ambiguous");
  }
}

std::deque<EngineModule>& table() {
  static std::deque<EngineModule> modules = [] {
    std::deque<EngineModule> t;
    for (EngineModule m : {detail::vllm_module(), detail::sglang_module(), detail::trtllm_module()}) {
      check_module(m, t);
      t.push_back(std::move(m));
    }
    return t;
  }();
  return modules;
}

}  // namespace

const std::deque<EngineModule>& engine_modules() {
  return table();
}

std::vector<metrics::ServerMetricNames> server_metric_names() {
  std::vector<metrics::ServerMetricNames> out;
  for (const auto& m : table())
    if (std::find(out.begin(), out.end(), m.server_metrics) == out.end()) out.push_back(m.server_metrics);
  return out;
}

const EngineModule& engine_module(EngineKind kind) {
  for (const auto& m : table())
    if (m.kind == kind) return m;
  throw std::logic_error("no engine module registered for engine kind " +
                         std::to_string(static_cast<int>(kind)));
}

const ArchitectureRelease* architecture_release(EngineKind kind, const std::string& architecture) {
  for (const auto& a : engine_module(kind).architecture_releases)
    if (architecture == a.architecture) return &a;
  return nullptr;
}

std::string default_version_for(EngineKind kind, const std::string& architecture) {
  const EngineModule& m = engine_module(kind);
  const ArchitectureRelease* a = architecture_release(kind, architecture);
  if (!a) return m.default_version;
  const EngineVersion first = EngineVersion::parse(a->first_release);
  if (first <= EngineVersion::parse(m.default_version)) return m.default_version;
  for (const auto& r : m.releases)
    if (first <= EngineVersion::parse(r.version)) return r.version;
  // No modelled release loads it: resolve_launch refuses the default, naming the bound.
  return m.default_version;
}

namespace {

/// The engine image a launch runs in (`docker|podman run ... IMAGE`), its tag and the release it names.
struct LaunchImage {
  std::string image;    ///< "" without a container wrapper
  std::string tag;      ///< an engine image's tag ("latest", "v0.11.0-cu129"; "" for another image)
  std::string release;  ///< the release the tag names ("0.11.0"; "" when it names none)
};

/// The image of `argv`'s container wrapper (strip_launch_wrappers), with its tag and release.
LaunchImage launch_image(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> scratch = env;
  LaunchImage out;
  out.image = detail::strip_launch_wrappers(argv, scratch).image;
  out.tag = detail::engine_image_tag(out.image);
  out.release = detail::image_tag_version(out.image);
  return out;
}

std::string join_versions(const std::vector<EngineRelease>& releases) {
  std::string out;
  for (const auto& r : releases) out += (out.empty() ? "" : ", ") + r.version;
  return out;
}

/// "warning: ..." when `version` is none of m's modelled releases: which modelled releases' flags and
/// defaults stand in for it (parse_launch_command: a release takes the flags of its place in the order).
/// Whether runs of the release were validated is the error band's to say (sim uncertainty: the corpus's
/// versions), not this module's: the InferenceMAX corpus holds releases whose flags are not modelled apart.
std::optional<std::string> unmodelled_release_text(const EngineModule& m, const std::string& version) {
  const EngineVersion v = EngineVersion::parse(version);
  const std::string* before = nullptr;
  const std::string* after = nullptr;
  for (const auto& r : m.releases) {
    const EngineVersion rv = EngineVersion::parse(r.version);
    if (rv == v) return std::nullopt;
    if (rv < v) before = &r.version;
    if (v < rv && !after) after = &r.version;
  }
  if (m.releases.empty()) return std::nullopt;
  const std::string stand_in = !after ? "those of the newest modelled release, " + *before
                               : !before
                                   ? "those of the oldest modelled release, " + *after
                                   : "those of its place between the modelled " + *before + " and " + *after;
  return "warning: " + std::string(m.product_name) + " " + version +
         " is not a modelled release (modelled: " + join_versions(m.releases) +
         "): its flags and defaults are taken to be " + stand_in +
         " [unverified] (whether the validation corpus holds runs of it: the error band's warnings)";
}

/// "warning: ..." when the image is a ROCm build of the engine ("rocm/vllm", "lmsysorg/sglang:v0.5.6-rocm700-
/// mi35x"): it runs on AMD GPUs only, while the prediction is of the engine's CUDA build on the given GPUs.
std::optional<std::string> rocm_image_warning(const LaunchImage& image, const EngineModule& m) {
  if (common::ascii_lower(image.image).find("rocm") == std::string::npos) return std::nullopt;
  return "warning: the image " + image.image + " is a ROCm build (AMD GPUs): the prediction is of " +
         m.product_name + "'s CUDA build on the given NVIDIA GPUs, which this image does not run on";
}

/// The notices of a parsed launch (ReleasedLaunch::notices): what the image's tag and --engine-version
/// (`version`, "" = none) say about the release predicted, and whether that release is modelled.
void add_release_notices(const LaunchImage& image, const std::string& version, ReleasedLaunch& out) {
  const EngineModule& m = engine_module(out.config.kind);
  const std::string predicted =
      out.config.engine_version.empty() ? m.default_version : out.config.engine_version;
  if (!image.tag.empty() && image.release.empty() && version.empty())
    out.notices.push_back("note: the image tag '" + image.tag + "' (" + image.image +
                          ") names no release, so " + m.product_name + " " + predicted + " is predicted, " +
                          (out.note.empty()
                               ? std::string("the module's default")
                               : "the oldest modelled release that can load " + out.model.architecture) +
                          "; --engine-version picks another (modelled: " + join_versions(m.releases) + ")");
  if (!version.empty() && !image.release.empty() &&
      !(EngineVersion::parse(version) == EngineVersion::parse(image.release)))
    out.notices.push_back("note: --engine-version " + version +
                          " wins over the release the image tag names, " + image.release + " (" +
                          image.image + "): " + m.product_name + " " + version + " is predicted");
  if (auto w = unmodelled_release_text(m, predicted)) out.notices.push_back(*w);
  if (auto w = rocm_image_warning(image, m)) out.notices.push_back(*w);
}

/// `argv` without the words the newest modelled release of `m` does not know (EngineArgError::unrecognized),
/// parsed for that release: the served model of a launch no release accepts. nullopt when leaving words out
/// does not make it parse (another error, or a word not found).
std::optional<LaunchConfig> parse_known_words(const EngineModule& m, std::vector<std::string> argv,
                                              const std::map<std::string, std::string>& env) {
  if (m.releases.empty()) return std::nullopt;
  for (int round = 0; round < 8; ++round) {
    try {
      return apply_config_files(parse_launch_command(argv, env, m.releases.back().version));
    } catch (const EngineArgError& e) {
      if (e.unrecognized.empty()) return std::nullopt;
      // Unknown words follow the known ones they are mistaken for: each is left out at its last occurrence.
      for (auto w = e.unrecognized.rbegin(); w != e.unrecognized.rend(); ++w) {
        const auto at = std::find(argv.rbegin(), argv.rend(), *w);
        if (at == argv.rend()) return std::nullopt;
        argv.erase(std::next(at).base());
      }
    }
  }
  return std::nullopt;
}

}  // namespace

ReleasedLaunch parse_launch_for_model(const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>& env,
                                      const std::string& version,
                                      const std::function<model::ModelSpec(const LaunchConfig&)>& model_of) {
  auto parse = [&](const std::string& v) { return apply_config_files(parse_launch_command(argv, env, v)); };
  const LaunchImage image = launch_image(argv, env);
  ReleasedLaunch out;
  // A stated release (--engine-version, else an image's tag) is the one predicted: its errors are the answer.
  if (!version.empty() || !image.release.empty()) {
    out.config = parse(version);
    out.model = model_of(out.config);
    add_release_notices(image, version, out);
    return out;
  }
  // The launch parsed for the module's default release (or its error): the engine it names.
  std::optional<LaunchConfig> stated;
  std::optional<EngineArgError> stated_error;
  try {
    stated = parse("");
  } catch (const EngineArgError& e) {
    stated_error = e;
  }
  // A rolling tag (`latest`, `nightly`) runs whatever the engine released last: the newest modelled release
  // is the nearest, predicted with a note that the tag moves.
  if (image.tag == "latest" || image.tag == "nightly") {
    const EngineModule& m = engine_module(stated ? stated->kind : stated_error->kind);
    out.config = parse(m.releases.back().version);
    out.model = model_of(out.config);
    out.notices.push_back("note: the image tag '" + image.tag + "' (" + image.image +
                          ") moves with the engine's releases: " + m.product_name + " " +
                          m.releases.back().version +
                          ", the newest modelled release, is predicted; pin a release tag or pass "
                          "--engine-version for another (modelled: " +
                          join_versions(m.releases) + ")");
    if (auto w = rocm_image_warning(image, m)) out.notices.push_back(*w);
    return out;
  }
  // The module default; if that release lacks a flag, the newest modelled release that parses the launch
  // names its model (and the error stays the default's unless the model moves the release).
  std::optional<LaunchConfig> probe = stated;
  if (!probe) {
    const EngineModule& m = engine_module(stated_error->kind);
    for (auto r = m.releases.rbegin(); r != m.releases.rend() && !probe; ++r) try {
        probe = parse(r->version);
      } catch (const EngineArgError&) {
      }
    if (!probe) {
      // No release parses it: the error is that of the release its model is predicted on (a model that
      // moves past the default's bound: its oldest loading release, which knows that release's flags).
      std::string chosen = m.default_version;
      if (const auto known = parse_known_words(m, argv, env)) try {
          chosen = default_version_for(known->kind, model_of(*known).architecture);
        } catch (const std::exception&) {
          // A model that cannot be read keeps the default's error.
        }
      if (chosen != m.default_version) (void)parse(chosen);  // throws that release's error
      throw *stated_error;
    }
  }
  out.model = model_of(*probe);
  const EngineModule& m = engine_module(probe->kind);
  const std::string chosen = default_version_for(probe->kind, out.model.architecture);
  if (chosen == m.default_version) {
    if (!stated) throw *stated_error;
    out.config = std::move(*stated);
  } else {
    out.config = parse(chosen);
    out.note = std::string("no --engine-version: ") + m.product_name + " " + m.default_version +
               " (the default) predates " + out.model.architecture + ", so " + chosen +
               ", the oldest modelled release that can load it, is predicted";
  }
  add_release_notices(image, version, out);
  return out;
}

const EngineModule* find_engine_module(const std::string& name) {
  for (const auto& m : table())
    if (name == m.name) return &m;
  return nullptr;
}

void register_engine_module(EngineModule module) {
  auto& t = table();
  check_module(module, t);
  t.push_back(std::move(module));
}

std::optional<std::string> unmodelled_release_warning(EngineKind kind, const std::string& version) {
  return unmodelled_release_text(engine_module(kind), version);
}

}  // namespace servelab::engines
