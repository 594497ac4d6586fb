// Fuzzes the dataset file loaders: ShareGPT JSON (load_sharegpt_file + prompt/completion unescaping),
// ShareGPT-form conversations (load_conversations) and the custom JSONL rows (load_custom_rows). The first
// byte picks the loader.
#include <cstdint>

#include "dataset/synthetic.h"
#include "fuzz_input.h"
#include "servelab/dataset/dataset.h"

using namespace servelab::dataset;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto path = servelab::fuzz::write_input("data", data + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        const ShareGptFile f = load_sharegpt_file(path);
        for (std::size_t i = 0; i < f.size(); ++i) (void)f.prompt(i), (void)f.completion(i);
        break;
      }
      case 1:
        (void)load_conversations(path);
        break;
      default:
        (void)detail::load_custom_rows(path);
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
