// Fuzzes the tokenizer.json loader (any file a user points --tokenizer at) and, when it loads, encode and
// decode of a short text.
#include <cstdint>

#include "fuzz_input.h"
#include "servelab/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = servelab::fuzz::write_input("tokenizer.json", data, size);
  try {
    const auto tok = servelab::tokenizer::Tokenizer::from_file(path);
    const auto ids = tok.encode("Hello world, héllo 世界 123 <|endoftext|>", true);
    (void)tok.decode(ids, false);
  } catch (const std::exception&) {
    // A clear error is the expected outcome for a malformed file.
  }
  return 0;
}
