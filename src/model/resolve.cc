// resolve_model: a launch's model argument -> ModelSpec (path, HF cache, built-in DeepSeek-V3.2, data dir).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "model/detail.h"
#include "servelab/common/paths.h"
#include "servelab/common/python_json.h"
#include "servelab/common/text.h"
#include "servelab/hub/hub.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

namespace fs = std::filesystem;

std::string last_component(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '/') t.pop_back();
  const auto slash = t.rfind('/');
  return slash == std::string::npos ? t : t.substr(slash + 1);
}

/// DeepSeek-V3.2 spellings of DeepSeek's own FP8 checkpoint (the built-in model): the HF id, the -Exp and
/// -Speciale releases (same architecture and weights format), local directories such as
/// /workspace/DeepSeek-v3.2. Not another organisation's re-quantization of it (nvidia/DeepSeek-V3.2-NVFP4,
/// an AWQ or FP4 copy): its own config.json and quantization file are looked up like any model's, and a
/// missing one is an error, never the FP8 checkpoint in its place.
bool names_deepseek_v32(const std::string& model) {
  const std::string last = common::ascii_lower(last_component(model));
  for (const char* name : {"deepseek-v3.2", "deepseek-v32", "deepseek-v3.2-exp", "deepseek-v3.2-speciale"})
    if (last == name) return true;
  return false;
}

/// Hugging Face hub cache roots, in the order huggingface_hub uses them.
std::vector<fs::path> hf_hub_dirs() {
  std::vector<fs::path> dirs;
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char* hub = env("HF_HUB_CACHE")) dirs.emplace_back(hub);
  if (const char* home = env("HF_HOME")) dirs.push_back(fs::path(home) / "hub");
  if (const char* xdg = env("XDG_CACHE_HOME")) dirs.push_back(fs::path(xdg) / "huggingface" / "hub");
  if (const char* home = env("HOME")) dirs.push_back(fs::path(home) / ".cache" / "huggingface" / "hub");
  return dirs;
}

/// config.json of `org/name` in one hub cache: the snapshot refs/main names, else the newest one.
std::optional<fs::path> hf_cache_config(const fs::path& hub, const std::string& repo) {
  std::error_code ec;
  const fs::path snapshots = hub / repo / "snapshots";
  std::vector<fs::path> found;
  if (fs::is_directory(snapshots, ec))
    for (const auto& e : fs::directory_iterator(snapshots, ec))
      if (fs::is_regular_file(e.path() / "config.json", ec)) found.push_back(e.path() / "config.json");
  if (found.empty()) return std::nullopt;
  std::string main_ref;
  try {
    main_ref = common::read_file(hub / repo / "refs" / "main");
  } catch (const std::exception&) {
  }
  while (!main_ref.empty() && std::isspace(static_cast<unsigned char>(main_ref.back()))) main_ref.pop_back();
  for (const fs::path& f : found)
    if (!main_ref.empty() && f.parent_path().filename() == main_ref) return f;
  // With refs, the other snapshots are other revisions (a pinned --revision): not main's config. The newest
  // snapshot stands in for main only in a cache without any refs.
  if (!fs::is_empty(hub / repo / "refs", ec) && !ec) return std::nullopt;
  return *std::max_element(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
    std::error_code e1, e2;
    return fs::last_write_time(a, e1) < fs::last_write_time(b, e2);
  });
}

/// The organisation of a Hub-style id ("nvidia" of "nvidia/Qwen3-32B-FP8"), lower-cased; "" for a bare
/// name or a path.
std::string org_of(const std::string& id) {
  const auto slash = id.find('/');
  if (!hub::is_repo_id(id) || slash == std::string::npos) return "";
  return common::ascii_lower(id.substr(0, slash));
}

/// A config of the data dir found for a model name.
struct DataDirMatch {
  fs::path file;
  /// Matched by the last component only, both names carrying an organisation and the two differing
  /// (nvidia/Qwen3-32B-FP8 against Qwen/Qwen3-32B-FP8): another publisher's checkpoint of that name.
  std::string other_publisher;  ///< the config's _name_or_path then, else ""
};

