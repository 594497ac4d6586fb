// HubOptions from the environment (huggingface_hub constants.py), and repository-id rules.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "servelab/hub/hub.h"

namespace servelab::hub {
namespace {

std::optional<std::string> non_empty(const EnvLookup& env, const char* name) {
  auto v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

std::string strip(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// huggingface_hub _is_true: "1", "ON", "YES", "TRUE" (any case).
bool is_true(const std::optional<std::string>& v) {
  if (!v) return false;
  std::string u = strip(*v);
  std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return std::toupper(c); });
  return u == "1" || u == "ON" || u == "YES" || u == "TRUE";
}

double seconds_or(const std::optional<std::string>& v, double fallback) {
  if (!v) return fallback;
  try {
    std::size_t used = 0;
    const double d = std::stod(*v, &used);
    return used == v->size() && d > 0 ? d : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

bool segment_ok(std::string_view s) {
  if (s.empty() || s.size() > 96) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  return s.find("--") == std::string_view::npos && s.find("..") == std::string_view::npos;
}

}  // namespace

HubOptions options_from_environment(const EnvLookup& env) {
  namespace fs = std::filesystem;
  HubOptions o;
  if (auto e = non_empty(env, "HF_ENDPOINT")) {
    o.endpoint = strip(*e);
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  }
  fs::path hf_home;
  if (auto h = non_empty(env, "HF_HOME")) {
    hf_home = *h;
  } else if (auto x = non_empty(env, "XDG_CACHE_HOME")) {
    hf_home = fs::path(*x) / "huggingface";
  } else if (auto home = non_empty(env, "HOME")) {
    hf_home = fs::path(*home) / ".cache" / "huggingface";
  } else {
    hf_home = fs::path(".cache") / "huggingface";
  }
  if (auto c = non_empty(env, "HF_HUB_CACHE")) {
    o.cache_dir = *c;
  } else if (auto legacy = non_empty(env, "HUGGINGFACE_HUB_CACHE")) {
    o.cache_dir = *legacy;
  } else {
    o.cache_dir = hf_home / "hub";
  }
  if (auto t = non_empty(env, "HF_TOKEN"); t && !strip(*t).empty()) {
    o.token = strip(*t);
    o.token_source = "HF_TOKEN";
  } else if (auto legacy_t = non_empty(env, "HUGGING_FACE_HUB_TOKEN");
             legacy_t && !strip(*legacy_t).empty()) {
    o.token = strip(*legacy_t);
    o.token_source = "HUGGING_FACE_HUB_TOKEN";
  } else {
    const fs::path file =
        non_empty(env, "HF_TOKEN_PATH") ? fs::path(*env("HF_TOKEN_PATH")) : hf_home / "token";
    std::ifstream in(file);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (std::string t = strip(ss.str()); !t.empty()) {
        o.token = t;
        o.token_source = file.string();
      }
    }
  }
  o.offline = is_true(env("HF_HUB_OFFLINE")) || is_true(env("TRANSFORMERS_OFFLINE"));
  o.etag_timeout_s = seconds_or(env("HF_HUB_ETAG_TIMEOUT"), o.etag_timeout_s);
  o.download_timeout_s = seconds_or(env("HF_HUB_DOWNLOAD_TIMEOUT"), o.download_timeout_s);
  return o;
}

HubOptions options_from_environment() {
  return options_from_environment([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

bool is_repo_id(std::string_view id) {
  if (id.empty() || id.front() == '/' || id.front() == '~' || id.rfind("./", 0) == 0) return false;
  const auto slash = id.find('/');
  if (slash == std::string_view::npos) return segment_ok(id);
  if (id.find('/', slash + 1) != std::string_view::npos) return false;
  return segment_ok(id.substr(0, slash)) && segment_ok(id.substr(slash + 1));
}

std::string repo_folder_name(std::string_view repo_id, RepoType type) {
  std::string out = type == RepoType::kModel ? "models" : "datasets";
  std::string_view rest = repo_id;
  while (true) {
    const auto slash = rest.find('/');
    out += "--";
    out += rest.substr(0, slash);
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return out;
}

bool is_commit_hash(std::string_view revision) {
  return revision.size() == 40 && std::all_of(revision.begin(), revision.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace servelab::hub
