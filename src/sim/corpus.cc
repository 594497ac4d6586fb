#include "servelab/sim/corpus.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "servelab/common/text.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"

namespace servelab::sim {
namespace {

using nlohmann::json;

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot open corpus file " + p.string());
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("corpus file " + p.string() + ": invalid JSON: " + e.what());
  }
}

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// guidellm's default concurrency cap (settings.max_concurrency = 512) [recalled, guidellm 0.3 settings;
// consistent with "maximum_request_concurrency": 512 in every rate-1000 block of the corpus].
constexpr int kGuidellmMaxConcurrency = 512;

CorpusPoint perflab_point(const json& p, const std::string& file, std::size_t index) {
  CorpusPoint c;
  const std::string where = fmt::format("{}: points[{}]", file, index);
  try {
    c.id = p.at("id").get<std::string>();
    c.study = p.at("study").get<std::string>();
    c.label = p.value("label", "");
    c.engine = p.at("engine").get<std::string>();
    c.engine_version = p.value("engine_version", "");
    c.gpu = p.at("gpu").get<std::string>();
    // The node as the study states it, or larger when a launch of the study used more GPUs than stated
    // (gpt-oss-120b on "2 x H100" also measured a TP4 launch).
    c.gpu_count = std::max(p.value("gpu_count_stated", 1), p.value("gpus_used_by_launch", 1));
    for (const auto& a : p.at("launch_argv")) c.argv.push_back(a.get<std::string>());
    if (p.contains("env") && p["env"].is_object())
      for (const auto& [k, v] : p["env"].items()) c.env[k] = v.get<std::string>();
    c.command = join(c.argv);
    c.suspect = p.value("suspect", false);
    const std::string status = p.at("status").get<std::string>();
    c.status = status == "ok"        ? CorpusPoint::Status::kOk
               : status == "partial" ? CorpusPoint::Status::kPartial
                                     : CorpusPoint::Status::kFailed;
    if (status != "ok" && status != "partial" && status != "failed")
      throw std::runtime_error("status \"" + status + "\" is not ok/partial/failed");
    if (p.contains("failure") && p["failure"].is_object()) c.failure = p["failure"].value("message", "");

    const json& w = p.at("workload");
    CorpusWorkload& wl = c.workload;
    wl.key = w.at("key").get<std::string>();
    wl.tool = w.value("tool", "vllm bench serve");
    wl.dataset = w.at("dataset").get<std::string>();
    wl.num_prompts = w.at("num_prompts").get<int>();
    const json& rate = w.at("request_rate");
    wl.request_rate = rate.is_string() ? std::numeric_limits<double>::infinity() : rate.get<double>();
    const bool guidellm = wl.tool.find("guidellm") != std::string::npos;
    wl.constant_arrivals = guidellm;
    if (w.contains("max_concurrency") && w["max_concurrency"].is_number_integer())
      wl.max_concurrency = w["max_concurrency"].get<int>();
    else if (guidellm)
      wl.max_concurrency = kGuidellmMaxConcurrency;
    wl.input_len = w.value("input_len", 0);
    wl.output_len = w.value("output_len", 0);

    const json& m = p.at("metrics");
    if (auto v = number(m, "total_input_tokens")) wl.total_input_tokens = static_cast<long long>(*v);
    if (auto v = number(m, "total_generated_tokens")) wl.total_output_tokens = static_cast<long long>(*v);
    const json& me = p.at("measured");
    CorpusMeasurement& mm = c.measured;
    mm.total_tok_s = number(me, "total_token_throughput");
    mm.output_tok_s = number(me, "output_token_throughput");
    mm.mean_ttft_ms = number(me, "mean_ttft_ms");
    mm.p99_ttft_ms = number(m, "p99_ttft_ms");
    mm.median_ttft_ms = number(m, "median_ttft_ms");
    mm.duration_s = number(me, "duration_s");
    if (auto v = number(me, "successful_requests")) mm.successful = static_cast<int>(*v);
    const auto tpot = number(me, "tpot_comparable_ms");
    if (tpot && *tpot > 0) mm.mean_tpot_ms = tpot;
    if (c.status != CorpusPoint::Status::kFailed) {
      if (!mm.mean_ttft_ms)
        c.not_comparable.push_back("TTFT: not reported (the study's conclusion table only)");
      // A time to first token is at least a network round trip and a prefill step, never 0: a median of 0 ms
      // means no first token was timed for half of the requests or more (qwen3.5-9b__h100#003, a partial MTP
      // run: median TTFT and every ITL figure 0 ms, 45 input tokens per request counted), so the mean is
      // not a TTFT either.
      if (const auto median_ttft = number(m, "median_ttft_ms");
          mm.mean_ttft_ms && median_ttft && *median_ttft <= 0) {
        c.not_comparable.push_back(
            "TTFT: the run reports a median TTFT of 0 ms (no first token timed for half "
            "of the requests), so its mean is not a time to first token");
        mm.mean_ttft_ms.reset();
      }
      if (!tpot) {
        c.not_comparable.push_back("TPOT: not reported");
      } else if (*tpot <= 0) {
        c.not_comparable.push_back("TPOT: the run reports a mean ITL of 0 ms");
      } else if (guidellm) {
        const auto median_itl = number(m, "median_itl_ms");
        if (median_itl && *median_itl <= 0) {
          c.not_comparable.push_back(
              "TPOT: guidellm's median ITL is 0 ms (tokens reach the client in bursts), so its ITL is not a "
              "per-token time");
          mm.mean_tpot_ms.reset();
        }
      }
      if (c.status == CorpusPoint::Status::kPartial)
        c.caveats.push_back(
            fmt::format("partial run: {}", c.failure.empty() ? "some requests failed" : c.failure));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": " + e.what());
  }
  return c;
}

