#include "common/paths.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace servelab::common {
namespace {
const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}
}  // namespace

std::filesystem::path source_dir() {
  if (const char* v = env_or_null("SERVELAB_SOURCE_DIR")) return v;
#ifdef SERVELAB_SOURCE_DIR
  return SERVELAB_SOURCE_DIR;
#else
  return std::filesystem::current_path();
#endif
}

std::filesystem::path data_dir() {
  if (const char* v = env_or_null("SERVELAB_DATA_DIR")) return v;
  return (source_dir() / ".." / "shared" / "data").lexically_normal();
}

std::filesystem::path cache_dir() {
  if (const char* v = env_or_null("SERVELAB_CACHE_DIR")) return v;
  if (const char* v = env_or_null("XDG_CACHE_HOME")) return std::filesystem::path(v) / "servelab";
  if (const char* v = env_or_null("HOME")) return std::filesystem::path(v) / ".cache" / "servelab";
  return std::filesystem::path(".cache") / "servelab";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot open '" + path.string() + "': " + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("error reading '" + path.string() + "'");
  return std::move(ss).str();
}

std::map<std::string, std::string> environment_map() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace servelab::common
