// bench serve's post-run re-tokenization (count_output_tokens) on many large outputs: the client's I/O thread
// count (default: all cores) vs one thread, the sequential loop it replaced, measured in the same run.
// Workload: 50 successful outputs of 1 MB of English-like words each (a hostile server's huge events),
// counted with the GPT-2 tokenizer. Prints both times and the ratio. Usage: retokenize_bench [outputs] [MB
// each]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "servelab/client/client.h"
#include "servelab/client/request.h"
#include "servelab/common/paths.h"
#include "servelab/tokenizer/tokenizer.h"

using namespace servelab;

namespace {

double time_count(const client::ClientOptions& o, const client::LoadResult& input) {
  client::LoadResult r = input;
  const std::vector<std::string> reasoning(r.outputs.size());
  const auto t0 = std::chrono::steady_clock::now();
  client::detail::count_output_tokens(o, reasoning, r);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 50;
  const double mb = argc > 2 ? std::atof(argv[2]) : 1.0;
  const auto tok = tokenizer::Tokenizer::from_file(common::data_dir() / "gpt2-tokenizer.json");
  static const char* words[] = {"the",  "quick", "brown", "fox",   "jumps",
                                "over", "lazy",  "dog",   "token", "stream"};
  std::mt19937 rng(1);
  client::LoadResult base;
  base.outputs.resize(static_cast<std::size_t>(n));
  for (auto& out : base.outputs) {
    out.success = true;
    while (out.generated_text.size() < mb * 1e6) (out.generated_text += words[rng() % 10]) += ' ';
  }
  client::ClientOptions o;
  o.retokenize = [&tok](std::string_view t) { return static_cast<int>(tok.encode(t, false).size()); };
  o.num_threads = 1;
  const double one = time_count(o, base);
  o.num_threads = 0;  // run_load's default: one I/O thread per core
  const double all = time_count(o, base);
  std::printf("re-tokenization of %d x %.1f MB: 1 thread %.2f s, %u threads %.2f s, ratio %.2fx\n", n, mb,
              one, std::thread::hardware_concurrency(), all, one / all);
  return 0;
}