// InferenceMAX (shared/reference/inferencemax/README.md): the GPUs of AMD's Instinct line in the corpus.
bool inferencemax_amd_gpu(const std::string& gpu) {
  return gpu.size() > 2 && gpu.compare(0, 2, "MI") == 0 && std::isdigit(static_cast<unsigned char>(gpu[2]));
}

// Why the twin cannot model an InferenceMAX point ("" when it can): every reason that applies, joined.
std::string inferencemax_refusal(const CorpusPoint& c) {
  std::vector<std::string> why;
  if (c.multinode || c.disaggregated)
    why.push_back(fmt::format(
        "{}{} ({}, {} GPUs) is not modelled: the twin models one engine replica on one node{}",
        c.multinode ? "multi-node " : "", c.disaggregated ? "disaggregated serving" : "serving", c.engine,
        c.gpu_count,
        c.argv.empty() ? ", and the engine flags come from an external recipe (no launch argv)" : ""));
  if (inferencemax_amd_gpu(c.gpu))
    why.push_back(
        fmt::format("AMD {} (ROCm kernels) is not modelled: the twin models NVIDIA GPUs only", c.gpu));
  if (c.engine == "atom")
    why.push_back(
        "engine \"atom\" (AMD's ATOM) is not modelled (the twin models vLLM, SGLang and TensorRT-LLM)");
  std::string s;
  for (const auto& w : why) s += (s.empty() ? "" : "; ") + w;
  return s;
}

std::map<std::string, std::string> inferencemax_strings(const json& j, const char* key) {
  std::map<std::string, std::string> out;
  if (j.contains(key) && j[key].is_object())
    for (const auto& [k, v] : j[key].items()) out[k] = v.get<std::string>();
  return out;
}