/// The config in `dir` (<data dir>/model-configs) whose _name_or_path equals `model` or whose last
/// component equals `model`'s last component, case-insensitively. The full id wins over a last-component
/// match, and a last-component match of the same (or no) organisation over another publisher's. Files that
/// fail to parse as JSON are skipped here (load_config reports them when named).
std::optional<DataDirMatch> data_dir_config(const fs::path& dir, const std::string& model) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const std::string want = common::ascii_lower(model);
  const std::string want_last = common::ascii_lower(last_component(model));
  const std::string want_org = org_of(model);
  std::optional<DataDirMatch> by_last, by_other;
  for (const auto& f : files) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(common::read_file(f));
    } catch (const std::exception&) {
      continue;
    }
    if (!j.is_object() || !j.contains("_name_or_path") || !j["_name_or_path"].is_string()) continue;
    const std::string given = j["_name_or_path"].get<std::string>();
    const std::string name = common::ascii_lower(given);
    if (name == want) return DataDirMatch{f, ""};
    if (common::ascii_lower(last_component(name)) != want_last) continue;
    const std::string org = org_of(name);
    if (want_org.empty() || org.empty() || org == want_org) {
      if (!by_last) by_last = DataDirMatch{f, ""};
    } else if (!by_other) {
      by_other = DataDirMatch{f, given};
    }
  }
  return by_last ? by_last : by_other;
}

/// The file in `dir` named `name`, compared case-insensitively (the copies keep the Hub's capitalisation,
/// a launch may not).
std::optional<fs::path> file_in(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  const std::string want = common::ascii_lower(name);
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (common::ascii_lower(e.path().filename().string()) == want && e.is_regular_file(ec)) return e.path();
  return std::nullopt;
}

/// `model` without a trailing dated revision tag ("-" and four digits: "-0528", "-2507"), or nullopt.
std::optional<std::string> without_revision_tag(const std::string& model) {
  const std::string last = last_component(model);
  if (last.size() < 6) return std::nullopt;
  const std::size_t dash = last.size() - 5;
  if (last[dash] != '-') return std::nullopt;
  for (std::size_t i = dash + 1; i < last.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(last[i]))) return std::nullopt;
  return model.substr(0, model.size() - 5);
}

/// The data dir's offline config of `model` (model-configs by _name_or_path, then model-configs/aic by
/// ORG--NAME), or nullopt; each place searched in vain is appended to `tried`. Another publisher's config
/// of the same name (DataDirMatch::other_publisher) is not taken here but left in `other_publisher`, the
/// last resort of resolve_model.
std::optional<ModelSpec> data_dir_model(const std::string& model, std::vector<std::string>& tried,
                                        std::optional<DataDirMatch>* other_publisher = nullptr) {
  std::error_code ec;
  const fs::path configs = common::data_dir() / "model-configs";
  const auto match = data_dir_config(configs, model);
  if (match && match->other_publisher.empty()) return load_config(match->file);
  if (match && other_publisher && !*other_publisher) *other_publisher = match;
  tried.push_back(fs::is_directory(configs, ec)
                      ? "data dir " + configs.string() + " (no config whose _name_or_path is \"" + model +
                            "\" or ends in \"" + last_component(model) + "\"" +
                            (match ? "; " + match->other_publisher + " is another publisher's" : "") + ")"
                      : "data dir " + configs.string() + " (does not exist; set SERVELAB_DATA_DIR)");
  if (hub::is_repo_id(model)) {
    const auto slash = model.find('/');
    const std::string stem = model.substr(0, slash) + "--" + model.substr(slash + 1);
    if (auto f = file_in(configs / "aic", stem + "_config.json")) return load_config_with_modelopt(*f);
    tried.push_back("data dir " + (configs / "aic" / (stem + "_config.json")).string() + " (no such file)");
  }
  return std::nullopt;
}

