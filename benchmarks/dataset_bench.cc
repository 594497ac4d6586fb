// dataset_bench: ShareGPT load + sample speed on a large ShareGPT-form file (scripts/gen_large_sharegpt.py),
// against Python's json.load of the same file measured in the same run (the first step of vLLM's
// ShareGPTDataset, before any tokenization).
//
// Usage: dataset_bench [FILE] [--num-prompts N] [--tokenizer SPEC] [--repeat K] [--python PY]
//   FILE defaults to $TMPDIR/servelab_sharegpt_large.json. Prints load MB/s, sample time, and the ratio of
//   Python json.load time (+ vLLM's >=2-turn filter and shuffle) to servelab's load + filter + shuffle.
#include <fmt/format.h>
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include "servelab/dataset/dataset.h"
#include "servelab/tokenizer/tokenizer.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Process CPU time (s): fair on a shared, overloaded machine where wall time mostly measures waiting.
double cpu_s() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

struct Timing {
  double wall_s = -1, cpu_s = -1;
};

/// Time Python takes to json.load the file, filter records with >= 2 turns and shuffle (vLLM's
/// ShareGPTDataset.load_data); negative when the interpreter is unavailable.
Timing python_load(const std::string& python, const std::filesystem::path& path) {
  const std::string cmd = python +
                          " -c \"import json,random,sys,time\n"
                          "t=time.perf_counter(); c=time.process_time()\n"
                          "d=json.load(open(sys.argv[1],encoding='utf-8'))\n"
                          "d=[e for e in d if 'conversations' in e and len(e['conversations'])>=2]\n"
                          "random.seed(0); random.shuffle(d)\n"
                          "print(time.perf_counter()-t, time.process_time()-c, len(d))\" '" +
                          path.string() + "'";
  Timing t;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return t;
  long records = 0;
  if (std::fscanf(pipe, "%lf %lf %ld", &t.wall_s, &t.cpu_s, &records) != 3) t = Timing{};
  if (pclose(pipe) != 0) t = Timing{};
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const char* tmp = std::getenv("TMPDIR");
  std::filesystem::path path = std::filesystem::path(tmp ? tmp : "/tmp") / "servelab_sharegpt_large.json";
  int num_prompts = 1000, repeat = 3;
  std::string tokenizer_spec = "deepseek-ai/DeepSeek-V3", python = "python3";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--num-prompts")
      num_prompts = std::stoi(next());
    else if (a == "--tokenizer")
      tokenizer_spec = next();
    else if (a == "--repeat")
      repeat = std::stoi(next());
    else if (a == "--python")
      python = next();
    else if (!a.empty() && a[0] == '-') {
      fmt::print(stderr, "unknown flag {}\n", a);
      return 2;
    } else
      path = a;
  }
  if (!std::filesystem::exists(path)) {
    fmt::print(stderr, "{} not found: generate it with `python3 scripts/gen_large_sharegpt.py --out {}`\n",
               path.string(), path.string());
    return 2;
  }
  const double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  fmt::print("file: {} ({:.1f} MB); simdjson kernel: {} (built-in on-demand: {})\n", path.string(), mb,
             simdjson::get_active_implementation()->name(), simdjson::builtin_implementation()->name());

  // 1. Load + filter (+ the CPython shuffle, done inside sample_sharegpt; measured separately below).
  Timing load{1e300, 1e300};
  servelab::dataset::ShareGptFile file;
  for (int r = 0; r < repeat; ++r) {
    file = {};
    const double t0 = now_s(), c0 = cpu_s();
    file = servelab::dataset::load_sharegpt_file(path);
    load.wall_s = std::min(load.wall_s, now_s() - t0);
    load.cpu_s = std::min(load.cpu_s, cpu_s() - c0);
  }
  fmt::print(
      "load_sharegpt_file: best of {}: wall {:.3f} s ({:.0f} MB/s), CPU {:.3f} s ({:.0f} MB/s); {} records, "
      "{} with >= 2 turns\n",
      repeat, load.wall_s, mb / load.wall_s, load.cpu_s, mb / load.cpu_s, file.num_records(), file.size());

  // 2. Sample num_prompts with the real tokenizer (shuffle + tokenize until enough pass the filters).
  const double tt0 = now_s();
  const servelab::tokenizer::Tokenizer tok = servelab::tokenizer::load_tokenizer(tokenizer_spec);
  const double tokenizer_s = now_s() - tt0;
  servelab::dataset::DatasetOptions o;
  o.dataset_name = "sharegpt";
  o.dataset_path = path.string();
  o.num_prompts = num_prompts;
  auto count = [&tok](std::string_view text) { return static_cast<int>(tok.encode(text, true).size()); };
  const double s0 = now_s(), sc0 = cpu_s();
  const auto requests = servelab::dataset::sample_sharegpt(file, o, count);
  const Timing sample{now_s() - s0, cpu_s() - sc0};
  file = {};
  const double e0 = now_s(), ec0 = cpu_s();
  const auto end_to_end = servelab::dataset::sample_requests(o, tok);
  const Timing total{now_s() - e0, cpu_s() - ec0};
  fmt::print(
      "sample_sharegpt: {} prompts: wall {:.3f} s, CPU {:.3f} s (shuffle + tokenize + filter); "
      "tokenizer load {:.3f} s (not counted)\n",
      requests.size(), sample.wall_s, sample.cpu_s, tokenizer_s);
  fmt::print("sample_requests end to end (load + sample): wall {:.3f} s, CPU {:.3f} s for {} prompts\n",
             total.wall_s, total.cpu_s, end_to_end.size());

  // Informational: vLLM's default random dataset (1,000 x 1,024 tokens) with the same tokenizer.
  servelab::dataset::DatasetOptions ro;
  ro.num_prompts = num_prompts;
  const double r0 = now_s(), rc0 = cpu_s();
  const auto random_requests = servelab::dataset::sample_requests(ro, tok);
  fmt::print("random dataset (default 1024 in / 128 out): {} prompts: wall {:.3f} s, CPU {:.3f} s\n",
             random_requests.size(), now_s() - r0, cpu_s() - rc0);

  // 3. Reference: Python json.load + vLLM's filter + shuffle of the same file.
  const Timing py = python_load(python, path);
  if (py.wall_s > 0) {
    fmt::print("reference: Python json.load + filter + shuffle: wall {:.3f} s ({:.0f} MB/s), CPU {:.3f} s\n",
               py.wall_s, mb / py.wall_s, py.cpu_s);
    fmt::print(
        "ratio (CPU): Python load / servelab load = {:.1f}x; Python load / servelab load+sample {} = "
        "{:.1f}x\n",
        py.cpu_s / load.cpu_s, num_prompts, py.cpu_s / total.cpu_s);
    fmt::print(
        "ratio (wall): Python load / servelab load = {:.1f}x; Python load / servelab load+sample = {:.1f}x\n",
        py.wall_s / load.wall_s, py.wall_s / total.wall_s);
  } else {
    fmt::print("reference: {} unavailable; no ratio\n", python);
  }
  return 0;
}