CorpusPoint inferencemax_point(const json& p, const std::string& file, std::size_t index) {
  CorpusPoint c;
  const std::string where = fmt::format("{}: points[{}]", file, index);
  try {
    c.id = p.at("id").get<std::string>();
    c.study = p.at("study").get<std::string>();
    c.engine = p.at("engine").get<std::string>();
    c.engine_version = p.value("engine_version", "");
    c.gpu = p.at("gpu").get<std::string>();
    c.gpu_count = p.at("gpu_count").get<int>();
    c.disaggregated = p.value("disagg", false);
    c.multinode = p.value("multinode", false);
    if (p.at("launch_argv").is_array()) {
      for (const auto& a : p["launch_argv"]) c.argv.push_back(a.get<std::string>());
      c.command = join(c.argv);
    } else if (p.contains("launch_wrapper_argv") && p["launch_wrapper_argv"].is_array()) {
      std::vector<std::string> wrapper;
      for (const auto& a : p["launch_wrapper_argv"]) wrapper.push_back(a.get<std::string>());
      c.command = join(wrapper);
    }
    // The engine sees the launcher's variables and the script's exports over them.
    c.env = inferencemax_strings(p, "launcher_env");
    for (auto& [k, v] : inferencemax_strings(p, "env")) c.env[k] = std::move(v);
    c.config_files = inferencemax_strings(p, "config_files");
    for (const auto& a : p.value("assumed", json::array())) c.assumed.push_back(a.get<std::string>());
    if (p.contains("parallelism") && p["parallelism"].is_object()) {
      const json& par = p["parallelism"];
      c.label = fmt::format("{} tp{}", c.engine_version, par.value("tp", 1));
      if (par.value("ep", 1) > 1) c.label += fmt::format(" ep{}", par.value("ep", 1));
      if (par.value("dp_attention", false)) c.label += " dp-attn";
    } else {
      c.label = fmt::format("{} {} GPUs", c.engine_version, c.gpu_count);
    }
    if (p.value("spec_decoding", "none") != "none") c.label += " " + p["spec_decoding"].get<std::string>();
    const std::string status = p.at("status").get<std::string>();
    if (status != "ok") throw std::runtime_error("status \"" + status + "\" is not ok");

    const json& w = p.at("workload");
    CorpusWorkload& wl = c.workload;
    wl.key = w.at("key").get<std::string>();
    wl.tool = w.value("tool", "benchmark_serving.py");
    wl.dataset = w.at("dataset").get<std::string>();
    wl.input_len = w.at("input_len").get<int>();
    wl.output_len = w.at("output_len").get<int>();
    if (w.contains("random_range_ratio") && w["random_range_ratio"].is_number())
      wl.random_range_ratio = w["random_range_ratio"].get<double>();
    if (w.at("num_prompts").is_number_integer()) {
      wl.num_prompts = w["num_prompts"].get<int>();
    } else if (w.contains("num_prompts_candidates") && w["num_prompts_candidates"].is_object()) {
      // The count depends on the runner that ran the point; the record assumes its `recipe`'s runner.
      const std::string recipe = p.value("recipe", "");
      const json& cand = w["num_prompts_candidates"];
      if (!cand.contains(recipe))
        throw std::runtime_error(
            "workload.num_prompts is null and num_prompts_candidates has no entry for recipe \"" + recipe +
            "\"");
      wl.num_prompts = cand[recipe].get<int>();
      std::string others;
      for (const auto& [k, v] : cand.items())
        if (k != recipe) others += fmt::format("{}{} ({})", others.empty() ? "" : ", ", v.get<int>(), k);
      c.assumed.push_back(fmt::format("num_prompts {} of the assumed runner's {}; other runners: {}",
                                      wl.num_prompts, recipe, others));
    }
    const json& rate = w.at("request_rate");
    wl.request_rate = rate.is_string() ? std::numeric_limits<double>::infinity() : rate.get<double>();
    if (rate.is_string() && rate.get<std::string>() != "inf")
      throw std::runtime_error("workload.request_rate \"" + rate.get<std::string>() +
                               "\" is neither a number nor \"inf\"");
    if (w.contains("max_concurrency") && w["max_concurrency"].is_number_integer())
      wl.max_concurrency = w["max_concurrency"].get<int>();

    const json& me = p.at("measured");
    CorpusMeasurement& mm = c.measured;
    mm.total_tok_s = number(me, "total_token_throughput");
    mm.output_tok_s = number(me, "output_token_throughput");
    mm.input_tok_s = number(me, "input_token_throughput");
    mm.mean_ttft_ms = number(me, "mean_ttft_ms");
    mm.p99_ttft_ms = number(me, "p99_ttft_ms");
    mm.median_ttft_ms = number(me, "median_ttft_ms");
    mm.mean_tpot_ms = number(me, "mean_tpot_ms");
    mm.mean_e2el_ms = number(me, "mean_e2el_ms");

    c.refusal = inferencemax_refusal(c);
    if (!c.refusal.empty()) {
      c.status = CorpusPoint::Status::kUnsupported;
    } else {
      if (c.argv.empty()) throw std::runtime_error("launch_argv is null on a single-node point");
      if (wl.num_prompts < 1) throw std::runtime_error("workload.num_prompts is missing");
      if (!mm.mean_ttft_ms) c.not_comparable.push_back("TTFT: not reported");
      if (!mm.mean_tpot_ms) c.not_comparable.push_back("TPOT: not reported");
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": " + e.what());
  }
  return c;
}

