// Fuzzes the study file parser (STUDY.toml): any text must give a Study or a StudyError.
#include <cstdint>
#include <string>

#include "servelab/tune/study/study.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)servelab::tune::parse_study(text, "fuzz.toml", "/nonexistent-data-dir");
  } catch (const servelab::tune::StudyError&) {
  }
  return 0;
}
