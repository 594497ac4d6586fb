// servelab/engines private: per-engine parsers and renderers behind engines.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "servelab/engines/engine_config.h"

namespace servelab::engines::detail {

/// Parses the arguments after the program words (`vllm serve` / `-m sglang.launch_server` /
/// `trtllm-serve [serve]`) into `config` (kind, program, argv already set). Throw EngineArgError.
void parse_vllm(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                LaunchConfig& config);
void parse_sglang(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                  LaunchConfig& config);
void parse_trtllm(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                  LaunchConfig& config);

/// Arguments after the program words that re-create `config` relative to `bare` (a bare launch of the
/// same model).
std::vector<std::string> render_vllm(const LaunchConfig& config, const LaunchConfig& bare);
std::vector<std::string> render_sglang(const LaunchConfig& config, const LaunchConfig& bare);
std::vector<std::string> render_trtllm(const LaunchConfig& config, const LaunchConfig& bare);

/// Formats a number the way Python's str() would for a value written back to a flag.
std::string format_number(double value);

/// Copies engine-relevant variables (VLLM_*, SGLANG_*, SGL_*, TRTLLM_*, TLLM_*, NCCL_*,
/// CUDA_VISIBLE_DEVICES) into config.env.
void record_env(const std::map<std::string, std::string>& env, LaunchConfig& config);

}  // namespace servelab::engines::detail
