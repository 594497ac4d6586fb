// Request payloads exactly as vLLM 0.13's endpoint_request_func.py builds them, and the HTTP head.
#include <strings.h>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "servelab/client/request.h"

#include <openssl/evp.h>

#include <cctype>

#include "servelab/common/python_json.h"
#include "servelab/common/redact.h"

namespace servelab::client {
namespace detail {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Python dict.update: existing keys keep their position, new keys are appended.
void update(nlohmann::ordered_json& payload, const nlohmann::ordered_json& extra, const char* what) {
  if (extra.is_null()) return;
  if (!extra.is_object()) {
    throw std::invalid_argument(std::string(what) + " must be a JSON object, got: " + extra.dump());
  }
  for (auto it = extra.begin(); it != extra.end(); ++it) payload[it.key()] = it.value();
}

}  // namespace

namespace {

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string base64(std::string_view s) {
  std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace

ParsedUrl parse_url(std::string_view url_text) {
  ParsedUrl u;
  const std::string shown = common::redact_url(url_text);  // errors never print the credentials
  const std::string_view url = shown;
  std::string_view rest;
  if (url_text.substr(0, 7) == "http://") {
    rest = url_text.substr(7);
  } else if (url_text.substr(0, 8) == "https://") {
    u.tls = true;
    rest = url_text.substr(8);
  } else {
    throw std::invalid_argument("api URL '" + std::string(url) + "' must start with http:// or https://");
  }
  const std::size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!u.target.empty() && u.target.front() != '/') u.target.insert(0, "/");
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    u.basic_authorization = "Basic " + base64(percent_decode(authority.substr(0, at)));
    authority.remove_prefix(at + 1);
  }
  if (authority.empty()) throw std::invalid_argument("api URL '" + std::string(url) + "' has no host");
  std::string_view port;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      throw std::invalid_argument("api URL '" + std::string(url) + "': unterminated IPv6 host");
    }
    u.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        throw std::invalid_argument("api URL '" + std::string(url) + "': junk after IPv6 host");
      }
      port = authority.substr(close + 2);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw std::invalid_argument("api URL '" + std::string(url) + "' has no host");
  if (port.empty()) {
    u.port = u.tls ? "443" : "80";
  } else {
    for (char c : port) {
      if (c < '0' || c > '9') {
        throw std::invalid_argument("api URL '" + std::string(url) + "': bad port '" + std::string(port) +
                                    "'");
      }
    }
    if (port.size() > 5 || std::stoi(std::string(port)) > 65535 || std::stoi(std::string(port)) == 0) {
      throw std::invalid_argument("api URL '" + std::string(url) + "': port out of range");
    }
    u.port = std::string(port);
  }
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  const bool default_port = (u.tls && u.port == "443") || (!u.tls && u.port == "80");
  u.host_header = default_port ? host : host + ":" + u.port;
  return u;
}

void validate_endpoint_url(const ParsedUrl& url, Endpoint endpoint) {
  std::string_view path = url.target;
  path = path.substr(0, path.find('?'));
  if (endpoint == Endpoint::kChatCompletions) {
    if (!ends_with(path, "chat/completions") && !ends_with(path, "profile")) {
      throw std::invalid_argument("OpenAI Chat Completions API URL must end with 'chat/completions'. (got '" +
                                  url.target + "')");
    }
  } else if (!ends_with(path, "completions") && !ends_with(path, "profile")) {
    throw std::invalid_argument(
        "OpenAI Completions API URL must end with 'completions' or 'profile'. (got '" + url.target + "')");
  }
}

void validate_load(const ClientOptions& options, std::size_t num_requests,
                   std::span<const double> schedule_s) {
  if (schedule_s.size() != num_requests) {
    throw std::invalid_argument("run_load: schedule has " + std::to_string(schedule_s.size()) +
                                " send times for " + std::to_string(num_requests) + " requests");
  }
  for (std::size_t i = 0; i < schedule_s.size(); ++i) {
    if (!(schedule_s[i] >= 0.0) || schedule_s[i] > 1e9) {
      throw std::invalid_argument("run_load: send time of request " + std::to_string(i) + " is " +
                                  std::to_string(schedule_s[i]) + " s (must be finite and >= 0)");
    }
  }
  if (options.realtime_priority < 0 || options.realtime_priority > 99) {
    throw std::invalid_argument("run_load: realtime_priority must be 0..99, got " +
                                std::to_string(options.realtime_priority));
  }
  if (options.max_concurrency < 0) {
    throw std::invalid_argument("run_load: max_concurrency must be >= 0, got " +
                                std::to_string(options.max_concurrency));
  }
  // Bounded so that the deadline arithmetic on the steady clock cannot overflow.
  if (!(options.request_timeout_s > 0) || !(options.connect_timeout_s > 0) ||
      options.request_timeout_s > 1e9 || options.connect_timeout_s > 1e9) {
    throw std::invalid_argument("run_load: request_timeout_s and connect_timeout_s must be in (0, 1e9] s");
  }
}

