// servelab/engines private: the launch-command helpers behind engines.h (program words, launch wrappers,
// environment); each engine's parser and renderer are in its folder (<engine>/<engine>_detail.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "servelab/engines/engine_config.h"

namespace servelab::engines::detail {

/// The last component of a program path ("/usr/bin/python3" -> "python3").
std::string program_basename(const std::string& path);
/// True for a Python interpreter's basename: python, python3, python3.12.
bool is_python(const std::string& basename);
/// True when `word` starts an engine command (a module's EngineProgram::executable, python*; a path's
/// basename).
bool is_engine_program(const std::string& word);

/// What came before the engine command (launch_wrappers.cc).
struct LaunchWrapper {
  std::vector<std::string>
      words;              ///< the wrapper with its options ("mpirun -n 1 --oversubscribe"); env excluded
  std::size_t first = 0;  ///< index of the engine command in the argv
  /// The first words of the engine command that the container supplies, absent from argv: the engine's
  /// canonical program for an image whose entrypoint it is (EngineImages::entrypoint_words: {"vllm",
  /// "serve"} for vllm/vllm-openai), `--entrypoint`'s value; empty otherwise.
  std::vector<std::string> program;
  std::string image;  ///< `docker|podman run`'s image ("" without a container wrapper)
};

/// The tag of an engine image (its repository has a module's EngineImages::repository_words): the text after
/// the last
/// ':' ("vllm/vllm-openai:latest" -> "latest"); "" for another image or one without a tag.
std::string engine_image_tag(const std::string& image);

/// The engine version an engine image's tag names (an engine image, as engine_image_tag): the tag after the
/// last ':' without a leading "v" and a "-suffix" ("lmsysorg/sglang:v0.5.6-cu129" -> "0.5.6"), when it parses
/// as a version; else "" (nvidia/cuda:12.4.1, ...:latest).
std::string image_tag_version(const std::string& image);

/// Skips NAME=value words, `env [opts]`, `mpirun|mpiexec|orterun [opts]`, `srun [opts]` and `docker|podman
/// run [opts] IMAGE` before the engine command, recording the environment they set (NAME=value, mpirun -x,
/// srun --export, docker -e/--env) into `env`. A container's options are read with their values (the image
/// is the first word that is neither); `--entrypoint P` makes P the engine program, the words after the
/// image its arguments. Never throws: an argv with no engine command after its
/// wrapper ends with first == argv.size().
LaunchWrapper strip_launch_wrappers(const std::vector<std::string>& argv,
                                    std::map<std::string, std::string>& env);

/// Formats a number the way Python's str() would for a value written back to a flag.
std::string format_number(double value);

/// Copies engine-relevant variables (each module's EngineModule::env_prefixes, NCCL_*,
/// CUDA_VISIBLE_DEVICES) into config.env.
void record_env(const std::map<std::string, std::string>& env, LaunchConfig& config);

}  // namespace servelab::engines::detail
