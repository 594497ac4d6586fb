// servelab/cli private: what `sim run` / `sim serve` fetch from the Hugging Face Hub for a launch's model id
// (config.json, tokenizer.json) when nothing local has it, at the revision the launch names.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "servelab/hub/hub.h"

namespace servelab::cli {

/// The value of `flag` in an engine launch command ("--revision X" or "--revision=X"), "" when absent.
inline std::string launch_flag_value(const std::vector<std::string>& launch, const std::string& flag) {
  for (std::size_t i = 0; i < launch.size(); ++i) {
    if (launch[i] == flag && i + 1 < launch.size()) return launch[i + 1];
    if (launch[i].rfind(flag + "=", 0) == 0) return launch[i].substr(flag.size() + 1);
  }
  return "";
}

/// A download-enabled fetch at `revision` ("" = main) whose progress lines go to stderr.
inline hub::FetchRequest hub_fetch(const std::string& revision) {
  hub::FetchRequest f;
  f.revision = revision;
  f.download = true;
  f.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return f;
}

}  // namespace servelab::cli
