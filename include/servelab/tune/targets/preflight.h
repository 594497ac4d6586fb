// servelab/tune: pre-flight — everything a study on real engines needs, checked before the first launch so
// that no GPU time is spent on a study that cannot run (issue 10 §3). Each failed check names the problem
// and the fix.
//
//   PreflightReport r = run_preflight(study, PreflightOptions::from_process());
//   if (!r.ok()) { std::cerr << r.text(); exit(2); }
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// One check and what it found.
struct PreflightCheck {
  enum class Result { kOk, kWarning, kFailed, kSkipped };
  std::string name;  ///< "engine vllm", "GPUs", "port", "dataset sharegpt-1000", "file --chat-template", ...
  Result result = Result::kOk;
  std::string detail;  ///< what was found; for a failure the problem and the fix
};

/// "ok", "warning", "FAILED", "skipped".
const char* preflight_result_name(PreflightCheck::Result result);

struct PreflightReport {
  std::vector<PreflightCheck> checks;
  /// Engine name -> version its executable reports (e.g. "0.13.0"); absent when it could not be asked.
  std::map<std::string, std::string> engine_versions;
  /// Every engine is a servelab stand-in (tools/standins): no GPU or weights are needed.
  bool standins = false;
  /// What nvidia-smi said: "gpu_model", "gpu_count", "gpu_memory_mib", "driver", "cuda" (absent without
  /// GPUs).
  std::map<std::string, std::string> gpu;

  bool ok() const;           ///< no check failed
  std::string text() const;  ///< one line per check: "  [FAILED] name: detail"
};

/// Where pre-flight looks. Tests point these at fake executables and directories.
struct PreflightOptions {
  std::map<std::string, std::string> env;  ///< process environment (PATH, HOME, HF_HOME, ...)
  std::string nvidia_smi = "nvidia-smi";   ///< looked up on env PATH
  std::filesystem::path cwd;       ///< where engines are launched (relative paths in flags); "" = current
  double command_timeout_s = 120;  ///< for `--version` and nvidia-smi (importing torch takes a while)
  /// The process environment and working directory.
  static PreflightOptions from_process();
};

/// Runs every check for `study` on this machine (the local target):
///   engine executables on PATH, their reported version == the study's (`vllm --version`, `trtllm-serve
///   --version`, `python3 -c "import sglang; print(sglang.__version__)"`); GPUs (nvidia-smi: count and
///   memory for the largest launch the study can make, model name, other processes' memory); the port is
///   free; every scenario's dataset file resolves (as given, data dir, cache); files named in flags exist
///   (--chat-template, --config, --extra_llm_api_options, --tool-call-parser-plugin); the model's weights are
///   in the Hugging Face cache or at the path (and the free space there); the tokenizer resolves.
/// GPU and weight checks are skipped (with the reason) when every engine is a servelab stand-in. Never
/// throws for a failed check.
PreflightReport run_preflight(const Study& study, const PreflightOptions& options);

}  // namespace servelab::tune