std::string resolve_api_key(const ClientOptions& options) {
  if (options.api_key) return *options.api_key;
  const char* env = std::getenv("OPENAI_API_KEY");
  return env ? std::string(env) : std::string();
}

std::vector<std::string> request_secrets(const ClientOptions& options, const std::string& api_key) {
  std::vector<std::string> out;
  if (!api_key.empty()) out.push_back(api_key);
  for (const auto& [k, v] : options.headers) {
    if (!common::is_credential_name(k)) continue;
    out.push_back(v);
    if (const auto space = v.find(' '); space != std::string::npos) out.push_back(v.substr(space + 1));
  }
  const std::string_view url = options.api_url;
  if (const auto scheme = url.find("://"); scheme != std::string_view::npos) {
    const std::string_view rest = url.substr(scheme + 3);
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
      const std::string_view userinfo = authority.substr(0, at);
      out.emplace_back(userinfo);
      if (const auto colon = userinfo.find(':'); colon != std::string_view::npos)
        out.emplace_back(userinfo.substr(colon + 1));
    }
  }
  for (auto& s : common::json_secret_values(options.extra_body)) out.push_back(std::move(s));
  return out;
}

std::string build_http_request(const ClientOptions& options, const ParsedUrl& url, const std::string& api_key,
                               const PlannedRequest& request) {
  const std::string body = request_body_json(options, request);
  // Header list: defaults, then --header extras replacing same-named ones, then x-request-id.
  std::vector<std::pair<std::string, std::string>> headers;
  headers.emplace_back("Content-Type", "application/json");
  if (!url.basic_authorization.empty()) {
    headers.emplace_back("Authorization", url.basic_authorization);
  } else if (!api_key.empty()) {
    headers.emplace_back("Authorization", "Bearer " + api_key);
  }
  auto set = [&headers](const std::string& k, const std::string& v) {
    for (auto& h : headers) {
      if (strcasecmp(h.first.c_str(), k.c_str()) == 0) {
        h.second = v;
        return;
      }
    }
    headers.emplace_back(k, v);
  };
  for (const auto& [k, v] : options.headers) {
    for (char c : k + v) {
      if (c == '\r' || c == '\n') {
        throw std::invalid_argument("header '" + common::redact_header_item(k + ": " + v) +
                                    "': contains CR/LF");
      }
    }
    set(k, v);
  }
  if (!request.request_id.empty()) set("x-request-id", request.request_id);

  std::string out;
  out.reserve(body.size() + 256);
  out += "POST ";
  out += url.target;
  out += " HTTP/1.1\r\nHost: ";
  out += url.host_header;
  out += "\r\nUser-Agent: servelab\r\nAccept: */*\r\n";
  for (const auto& [k, v] : headers) {
    if (strcasecmp(k.c_str(), "content-length") == 0 || strcasecmp(k.c_str(), "host") == 0) continue;
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += "\r\n\r\n";
  out += body;
  return out;
}

}  // namespace detail

std::string request_body_json(const ClientOptions& options, const PlannedRequest& request) {
  nlohmann::ordered_json p = nlohmann::ordered_json::object();
  p["model"] = options.model;
  if (options.endpoint == Endpoint::kCompletions) {
    if (!request.prompt_token_ids.empty()) {
      p["prompt"] = request.prompt_token_ids;
    } else {
      p["prompt"] = request.prompt;
    }
    p["repetition_penalty"] = 1.0;
    p["max_tokens"] = request.output_len;
    p["logprobs"] = options.logprobs ? nlohmann::ordered_json(*options.logprobs) : nlohmann::ordered_json();
  } else {
    if (!request.messages_json.empty()) {
      nlohmann::ordered_json messages;
      try {
        messages = nlohmann::ordered_json::parse(request.messages_json);
      } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument("request '" + request.request_id +
                                    "': messages_json is not JSON: " + e.what());
      }
      if (!messages.is_array()) {
        throw std::invalid_argument("request '" + request.request_id +
                                    "': messages_json must be a JSON array");
      }
      p["messages"] = std::move(messages);
    } else {
      nlohmann::ordered_json part = nlohmann::ordered_json::object();
      part["type"] = "text";
      part["text"] = request.prompt;
      nlohmann::ordered_json message = nlohmann::ordered_json::object();
      message["role"] = "user";
      message["content"] = nlohmann::ordered_json::array({part});
      p["messages"] = nlohmann::ordered_json::array({message});
    }
    p["max_completion_tokens"] = request.output_len;
  }
  p["stream"] = true;
  p["stream_options"] = nlohmann::ordered_json::object({{"include_usage", true}});
  if (options.ignore_eos) p["ignore_eos"] = options.ignore_eos;
  detail::update(p, options.extra_body, "extra_body");
  detail::update(p, request.extra_body, "per-request extra_body");
  return common::python_json_dumps(p, common::InvalidUtf8::kThrow);
}

const char* endpoint_name(Endpoint endpoint) {
  return endpoint == Endpoint::kChatCompletions ? "chat_completions" : "completions";
}

}  // namespace servelab::client