/// Hub ids of the data dir's AIConfigurator configs (model-configs/aic/ORG--NAME_config.json) whose NAME
/// holds `model`'s last component or is held by it, case aside (a renamed checkpoint: meta-llama's
/// Llama-3.1-70B is Meta-Llama-3.1-70B there), at most 5, sorted; for the unknown-model message.
std::vector<std::string> near_names(const std::string& model) {
  auto lower = [](std::string x) {
    for (char& ch : x) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return x;
  };
  const std::string want = lower(last_component(model));
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path aic = common::data_dir() / "model-configs" / "aic";
  if (want.size() < 4 || !fs::is_directory(aic, ec)) return out;
  const std::string suffix = "_config.json";
  for (const auto& e : fs::directory_iterator(aic, ec)) {
    const std::string file = e.path().filename().string();
    const std::size_t sep = file.find("--");
    if (sep == std::string::npos || file.size() <= suffix.size() ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string name = file.substr(sep + 2, file.size() - suffix.size() - sep - 2);
    if (name.size() > 9 && name.compare(name.size() - 9, 9, "_hf_quant") == 0) continue;  // ModelOpt's file
    const std::string n = lower(name);
    if (n.size() < 4 || (n.find(want) == std::string::npos && want.find(n) == std::string::npos)) continue;
    const std::string id = file.substr(0, sep) + "/" + name;
    if (id != model) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  if (out.size() > 5) out.resize(5);
  return out;
}

/// A checkpoint named as a re-quantization of another: the id without its quantization tag and the ModelOpt
/// quant_algo the tag names.
struct RequantizedName {
  std::string base;        ///< "nvidia/DeepSeek-R1-0528" for "nvidia/DeepSeek-R1-0528-FP4-V2"
  std::string quant_algo;  ///< "NVFP4" (tag FP4 or NVFP4) or "FP8"
};

/// `model` whose last component ends in a quantization tag ("-FP4", "-NVFP4", "-FP8"), optionally followed
/// by a version of the re-quantization ("-V2"), or nullopt.
std::optional<RequantizedName> requantized_name(const std::string& model) {
  const std::string last = last_component(model);
  std::vector<std::string> tokens;
  for (std::size_t start = 0;;) {
    const std::size_t dash = last.find('-', start);
    tokens.push_back(last.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  std::size_t end = tokens.size();
  auto is_version = [](const std::string& t) {
    return t.size() >= 2 && (t[0] == 'v' || t[0] == 'V') &&
           std::all_of(t.begin() + 1, t.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  };
  if (end >= 3 && is_version(tokens[end - 1])) --end;
  if (end < 2) return std::nullopt;
  const std::string tag = common::ascii_lower(tokens[end - 1]);
  RequantizedName r;
  if (tag == "fp4" || tag == "nvfp4")
    r.quant_algo = "NVFP4";
  else if (tag == "fp8")
    r.quant_algo = "FP8";
  else
    return std::nullopt;
  std::size_t tag_chars = 0;
  for (std::size_t i = end - 1; i < tokens.size(); ++i) tag_chars += tokens[i].size() + 1;
  r.base = model.substr(0, model.size() - tag_chars);
  return r;
}

/// The configs in `aic` (model-configs/aic, ORG--NAME_config.json) whose NAME is `name`, any organisation,
/// case-insensitively, sorted.
std::vector<fs::path> aic_configs_named(const fs::path& aic, const std::string& name) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(aic, ec)) return out;
  const std::string want = "--" + common::ascii_lower(name) + "_config.json";
  for (const auto& e : fs::directory_iterator(aic, ec)) {
    const std::string f = common::ascii_lower(e.path().filename().string());
    if (f.size() > want.size() && f.compare(f.size() - want.size(), want.size(), want) == 0)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The config.json text of the unquantized-or-original checkpoint `base` from the data dir: by
/// _name_or_path / last component in model-configs, else an aic copy of that name from any organisation
/// (the base's publisher differs from the re-quantizer's), each also without a dated revision tag.
std::optional<fs::path> base_config_file(const std::string& base) {
  const fs::path configs = common::data_dir() / "model-configs";
  std::vector<std::string> names{base};
  if (auto b = without_revision_tag(base)) names.push_back(*b);
  for (const auto& n : names) {
    if (auto f = data_dir_config(configs, n)) return f->file;  // any publisher's: the architecture
    const auto aic = aic_configs_named(configs / "aic", last_component(n));
    if (!aic.empty()) return aic.front();
  }
  return std::nullopt;
}

/// The ModelOpt quantization body (quant_algo, kv_cache_quant_algo, group_size, exclude_modules / ignore)
/// of an aic checkpoint and the file it is in: its ORG--NAME_hf_quant_config.json beside it, else its
/// config.json's quantization_config when that says modelopt; nullopt otherwise or on unreadable JSON.
std::optional<std::pair<nlohmann::json, fs::path>> modelopt_body(const fs::path& config_file,
                                                                 const nlohmann::json& config) {
  const fs::path quant = detail::hf_quant_config_beside(config_file);
  std::error_code ec;
  if (!quant.empty() && fs::is_regular_file(quant, ec)) {
    try {
      nlohmann::json q = nlohmann::json::parse(common::read_file(quant));
      if (q.contains("quantization") && q["quantization"].is_object())
        return std::pair{q["quantization"], quant};
      if (q.is_object()) return std::pair{q, quant};
    } catch (const std::exception&) {
    }
    return std::nullopt;
  }
  const auto qc = config.find("quantization_config");
  if (qc != config.end() && qc->is_object() && qc->value("quant_method", std::string()) == "modelopt")
    return std::pair{*qc, config_file};
  return std::nullopt;
}

/// `model_type` without a trailing "_text" (Qwen3.5's text-only configs say qwen3_5_moe_text, its full ones
/// qwen3_5_moe): one architecture.
std::string architecture_of(std::string model_type) {
  if (model_type.size() > 5 && model_type.compare(model_type.size() - 5, 5, "_text") == 0)
    model_type.resize(model_type.size() - 5);
  return model_type;
}

/// The fine-grained FP8 recipe (quantization_config with quant_method "fp8" and a weight_block_size) of a
/// checkpoint of `org` with architecture `model_type` in the data dir (model-configs by _name_or_path's
/// organisation, then model-configs/aic ORG--*), the first by file name, and its file; its
/// modules_to_not_convert keeps only entries that name no numbered layer (the sibling's own layer list says
/// nothing of another size's). nullopt when there is none.
std::optional<std::pair<nlohmann::json, fs::path>> publisher_block_fp8_recipe(const std::string& org,
                                                                              const std::string& model_type) {
  const fs::path configs = common::data_dir() / "model-configs";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::path& dir : {configs, configs / "aic"})
    if (fs::is_directory(dir, ec))
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".json" &&
            e.path().filename().string().find("_hf_quant_config") == std::string::npos)
          files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(common::python_nonfinite_to_null(common::read_file(f)));
    } catch (const std::exception&) {
      continue;
    }
    if (!j.is_object() ||
        architecture_of(j.value("model_type", std::string())) != architecture_of(model_type))
      continue;
    const std::string name = j.value("_name_or_path", std::string());
    const std::string file = common::ascii_lower(f.filename().string());
    if (org_of(name) != org && file.rfind(org + "--", 0) != 0) continue;
    const auto q = j.find("quantization_config");
    if (q == j.end() || !q->is_object() || q->value("quant_method", std::string()) != "fp8" ||
        !q->contains("weight_block_size"))
      continue;
    nlohmann::json recipe = *q;
    if (auto keep = recipe.find("modules_to_not_convert"); keep != recipe.end() && keep->is_array()) {
      nlohmann::json kept = nlohmann::json::array();
      for (const auto& m : *keep)
        if (m.is_string() && m.get<std::string>().find("layers.") == std::string::npos) kept.push_back(m);
      *keep = std::move(kept);
    }
    return std::pair{std::move(recipe), f};
  }
  return std::nullopt;
}

/// A re-quantized checkpoint whose own config is nowhere (nvidia/DeepSeek-R1-0528-FP4-V2): its base
/// checkpoint's config with the ModelOpt quantization of the same organisation's checkpoint of the same
/// architecture (model_type) and quant_algo in model-configs/aic, the first by file name. Which layers a
/// re-quantization keeps unquantized is a choice of its publisher, so the recipe is taken from the
/// publisher's own checkpoint of that architecture, never invented; no such sibling, no config. Each miss
/// is appended to `tried`.
std::optional<ModelSpec> requantized_model(const std::string& model, std::vector<std::string>& tried) {
  const auto r = requantized_name(model);
  if (!r || !hub::is_repo_id(model) || model.find('/') == std::string::npos) return std::nullopt;
  const auto base_file = base_config_file(r->base);
  if (!base_file) {
    tried.push_back("the data dir's config of " + r->base + ", for the re-quantization " + model + " (none)");
    return std::nullopt;
  }
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(common::python_nonfinite_to_null(common::read_file(*base_file)));
  } catch (const std::exception&) {
    return std::nullopt;  // named by load_config when asked for by itself
  }
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    return std::nullopt;
  const std::string model_type = config["model_type"].get<std::string>();
  const std::string org = common::ascii_lower(model.substr(0, model.find('/'))) + "--";
  const fs::path aic = common::data_dir() / "model-configs" / "aic";
  // The base config with `recipe`, the quantization_config of `recipe_file` ("the same publisher's
  // `sibling` of this architecture"), said as an assumption.
  auto borrowed = [&](nlohmann::json recipe, const fs::path& recipe_file, const std::string& what,
                      const std::string& sibling, const std::string& architecture) {
    config["quantization_config"] = std::move(recipe);
    config["_name_or_path"] = model;
    ModelSpec m = from_config(config, base_file->string());
    m.config_assumption = ModelSpec::ConfigAssumption::kBorrowedRecipe;
    m.config_assumption_note = fmt::format(
        "no config of {} was found: the config of its base checkpoint {} with the {} recipe of {} (the same "
        "publisher's {} of this architecture, {}) is assumed; give the checkpoint's own config.json to use "
        "it",
        model, base_file->filename().string(), what, recipe_file.filename().string(), sibling, architecture);
    m.config_source =
        base_file->string() + " + the quantization of " + recipe_file.filename().string() + " (assumed)";
    return m;
  };
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(aic, ec))
    for (const auto& e : fs::directory_iterator(aic, ec)) {
      const std::string f = common::ascii_lower(e.path().filename().string());
      if (f.rfind(org, 0) == 0 && f.size() > 12 && f.compare(f.size() - 12, 12, "_config.json") == 0 &&
          f.find("_hf_quant_config.json") == std::string::npos)
        files.push_back(e.path());
    }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    nlohmann::json sibling;
    try {
      sibling = nlohmann::json::parse(common::python_nonfinite_to_null(common::read_file(f)));
    } catch (const std::exception&) {
      continue;
    }
    if (!sibling.is_object() || sibling.value("model_type", std::string()) != model_type) continue;
    auto found = modelopt_body(f, sibling);
    if (!found || found->first.value("quant_algo", std::string()) != r->quant_algo) continue;
    auto& [body, recipe_file] = *found;
    body["quant_method"] = "modelopt";
    return borrowed(std::move(body), recipe_file, "ModelOpt " + r->quant_algo, "checkpoint", model_type);
  }
  // ORG/NAME-FP8 by the base's own publisher (Qwen/Qwen3.5-397B-A17B-FP8): its fine-grained FP8 recipe as
  // on its other FP8 checkpoints of this architecture (quant_method fp8, 128x128 blocks), not ModelOpt's.
  if (r->quant_algo == "FP8")
    if (auto found = publisher_block_fp8_recipe(org.substr(0, org.size() - 2), model_type))
      return borrowed(std::move(found->first), found->second, "block-FP8", "FP8 checkpoint",
                      architecture_of(model_type));
  tried.push_back(fmt::format(
      "{} {} checkpoint of architecture {} by the same publisher in {}, whose recipe the re-quantization {} "
      "could take (none)",
      r->quant_algo == "NVFP4" ? "an" : "a", r->quant_algo, model_type, aic.string(), model));
  return std::nullopt;
}