// What a seed-measurements.json array does not say about its runs, read from the study record beside it
// (seed-study.md): the model, the node, each engine's release and each scenario's prompt count.
struct SeedRecord {
  std::string study;                            ///< "<model basename>__<gpu>", lower case (perflab's form)
  std::string gpu;                              ///< "H200"
  int gpu_count = 0;                            ///< GPUs of the node
  std::map<std::string, std::string> versions;  ///< engine module name -> release
  std::map<std::string, int> prompts;           ///< scenario id -> number of prompts
};

std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t i = line.find('|');
  while (i != std::string::npos) {
    const std::size_t j = line.find('|', i + 1);
    if (j == std::string::npos) break;
    cells.push_back(common::trim(line.substr(i + 1, j - i - 1), " \t`"));
    i = j;
  }
  return cells;
}

// Reads the record's "- Model:", "- Hardware: N × GPU" and "- Engines: <product> <release>, ..." lines
// and the "| id | ... | prompts | ..." table of its "Workload scenarios" section. Throws
// std::runtime_error naming the file and what it lacks.
SeedRecord read_seed_record(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw std::runtime_error("cannot open " + file.string() +
                             " (the study record a seed-measurements.json array needs beside it: its model, "
                             "node, engine releases and prompt counts)");
  SeedRecord r;
  std::string model, line;
  static const std::regex kModel(R"(^\s*-\s*Model:\s*`?([^\s`(]+))");
  static const std::regex kHardware(R"(^\s*-\s*Hardware:\s*(\d+)\s*(?:\xC3\x97|x)\s*([A-Za-z0-9]+))");
  static const std::regex kEngines(R"(^\s*-\s*Engines:\s*(.*?)\.?\s*$)");
  int prompts_col = -1;
  bool in_scenarios = false;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0)
      in_scenarios = common::ascii_lower(line).find("workload scenarios") != std::string::npos;
    if (model.empty() && std::regex_search(line, m, kModel)) model = m[1];
    if (r.gpu.empty() && std::regex_search(line, m, kHardware)) r.gpu_count = std::stoi(m[1]), r.gpu = m[2];
    if (r.versions.empty() && std::regex_search(line, m, kEngines)) {
      std::stringstream items(m[1].str());
      for (std::string item; std::getline(items, item, ',');) {
        item = common::trim(item, " \t`");
        const auto space = item.rfind(' ');
        if (space == std::string::npos) continue;
        const std::string product = common::ascii_lower(item.substr(0, space));
        for (const auto& e : engines::engine_modules())
          if (common::ascii_lower(e.product_name) == product) r.versions[e.name] = item.substr(space + 1);
      }
    }
    if (!in_scenarios || line.find('|') == std::string::npos) continue;
    const auto cells = table_cells(line);
    if (prompts_col < 0) {
      for (std::size_t k = 0; k < cells.size(); ++k)
        if (common::ascii_lower(cells[k]) == "prompts") prompts_col = static_cast<int>(k);
      continue;
    }
    if (static_cast<int>(cells.size()) <= prompts_col || cells[0].empty() || cells[0][0] == '-') continue;
    const std::string id = cells[0].substr(0, cells[0].find_first_of(" \t("));
    try {
      r.prompts[id] = std::stoi(cells[prompts_col]);
    } catch (const std::exception&) {
      throw std::runtime_error(fmt::format("{}: scenario {}: prompts \"{}\" is not a number", file.string(),
                                           id, cells[prompts_col]));
    }
  }
  std::vector<std::string> missing;
  if (model.empty()) missing.push_back("a \"- Model: <org/name>\" line");
  if (r.gpu.empty()) missing.push_back("a \"- Hardware: <N> × <GPU>\" line");
  if (r.versions.empty()) missing.push_back("a \"- Engines: <engine> <release>, ...\" line");
  if (r.prompts.empty()) missing.push_back("a \"Workload scenarios\" table with a prompts column");
  if (!missing.empty())
    throw std::runtime_error(
        fmt::format("{}: the study record has no {}", file.string(), fmt::join(missing, ", no ")));
  r.study = common::ascii_lower(model.substr(model.rfind('/') + 1)) + "__" + common::ascii_lower(r.gpu);
  return r;
}

