#include "servelab/tune/study/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "servelab/common/text.h"
#include "servelab/engines/engines.h"

namespace servelab::tune {

namespace {

const KnobValue& find_value(const Knob& knob, const std::string& label) {
  if (const auto it = knob.value_index.find(label); it != knob.value_index.end() &&
                                                    it->second < knob.values.size() &&
                                                    knob.values[it->second].label == label)
    return knob.values[it->second];
  for (const auto& v : knob.values)
    if (v.label == label) return v;
  throw std::out_of_range("knob '" + knob.name + "' has no value '" + label + "'");
}

std::string subst_fields(std::string s, const std::map<std::string, std::string>& fields) {
  for (const auto& [k, v] : fields) {
    const std::string pat = "{" + k + "}";
    for (size_t pos = s.find(pat); pos != std::string::npos; pos = s.find(pat, pos + v.size()))
      s.replace(pos, pat.size(), v);
  }
  return s;
}

std::string subst_study(std::string s, const Study& study) {
  return subst_fields(std::move(s),
                      {{"model", study.model}, {"port", std::to_string(study.port)}, {"host", study.host}});
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                        "-_./=:,+@%") == std::string::npos)
    return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The first reject part of `parts` whose condition holds for `v`, or null.
const RenderPart* rejecting_part(const std::vector<RenderPart>& parts, const KnobValue& v) {
  for (const auto& part : parts)
    if (!part.reject.empty() && eval_condition(part.when, v.fields)) return &part;
  return nullptr;
}

// The engine CLI's error for `config` rendered from `study` (engines::parse_launch_command), or nullopt.
std::optional<std::string> cli_refusal(const Study& study, const CandidateConfig& config) {
  const Rendered r = render(study, config);
  try {
    engines::parse_launch_command(r.argv, r.env);
  } catch (const engines::EngineArgError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace

CandidateConfig normalize(const Study& study, CandidateConfig config) {
  for (auto it = config.knobs.begin(); it != config.knobs.end();) {
    const Knob& k = study.knob(it->first);
    find_value(k, it->second);
    it = it->second == k.baseline ? config.knobs.erase(it) : std::next(it);
  }
  return config;
}

std::string config_key(const Study& study, const CandidateConfig& config) {
  std::string out = config.engine + "{";
  bool first = true;
  for (const auto& k : study.knobs) {
    auto it = config.knobs.find(k.name);
    if (it == config.knobs.end() || it->second == k.baseline) continue;
    out += (first ? "" : ",") + k.name + "=" + it->second;
    first = false;
  }
  return out + "}";
}

std::string config_label(const Study& study, const CandidateConfig& config) {
  std::string out;
  for (const auto& k : study.knobs) {
    auto it = config.knobs.find(k.name);
    if (it == config.knobs.end() || it->second == k.baseline) continue;
    out += (out.empty() ? "" : " + ") + k.name + "=" + it->second;
  }
  return out.empty() ? "baseline" : out;
}

std::string Rendered::shell() const {
  std::string out;
  for (const auto& [k, v] : env) out += k + "=" + shell_quote(v) + " ";
  for (size_t i = 0; i < argv.size(); ++i) out += (i ? " " : "") + shell_quote(argv[i]);
  return out;
}

Rendered render(const Study& study, const CandidateConfig& config) {
  const EngineSpec& engine = study.engine(config.engine);
  Rendered r;
  for (const auto& a : engine.command) r.argv.push_back(subst_study(a, study));
  for (const auto& a : engine.base_flags) r.argv.push_back(subst_study(a, study));
  r.env = engine.env;
  for (const auto& k : study.knobs) {
    auto it = config.knobs.find(k.name);
    const KnobValue& v = find_value(k, it == config.knobs.end() ? k.baseline : it->second);
    if (v.is_default) continue;
    auto parts = k.render.find(config.engine);
    if (parts == k.render.end()) continue;
    for (const auto& part : parts->second) {
      if (!part.reject.empty() || !eval_condition(part.when, v.fields)) continue;
      for (const auto& f : part.flags) r.argv.push_back(subst_fields(subst_study(f, study), v.fields));
      for (const auto& [ek, ev] : part.env) r.env[ek] = subst_fields(ev, v.fields);
    }
  }
  return r;
}

std::optional<std::string> check_config(const Study& study, const CandidateConfig& config) {
  const int gpus = study.hardware.gpu_count;
  for (const auto& k : study.knobs) {
    auto it = config.knobs.find(k.name);
    const KnobValue& v = find_value(k, it == config.knobs.end() ? k.baseline : it->second);
    if (v.is_default) continue;
    auto parts = k.render.find(config.engine);
    if (parts == k.render.end()) {
      // A baseline value the engine cannot express is its default; a non-baseline one is a flag it lacks.
      if (v.label == k.baseline) continue;
      return fmt::format("{} has no setting for knob {} (value {})", config.engine, k.name, v.label);
    }
    if (const RenderPart* part = rejecting_part(parts->second, v))
      return fmt::format("{} rejects {}={}: {}", config.engine, k.name, v.label, part->reject);
    if (k.type == KnobType::kLayout) {
      auto f = [&](const char* n) { return std::stoi(v.fields.at(n)); };
      const int tp = f("tp"), dp = f("dp"), ep = f("ep"), pp = f("pp"), dcp = f("dcp");
      const bool dpa = v.fields.at("dp_attention") == "true";
      // In 64 bits: each way is at most 4096, so tp x pp x dp overflowed an int (2^36).
      const long long used = dpa ? 1LL * tp * pp : 1LL * tp * pp * dp;
      const std::string where =
          study.hardware.nodes == 1
              ? "the node"
              : fmt::format("the {} nodes x {}", study.hardware.nodes, study.hardware.gpus_per_node);
      if (used > gpus) return fmt::format("layout {} needs {} GPUs, {} has {}", v.label, used, where, gpus);
      if (gpus % used != 0)
        return fmt::format("layout {} uses {} GPUs, which does not divide {}'s {}", v.label, used, where,
                           gpus);
      if (used % ep != 0)
        return fmt::format("layout {}: ep={} does not divide the {} GPUs used", v.label, ep, used);
      if (dpa && tp % dp != 0)
        return fmt::format("layout {}: with DP-attention dp={} must divide tp={}", v.label, dp, tp);
      if (tp % dcp != 0) return fmt::format("layout {}: dcp={} must divide tp={}", v.label, dcp, tp);
    }
  }
  if (study.engine(config.engine).check_flags)  // a flag or value the engine's own CLI refuses, before launch
    if (auto why = cli_refusal(study, config))
      return fmt::format("{} refuses the command: {}", config.engine, *why);
  return std::nullopt;
}

std::vector<FlagRefusal> flag_refusals(const Study& study) {
  std::vector<FlagRefusal> out;
  Study bare = study;  // command and base_flags alone
  bare.knobs.clear();
  for (const auto& e : study.engines) {
    if (!e.check_flags) continue;
    if (auto why = cli_refusal(bare, {e.name, {}})) {
      out.push_back({e.name, "", "", *why});
      continue;  // every configuration carries it
    }
    if (cli_refusal(study, {e.name, {}})) {
      // A knob's baseline value is refused (review: it was blamed on command and base_flags): each knob at
      // its baseline alone on top of them; the values on top of a refused baseline say nothing more.
      for (const auto& k : study.knobs) {
        Study one = bare;
        one.knobs = {k};
        if (auto why = cli_refusal(one, {e.name, {}}))
          out.push_back({e.name, k.name, k.baseline, *why, true});
      }
      continue;
    }
    for (const auto& k : study.knobs) {
      if (!k.render.count(e.name)) continue;
      const std::size_t n = k.values.size(), half = kFlagCheckValues / 2;
      for (std::size_t i = 0; i < n; ++i) {
        if (n > kFlagCheckValues && i == half) i = n - half;
        const KnobValue& v = k.values[i];
        if (v.label == k.baseline || v.is_default) continue;
        if (rejecting_part(k.render.at(e.name), v)) continue;  // the study's own reject says why itself
        if (auto why = cli_refusal(study, {e.name, {{k.name, v.label}}}))
          out.push_back({e.name, k.name, v.label, *why, false});
      }
    }
  }
  return out;
}

std::vector<std::string> knobs_for_engine(const Study& study, const std::string& engine) {
  std::vector<std::string> out;
  for (const auto& name : study.search.knob_order)
    if (study.knob(name).render.count(engine)) out.push_back(name);
  return out;
}

std::size_t grid_points(const Study& study) {
  constexpr std::size_t kSaturated = std::numeric_limits<std::size_t>::max();
  std::size_t total = 0;
  for (const auto& e : study.engines) {
    std::size_t n = 1;
    for (const auto& kname : knobs_for_engine(study, e.name)) {
      const std::size_t values = std::max<std::size_t>(1, study.knob(kname).values.size());
      n = n > kSaturated / values ? kSaturated : n * values;
    }
    total = n > kSaturated - total ? kSaturated : total + n;
  }
  return total;
}

std::size_t grid_points_within_limit(const Study& study) {
  const std::size_t n = grid_points(study);
  if (n > kMaxGridPoints)
    throw std::runtime_error(fmt::format(
        "the grid has {} points, over a million: narrow the knob space",
        n == std::numeric_limits<std::size_t>::max() ? std::string("2^64 or more") : std::to_string(n)));
  return n;
}

std::vector<CandidateConfig> enumerate_grid(const Study& study) {
  // Counted before anything is built: a 9 x 10 grid used to materialise 10^7 configurations first.
  grid_points_within_limit(study);
  std::vector<CandidateConfig> out;
  for (const auto& e : study.engines) {
    std::vector<CandidateConfig> acc{CandidateConfig{e.name, {}}};
    for (const auto& kname : knobs_for_engine(study, e.name)) {
      const Knob& k = study.knob(kname);
      std::vector<CandidateConfig> next;
      for (const auto& c : acc)
        for (const auto& v : k.values) {
          CandidateConfig n = c;
          if (v.label != k.baseline) n.knobs[kname] = v.label;
          next.push_back(std::move(n));
        }
      acc = std::move(next);
    }
    out.insert(out.end(), acc.begin(), acc.end());
  }
  return out;
}

}  // namespace servelab::tune
