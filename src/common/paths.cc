#include "servelab/common/paths.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>  // environ (declared with _GNU_SOURCE, which g++ defines)

namespace servelab::common {
namespace {
const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}
}  // namespace

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

std::filesystem::path source_dir() {
  if (const char* v = env_or_null("SERVELAB_SOURCE_DIR")) return v;
  // A build inside a checkout (build/servelab, build/tests/x/y_test): the nearest ancestor of the executable
  // that holds servelab's sources. Nothing of the build tree is compiled in.
  std::error_code ec;
  for (auto d = executable_dir(); !d.empty(); d = d.parent_path()) {
    if (std::filesystem::is_regular_file(d / "src" / "common" / "paths.cc", ec) &&
        std::filesystem::is_regular_file(d / "STYLE.md", ec))
      return d;
    if (d == d.parent_path()) break;
  }
  return std::filesystem::current_path(ec);
}

std::filesystem::path installed_data_dir() {
  const auto dir = executable_dir();
  return dir.empty() ? dir : (dir / ".." / "share" / "servelab").lexically_normal();
}

std::filesystem::path data_dir() {
  if (const char* v = env_or_null("SERVELAB_DATA_DIR")) return v;
  std::error_code ec;
  const auto installed = installed_data_dir() / "data";
  if (!installed_data_dir().empty() && std::filesystem::is_directory(installed, ec)) return installed;
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