// Study commands carry JSON values unquoted (`--speculative-config {"method":"mtp",...}`): POSIX word
// splitting would strip the JSON's quotes, so those are split on whitespace.
std::vector<std::string> seed_argv(const std::string& command) {
  if (command.find('{') != std::string::npos) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : command) {
      if (ch == ' ' || ch == '\t' || ch == '\n') {
        if (!cur.empty()) out.push_back(cur), cur.clear();
      } else {
        cur += ch;
      }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
  }
  return engines::split_command_line(command);
}

CorpusPoint seed_point(const json& e, const SeedRecord& record, const std::string& file, std::size_t index) {
  CorpusPoint c;
  const std::string where = fmt::format("{}: [{}]", file, index);
  try {
    c.engine = e.at("engine").get<std::string>();
    c.label = e.at("config").get<std::string>();
    const std::string scenario = e.at("scenario").get<std::string>();
    c.id = fmt::format("{}#{}/{}@{}", record.study, c.engine, c.label, scenario);
    c.study = record.study;
    const auto version = record.versions.find(c.engine);
    if (version == record.versions.end())
      throw std::runtime_error("the study record gives no release of engine \"" + c.engine + "\"");
    c.engine_version = version->second;
    c.gpu = record.gpu;
    c.gpu_count = record.gpu_count;
    c.command = e.at("command").get<std::string>();
    c.argv = seed_argv(c.command);
    for (const auto& v : e.value("env", json::array())) {
      const std::string s = v.get<std::string>();
      const auto eq = s.find('=');
      if (eq == std::string::npos) throw std::runtime_error("env entry \"" + s + "\" has no '='");
      std::string value = s.substr(eq + 1);
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front())
        value = value.substr(1, value.size() - 2);
      c.env[s.substr(0, eq)] = value;
    }
    CorpusWorkload& w = c.workload;
    w.key = scenario;
    w.request_rate = std::numeric_limits<double>::infinity();
    static const std::regex kRandom(R"(random-(\d+)in-(\d+)out)");
    std::smatch sm;
    const auto prompts = record.prompts.find(scenario);
    if (prompts == record.prompts.end())
      throw std::runtime_error("scenario \"" + scenario + "\" is not in the study record's scenario table");
    w.num_prompts = prompts->second;
    if (scenario.rfind("sharegpt", 0) == 0) {
      w.dataset = "sharegpt";
    } else if (std::regex_match(scenario, sm, kRandom)) {
      w.dataset = "random";
      w.input_len = std::stoi(sm[1]);
      w.output_len = std::stoi(sm[2]);
    } else {
      throw std::runtime_error("unknown scenario \"" + scenario + "\"");
    }
    if (e.contains("failure")) {
      c.status = CorpusPoint::Status::kFailed;
      c.failure = e["failure"].get<std::string>();
    } else if (e.contains("metrics") && e["metrics"].is_string()) {
      c.status = CorpusPoint::Status::kWithheld;
    } else {
      const json& m = e.at("metrics");
      c.measured.total_tok_s = number(m, "Total Token throughput (tok/s)");
      c.measured.output_tok_s = number(m, "Output token throughput (tok/s)");
      c.measured.mean_ttft_ms = number(m, "Mean TTFT (ms)");
      c.measured.p99_ttft_ms = number(m, "P99 TTFT (ms)");
      c.measured.median_ttft_ms = number(m, "Median TTFT (ms)");
      c.measured.mean_tpot_ms = number(m, "Mean TPOT (ms)");
      c.measured.duration_s = number(m, "Benchmark duration (s)");
      if (auto v = number(m, "Successful requests")) c.measured.successful = static_cast<int>(*v);
      if (auto v = number(m, "Total input tokens")) w.total_input_tokens = static_cast<long long>(*v);
      if (auto v = number(m, "Total generated tokens")) w.total_output_tokens = static_cast<long long>(*v);
      if (c.measured.successful && *c.measured.successful < w.num_prompts) {
        c.status = CorpusPoint::Status::kPartial;
        c.caveats.push_back(
            fmt::format("partial run: {} of {} requests succeeded", *c.measured.successful, w.num_prompts));
      }
    }
  } catch (const std::exception& ex) {
    throw std::runtime_error(where + ": " + ex.what());
  }
  return c;
}