/// The config.json of `model` in a Hugging Face cache snapshot, read with the ModelOpt file beside it. A
/// quantized name whose snapshot states no quantization (a config.json fetched without its
/// hf_quant_config.json, e.g. by servelab before it fetched both) is read in the model dtype and says so.
ModelSpec cached_checkpoint(const std::string& model, const fs::path& config_json) {
  ModelSpec m = load_config_with_modelopt(config_json);
  const auto name = requantized_name(model);
  if (!name || m.quantization.method != QuantMethod::kNone) return m;
  m.config_assumption = ModelSpec::ConfigAssumption::kQuantizationUnstated;
  m.config_assumption_note = fmt::format(
      "the cached config.json of {} ({}) states no quantization and no hf_quant_config.json lies beside it: "
      "read as {} weights though its name says {}; fetch that file (`hf download {} hf_quant_config.json`) "
      "or give the checkpoint folder",
      model, config_json.string(), dtype_name(m.dtype), name->quant_algo, model);
  return m;
}

}  // namespace

ModelSpec resolve_model(const std::string& model, const hub::FetchRequest& fetch) {
  std::vector<std::string> tried;
  std::error_code ec;
  const bool pinned = !fetch.revision.empty();
  hub::HubOptions hub_options = hub::options_from_environment();
  hub_options.log = fetch.log;
  auto from_hub = [&]() -> std::optional<ModelSpec> {
    if (!fetch.download || !hub::is_repo_id(model)) return std::nullopt;
    try {
      const hub::Snapshot snap = hub::fetch_files(
          model, {{"config.json", true}, {"hf_quant_config.json", false}}, fetch.revision, hub_options);
      return load_config_with_modelopt(*snap.files.at("config.json"));
    } catch (const hub::HubError& e) {
      tried.push_back(std::string("Hugging Face Hub: ") + e.what());
      return std::nullopt;
    }
  };
  const fs::path as_path(model);
  // A checkpoint's own files: config.json with a ModelOpt hf_quant_config.json beside it, as vLLM, SGLang
  // and TensorRT-LLM read a ModelOpt checkpoint (its config.json alone says nothing of the quantization).
  if (fs::is_directory(as_path, ec)) {
    if (fs::is_regular_file(as_path / "config.json", ec)) return load_config_with_modelopt(as_path);
    tried.push_back("directory " + as_path.string() + " (exists, but holds no config.json)");
  } else if (fs::is_regular_file(as_path, ec)) {
    return load_config_with_modelopt(as_path);
  } else {
    tried.push_back("path " + as_path.string() + " (does not exist)");
  }
  if (pinned) {  // that revision only: its snapshot in the cache, else the Hub
    if (hub::is_repo_id(model)) {
      if (auto f = hub::cached_file(model, "config.json", fetch.revision, hub_options))
        return load_config_with_modelopt(*f);
      tried.push_back(
          "Hugging Face cache " +
          (hub_options.cache_dir / hub::repo_folder_name(model) / "snapshots" / "*" / "config.json")
              .string() +
          " at revision " + fetch.revision);
    }
    if (auto m = from_hub()) return *m;
    std::string message = "unknown model \"" + model + "\" at revision " + fetch.revision + "; searched:";
    for (const auto& t : tried) message += "\n  - " + t;
    throw std::runtime_error(message);
  }
  // A real node's Hugging Face cache first: its config.json is the model's own file.
  const auto slash = model.find('/');
  if (slash != std::string::npos && slash > 0 && model.find('/', slash + 1) == std::string::npos) {
    const std::string repo = "models--" + model.substr(0, slash) + "--" + model.substr(slash + 1);
    for (const fs::path& hub : hf_hub_dirs()) {
      if (auto f = hf_cache_config(hub, repo)) return cached_checkpoint(model, *f);
      tried.push_back("Hugging Face cache " + (hub / repo / "snapshots" / "*" / "config.json").string());
    }
  }
  if (names_deepseek_v32(model)) {
    ModelSpec m = deepseek_v32();
    if (common::ascii_lower(model) != common::ascii_lower(m.id))
      m.config_source += ", resolved from \"" + model + "\"";
    return m;
  }
  tried.push_back(
      "built-in models (DeepSeek-V3.2: the name is not DeepSeek's own checkpoint, \"DeepSeek-V3.2\", -Exp or "
      "-Speciale)");
  std::optional<DataDirMatch> other_publisher;
  if (auto m = data_dir_model(model, tried, &other_publisher)) return *m;
  if (auto m = from_hub()) return *m;
  if (const auto base = without_revision_tag(model)) {
    std::vector<std::string> base_tried;  // the base's own misses: the note below says it in one line
    if (auto m = data_dir_model(*base, base_tried)) {
      m->config_source += ", the config of " + *base + " standing in for its dated revision " + model +
                          " (same architecture assumed; give the revision's own config.json to use it)";
      m->config_assumption = ModelSpec::ConfigAssumption::kUndatedRevision;
      m->config_assumption_note =
          "no config of " + model + " was found: the config of " + *base +
          " (its undated checkpoint) is assumed; give the revision's own config.json to use it";
      return *m;
    }
    tried.push_back("the data dir's config of " + *base + ", for the dated revision (none)");
  }
  if (auto m = requantized_model(model, tried)) return *m;
  if (other_publisher) {  // the last resort: OTHER/NAME's config for ORG/NAME
    ModelSpec m = load_config(other_publisher->file);
    m.config_assumption = ModelSpec::ConfigAssumption::kOtherPublisher;
    m.config_assumption_note = "no config of " + model + " was found: the config of " +
                               other_publisher->other_publisher +
                               " (another publisher's checkpoint of that name) is assumed" +
                               (requantized_name(model) ? ", with its quantization recipe" : "") +
                               "; give the checkpoint's own config.json to use it";
    m.config_source += " (" + other_publisher->other_publisher + ", assumed for " + model + ")";
    return m;
  }
  std::string message = "unknown model \"" + model + "\"; searched:";
  for (const auto& t : tried) message += "\n  - " + t;
  if (const auto near = near_names(model); !near.empty()) {
    message += "\nThe data dir has configs of near names (a renamed or re-published checkpoint?):";
    for (std::size_t i = 0; i < near.size(); ++i) message += (i ? ", " : " ") + near[i];
    message += "; name one of them to use its config.";
  }
  message +=
      "\nGive the model's config.json (sim: --model-config FILE; a tune study: [model] config = \"FILE\"), "
      "or "
      "put it in the Hugging Face cache.";
  throw std::runtime_error(message);
}

}  // namespace servelab::model
