// Shared helper of tests/engines: a launch command line parsed as the twin parses it.
#pragma once

#include <map>
#include <string>

#include "servelab/engines/engines.h"

namespace servelab::engines::testing {

/// `cmd` split like a shell would and parsed (engine, flags, `env`) at the engine module's default version.
inline LaunchConfig parse(const std::string& cmd, const std::map<std::string, std::string>& env = {}) {
  return parse_launch_command(split_command_line(cmd), env);
}

}  // namespace servelab::engines::testing