void add_points(Corpus& corpus, const std::filesystem::path& file) {
  const json j = read_json(file);
  const std::string name = file.string();
  if (j.is_array()) {  // seed-measurements.json layout, its study record beside it
    const SeedRecord record = read_seed_record(file.parent_path() / "seed-study.md");
    for (std::size_t i = 0; i < j.size(); ++i) corpus.points.push_back(seed_point(j[i], record, name, i));
  } else if (j.is_object() && j.contains("points") && j["points"].is_array() && j.contains("recipes")) {
    // inferencemax/points.json layout (its launch recipes beside the points)
    const json& pts = j["points"];
    for (std::size_t i = 0; i < pts.size(); ++i) corpus.points.push_back(inferencemax_point(pts[i], name, i));
  } else if (j.is_object() && j.contains("points") && j["points"].is_array()) {
    const json& pts = j["points"];
    for (std::size_t i = 0; i < pts.size(); ++i) corpus.points.push_back(perflab_point(pts[i], name, i));
  } else {
    throw std::runtime_error("corpus file " + name +
                             ": neither a seed-measurements array nor an object with \"points\"");
  }
  corpus.sources.push_back(name);
}

}  // namespace

const char* corpus_status_name(CorpusPoint::Status s) {
  switch (s) {
    case CorpusPoint::Status::kOk:
      return "ok";
    case CorpusPoint::Status::kPartial:
      return "partial";
    case CorpusPoint::Status::kFailed:
      return "failed";
    case CorpusPoint::Status::kWithheld:
      return "withheld";
    case CorpusPoint::Status::kUnsupported:
      return "unsupported";
  }
  return "?";
}

std::string sweep_key(const CorpusPoint& c) {
  const auto& w = c.workload;
  std::string k = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", c.study,
                              c.engine, c.engine_version, c.gpu, c.gpu_count, c.command, c.disaggregated,
                              w.tool, w.dataset, w.input_len, w.output_len, w.constant_arrivals);
  k += "\x1f" + (w.random_range_ratio ? fmt::format("{}", *w.random_range_ratio) : std::string("-"));
  // With a concurrency cap the load is the cap and the request rate is part of the shape, else the rate.
  k += "\x1f" + (w.max_concurrency ? fmt::format("rate {}", w.request_rate) : std::string("uncapped"));
  for (const auto& a : c.argv) k += "\x1f" + a;
  for (const auto& [name, value] : c.env) k += "\x1e" + name + "=" + value;
  for (const auto& [name, text] : c.config_files) k += "\x1d" + name + "=" + text;
  return k;
}

double sweep_load(const CorpusWorkload& w) {
  return w.max_concurrency ? static_cast<double>(*w.max_concurrency) : w.request_rate;
}

namespace {

// The least of `value` over the points of `sweep` at `load` or below, each scaled to `load` in proportion
// to the concurrency, and the point it came from (null when none has the value).
template <typename Value>
std::pair<const CorpusPoint*, double> least_scaled(const std::vector<CorpusPoint*>& sweep, double load,
                                                   Value value) {
  const CorpusPoint* ref = nullptr;
  double ref_ms = 0;
  for (const auto* o : sweep) {
    const double o_load = *o->workload.max_concurrency;
    const auto v = value(*o);
    if (o_load > load || !v || *v <= 0) continue;
    const double scaled = *v * load / o_load;
    if (!ref || scaled < ref_ms) ref = o, ref_ms = scaled;
  }
  return {ref, ref_ms};
}

}  // namespace

void mark_ttft_stalls(std::vector<CorpusPoint>& points) {
  // Closed-loop runs (a concurrency cap, every request sent at once) measured with a p99 TTFT, whose TTFT
  // no other rule set aside (a median of 0 ms, ...).
  auto closed_loop = [](const CorpusPoint& c) {
    const bool ttft_set_aside = std::any_of(c.not_comparable.begin(), c.not_comparable.end(),
                                            [](const std::string& n) { return n.rfind("TTFT:", 0) == 0; });
    return !c.suspect && !ttft_set_aside && c.workload.max_concurrency && *c.workload.max_concurrency > 0 &&
           !std::isfinite(c.workload.request_rate) && c.measured.p99_ttft_ms && *c.measured.p99_ttft_ms > 0 &&
           (c.status == CorpusPoint::Status::kOk || c.status == CorpusPoint::Status::kPartial);
  };
  std::map<std::string, std::vector<CorpusPoint*>> sweeps;
  for (auto& c : points)
    if (closed_loop(c)) sweeps[sweep_key(c)].push_back(&c);
  std::vector<CorpusPoint*> stalled;
  for (auto& [key, sweep] : sweeps) {
    for (auto* c : sweep) {
      if (!c->measured.mean_ttft_ms || !c->measured.median_ttft_ms) continue;
      const double load = *c->workload.max_concurrency;
      const auto [ref, ref_ms] =
          least_scaled(sweep, load, [](const CorpusPoint& o) { return o.measured.p99_ttft_ms; });
      const double p99 = *c->measured.p99_ttft_ms;
      if (ref == c || p99 < kStallFactor * ref_ms || p99 - ref_ms < kStallExcessMs) continue;
      // A queue for the KV cache lifts the median request's wait with the tail; a stall leaves it.
      const auto median_ref =
          least_scaled(sweep, load, [](const CorpusPoint& o) { return o.measured.median_ttft_ms; });
      if (*c->measured.median_ttft_ms > kStallFactor * median_ref.second) continue;
      const int ref_load = *ref->workload.max_concurrency;
      c->not_comparable.push_back(fmt::format(
          "TTFT: the p99 TTFT ({:.1f} s) is {:.0f}x the tail this launch shows at this load or below ({:.1f} "
          "s: {}{}) while its median ({:.2f} s) is not: some requests were held ~{:.0f} s outside the "
          "engine's queues (a stall: repeats of one configuration show it or not), so the mean TTFT measures "
          "the stall, not prefill and queueing",
          p99 / 1000, p99 / ref_ms, ref_ms / 1000, ref->id,
          ref_load == static_cast<int>(load) ? fmt::format(", a run at the same concurrency {}", ref_load)
                                             : fmt::format(" at concurrency {}, scaled to {} in proportion",
                                                           ref_load, static_cast<int>(load)),
          *c->measured.median_ttft_ms / 1000, (p99 - ref_ms) / 1000));
      // The benchmark's duration holds the stalled requests' wait too: the throughput measures the stall.
      const auto& ref_tok_s = ref->measured.total_tok_s;
      const auto& tok_s = c->measured.total_tok_s;
      c->not_comparable.push_back(
          "tok/s: the benchmark's duration includes the stall (TTFT, above), so its throughput measures the "
          "stall too" +
          (ref_load == static_cast<int>(load) && ref_tok_s && tok_s && *ref_tok_s > 0
               ? fmt::format(" ({:.0f} tok/s against {:.0f} in the repeat without it, {})", *tok_s,
                             *ref_tok_s, ref->id)
               : std::string()));
      stalled.push_back(c);
    }
  }
  // Cleared once every sweep was read: the rule reads p99 and median TTFTs, never a mean or a throughput.
  for (auto* c : stalled) {
    c->measured.mean_ttft_ms.reset();
    c->measured.total_tok_s.reset();
    c->measured.output_tok_s.reset();
    c->measured.input_tok_s.reset();
  }
}

Corpus load_corpus(const std::filesystem::path& path) {
  Corpus corpus;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const std::filesystem::path candidates[] = {path / "seed-measurements.json",
                                                path / "perflab" / "measurements.json",
                                                path / "measurements.json", path / "points.json"};
    for (const auto& f : candidates)
      if (std::filesystem::is_regular_file(f, ec)) add_points(corpus, f);
    if (corpus.sources.empty())
      throw std::runtime_error(
          "corpus directory " + path.string() +
          " holds none of seed-measurements.json, perflab/measurements.json, measurements.json, "
          "points.json");
  } else if (std::filesystem::is_regular_file(path, ec)) {
    add_points(corpus, path);
  } else {
    throw std::runtime_error("corpus " + path.string() + ": no such file or directory");
  }
  if (corpus.points.empty()) throw std::runtime_error("corpus " + path.string() + " holds no points");
  mark_ttft_stalls(corpus.points);
  std::set<std::string> seen;
  for (const auto& p : corpus.points)
    if (seen.insert(p.study).second) corpus.studies.push_back(p.study);
  return corpus;
}

Corpus load_corpora(const std::vector<std::filesystem::path>& paths) {
  if (paths.empty()) throw std::runtime_error("no corpus given");
  Corpus all;
  std::map<std::string, std::string> study_source;           // study -> the corpus path that holds it
  std::map<std::filesystem::path, std::string> file_source;  // file read -> the corpus path that read it
  for (const auto& path : paths) {
    Corpus c = load_corpus(path);
    for (const auto& f : c.sources) {
      if (auto [it, fresh] = file_source.emplace(std::filesystem::weakly_canonical(f), path.string()); !fresh)
        throw std::runtime_error("corpus file " + f + " is read twice: by --corpus " + it->second +
                                 " and by --corpus " + path.string());
      all.sources.push_back(f);
    }
    for (const auto& st : c.studies) {
      if (auto [it, fresh] = study_source.emplace(st, path.string()); !fresh)
        throw std::runtime_error("study " + st + " is in two corpora: " + it->second + " and " +
                                 path.string());
      all.studies.push_back(st);
    }
    for (auto& p : c.points) all.points.push_back(std::move(p));
  }
  return all;
}

}  // namespace servelab::sim
