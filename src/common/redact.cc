// Secret redaction: see redact.h.
#include "servelab/common/redact.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <nlohmann/json.hpp>

namespace servelab::common {
namespace {

bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}
char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Lower-cased words of a name: split at non-alphanumerics and at lower->upper case changes.
std::vector<std::string> words_of(std::string_view name) {
  std::vector<std::string> words;
  std::string cur;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!is_alnum(c)) {
      if (!cur.empty()) words.push_back(std::move(cur)), cur.clear();
      continue;
    }
    if (!cur.empty() && std::isupper(static_cast<unsigned char>(c)) &&
        std::islower(static_cast<unsigned char>(name[i - 1]))) {
      words.push_back(std::move(cur));
      cur.clear();
    }
    cur += lower(c);
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

bool is_auth_scheme(std::string_view word) {
  std::string w;
  for (char c : word) w += lower(c);
  return w == "bearer" || w == "basic" || w == "token" || w == "digest" || w == "apikey" || w == "key";
}

bool is_name_char(char c) {
  return is_alnum(c) || c == '_' || c == '-' || c == '.';
}
bool is_quote(char c) {
  return c == '"' || c == '\'' || c == '`';
}
// Ends an unquoted value word.
bool ends_word(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || is_quote(c) || c == ',' || c == ';' || c == ')' ||
         c == ']' || c == '}' || c == '&' || c == '|' || c == '<' || c == '>';
}

// Redacts the URLs of `s` in place (userinfo, credential query values).
std::string redact_urls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t at = s.find("://", i);
    if (at == std::string_view::npos) break;
    std::size_t a = at + 3;  // authority start
    out.append(s.substr(i, a - i));
    std::size_t e = a;
    while (e < s.size() && s[e] != '/' && s[e] != '?' && s[e] != '#' && !ends_word(s[e])) ++e;
    const std::string_view authority = s.substr(a, e - a);
    const std::size_t userinfo = authority.rfind('@');
    if (userinfo != std::string_view::npos) {
      out.append(kRedacted);
      out.append(authority.substr(userinfo));
    } else {
      out.append(authority);
    }
    // Path up to the query, then the query's parameters.
    std::size_t p = e;
    while (p < s.size() && s[p] != '?' && s[p] != '#' && !ends_word(s[p])) ++p;
    out.append(s.substr(e, p - e));
    if (p < s.size() && s[p] == '?') {
      out += '?';
      ++p;
      while (p < s.size() && s[p] != '#' && !ends_word(s[p])) {
        std::size_t amp = p;
        while (amp < s.size() && s[amp] != '&' && s[amp] != '#' && !ends_word(s[amp])) ++amp;
        const std::string_view param = s.substr(p, amp - p);
        const std::size_t eq = param.find('=');
        if (eq != std::string_view::npos && is_credential_name(param.substr(0, eq))) {
          out.append(param.substr(0, eq + 1));
          out.append(kRedacted);
        } else {
          out.append(param);
        }
        p = amp;
        if (p < s.size() && s[p] == '&') out += '&', ++p;
      }
    }
    i = p;
  }
  out.append(s.substr(std::min(i, s.size())));
  return out;
}

/// Words before "key" that make an identifier, not a credential (tune's trial records, store columns).
bool is_identifier_key_word(const std::string& w) {
  static constexpr std::array<std::string_view, 8> kIds = {"config",  "trial",   "cache",    "sort",
                                                           "primary", "foreign", "scenario", "row"};
  for (auto k : kIds)
    if (w == k) return true;
  return false;
}

/// Words before "token" that make it a text token, not a credential: bench's "Inter-token Latency",
/// "per-token", a tokenizer's bos_token / eos_token / pad_token, "first_token", "output_token".
bool is_text_token_word(const std::string& w) {
  static constexpr std::array<std::string_view, 20> kText = {
      "inter", "per", "first", "last", "next", "output", "input", "total", "prompt", "special",
      "bos",   "eos", "pad",   "unk",  "sep",  "cls",    "mask",  "stop",  "max",    "num"};
  for (auto k : kText)
    if (w == k) return true;
  return false;
}

}  // namespace

bool is_credential_name(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kKeyCompounds = {
      "apikey", "accesskey", "secretkey", "privatekey", "subscriptionkey", "masterkey", "signingkey"};
  static constexpr std::array<std::string_view, 6> kContains = {"secret",     "password",   "passwd",
                                                                "passphrase", "credential", "cookie"};
  const auto words = words_of(name);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (starts_with(w, "auth") && w != "author" && w != "authors") return true;
    if (w.find("oauth") != std::string::npos) return true;
    // "token" after a word that makes it a text token ("Inter-token", "bos_token") is not a credential.
    if (ends_with(w, "token") && !(w == "token" && i > 0 && is_text_token_word(words[i - 1]))) return true;
    // "key" after another word is a credential (X-Api-Key, api_key) unless that word names an identifier
    // servelab itself writes: tune's config_key / trial_key, a cache or sort key are not secrets.
    if (w == "key" && i > 0 && !is_identifier_key_word(words[i - 1])) return true;
    if (w == "pwd") return true;
    for (auto k : kKeyCompounds)
      if (w == k) return true;
    for (auto k : kContains)
      if (w.find(k) != std::string::npos) return true;
  }
  return false;
}

std::string redact_url(std::string_view url) {
  return redact_urls(url);
}

std::string redact_header_item(std::string_view item) {
  const std::size_t sep = item.find_first_of("=:");
  if (sep != std::string_view::npos) {
    if (is_credential_name(strip(item.substr(0, sep)))) {
      std::string out(item.substr(0, sep + 1));
      if (item[sep] == ':') out += ' ';
      out += kRedacted;
      return out;
    }
    return redact_urls(item);
  }
  const std::string_view s = strip(item);
  const std::size_t space = s.find_first_of(" \t");
  const std::string_view first = s.substr(0, space);
  if (space != std::string_view::npos && (is_credential_name(first) || is_auth_scheme(first)))
    return std::string(first) + " " + std::string(kRedacted);
  return redact_urls(item);
}

std::vector<std::string> redact_args(const std::vector<std::string>& args) {
  std::vector<std::string> out(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    out[i] = a;
    if ((a == "--header" || a == "-H") && i + 1 < args.size()) {
      out[i + 1] = redact_header_item(args[i + 1]);
      ++i;
      continue;
    }
    if (starts_with(a, "--header=")) {
      out[i] = "--header=" + redact_header_item(std::string_view(a).substr(9));
      continue;
    }
    if (starts_with(a, "-")) {
      const std::string_view flag = std::string_view(a).substr(
          a.find_first_not_of('-') == std::string::npos ? a.size() : a.find_first_not_of('-'));
      const std::size_t eq = flag.find('=');
      if (is_credential_name(flag.substr(0, eq))) {
        if (eq != std::string_view::npos) {
          out[i] = a.substr(0, a.size() - flag.size() + eq + 1) + std::string(kRedacted);
        } else if (i + 1 < args.size()) {
          out[i + 1] = std::string(kRedacted);
          ++i;
        }
        continue;
      }
      if (eq != std::string_view::npos && eq + 1 < flag.size() &&
          (flag[eq + 1] == '{' || flag[eq + 1] == '[')) {
        out[i] = a.substr(0, a.size() - flag.size() + eq + 1) + redact_json_text(flag.substr(eq + 1));
        continue;
      }
      out[i] = redact_urls(a);
      continue;
    }
    if (!a.empty() &&
        (a.front() == '{' || a.front() == '[')) {  // a JSON value (--extra-body '{"api_key": ...}')
      out[i] = redact_json_text(a);
      continue;
    }
    out[i] = a.find_first_of("=:") != std::string::npos ? redact_header_item(a) : redact_urls(a);
  }
  return out;
}

std::map<std::string, std::string> redact_env(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : env) out[k] = is_credential_name(k) ? std::string(kRedacted) : redact_urls(v);
  return out;
}

namespace {
/// "<redacted>" or "<redacted-N>" (N digits).
bool is_redaction_label(std::string_view v) {
  constexpr std::string_view kHead = "<redacted";
  if (v.size() < kHead.size() + 1 || v.substr(0, kHead.size()) != kHead || v.back() != '>') return false;
  const std::string_view mid = v.substr(kHead.size(), v.size() - kHead.size() - 1);
  if (mid.empty()) return true;
  if (mid.front() != '-' || mid.size() < 2) return false;
  return std::all_of(mid.begin() + 1, mid.end(), [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

std::string redact_text(std::string_view text) {
  const std::string s = redact_urls(text);
  const std::size_t n = s.size();
  std::string out;
  out.reserve(n);
  std::size_t i = 0;
  while (i < n) {
    if (!is_name_char(s[i]) || (i > 0 && is_name_char(s[i - 1]))) {
      out += s[i++];
      continue;
    }
    std::size_t j = i;
    while (j < n && is_name_char(s[j])) ++j;
    // A run of three or more dashes is a rule (bench's "-----Inter-token Latency-----" banner), not a flag:
    // the name starts after it.
    std::size_t dashes = 0;
    while (i + dashes < j && s[i + dashes] == '-') ++dashes;
    if (dashes > 2) {
      out.append(s, i, dashes);
      i += dashes;
      if (i == j) continue;
    }
    const std::string_view name(s.data() + i, j - i);
    out.append(name);
    if (!is_credential_name(name)) {
      i = j;
      continue;
    }
    const char open_q = i > 0 && is_quote(s[i - 1]) ? s[i - 1] : 0;
    const bool flag = name.front() == '-';
    std::size_t k = j;
    bool name_closed = false;
    if (open_q && k < n && s[k] == open_q) name_closed = true, ++k;
    while (k < n && (s[k] == ' ' || s[k] == '\t')) ++k;
    const bool url_scheme = k + 2 < n && s[k] == ':' && s[k + 1] == '/' && s[k + 2] == '/';
    // "api_key.toml:11: ..." is a file and its line (an error's location), not a name and its value.
    const bool location =
        k == j && k + 1 < n && s[k] == ':' && std::isdigit(static_cast<unsigned char>(s[k + 1])) && [&] {
          std::size_t d = k + 1;
          while (d < n && std::isdigit(static_cast<unsigned char>(s[d]))) ++d;
          return d < n && s[d] == ':';
        }();
    if (location) {
      i = j;
      continue;
    }
    if (k < n && (s[k] == '=' || (s[k] == ':' && !url_scheme))) {
      ++k;
    } else if (flag && (k > j || (k < n && s[k] == ','))) {
      if (k < n && s[k] == ',') ++k;  // "--api-key", "value"
    } else {
      i = j;
      continue;
    }
    while (k < n && (s[k] == ' ' || s[k] == '\t')) ++k;
    if (k >= n || s[k] == '\n' || s[k] == '\r') {
      i = j;
      continue;
    }
    std::size_t end;
    std::size_t value = k;
    std::string tail;
    if (is_quote(s[k])) {  // a quoted value: up to its closing quote (backslash escapes skipped)
      const char q = s[k];
      value = k + 1;
      end = value;
      while (end < n && s[end] != q && s[end] != '\n') end += s[end] == '\\' ? 2 : 1;
      end = std::min(end, n);
    } else if (open_q && !name_closed) {  // inside a quoted item: 'Authorization=Bearer x'
      end = k;
      while (end < n && s[end] != open_q && s[end] != '\n') ++end;
    } else {  // one word, after an optional auth scheme
      std::size_t w = k;
      while (w < n && !ends_word(s[w])) ++w;
      if (is_auth_scheme(std::string_view(s).substr(k, w - k)) && w < n && s[w] == ' ') {
        value = w + 1;
        while (value < n && s[value] == ' ') ++value;
        w = value;
        while (w < n && !ends_word(s[w])) ++w;
        if (w == value) value = k, w = k;  // "Bearer" alone: nothing after it to hide
      }
      end = w;
    }
    out.append(s, j, value - j);
    if (end > value) {
      // A value that is already a redaction label ("<redacted-2>": a credential-named knob's value in a
      // study) stays as it is: it hides nothing, and its number tells the values apart (summary.json said
      // "api_key=<redacted>" where every other artefact said "api_key=<redacted-2>").
      const std::string_view v(s.data() + value, end - value);
      out.append(is_redaction_label(v) ? v : std::string_view(kRedacted));
    }
    i = end;
  }
  return out;
}

namespace {

/// redact_json's walk; sets `*changed` when a value was replaced.
nlohmann::ordered_json redact_json_walk(const nlohmann::ordered_json& j, bool* changed) {
  if (j.is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [k, v] : j.items()) {
      if (is_credential_name(k)) {
        out[k] = std::string(kRedacted);
        *changed = *changed || v != std::string(kRedacted);
      } else {
        out[k] = redact_json_walk(v, changed);
      }
    }
    return out;
  }
  if (j.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& v : j) out.push_back(redact_json_walk(v, changed));
    return out;
  }
  return j;
}

void json_secrets_walk(const nlohmann::ordered_json& j, bool under_credential,
                       std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) json_secrets_walk(v, under_credential || is_credential_name(k), out);
  } else if (j.is_array()) {
    for (const auto& v : j) json_secrets_walk(v, under_credential, out);
  } else if (under_credential && !j.is_null()) {
    out.push_back(j.is_string() ? j.get<std::string>() : j.dump());
  }
}

}  // namespace

nlohmann::ordered_json redact_json(const nlohmann::ordered_json& doc) {
  bool changed = false;
  return redact_json_walk(doc, &changed);
}

std::string redact_json_text(std::string_view text) {
  const auto doc = nlohmann::ordered_json::parse(text, nullptr, false);
  if (doc.is_discarded()) return redact_text(text);
  bool changed = false;
  const auto out = redact_json_walk(doc, &changed);
  return changed ? out.dump() : redact_text(text);
}

std::vector<std::string> json_secret_values(const nlohmann::ordered_json& doc) {
  std::vector<std::string> out;
  json_secrets_walk(doc, false, out);
  return out;
}

std::string redact_values(std::string_view text, const std::vector<std::string>& secrets) {
  std::vector<std::string> sorted;
  for (const auto& s : secrets)
    if (s.size() >= kMinSecretBytes && s != kRedacted) sorted.push_back(s);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::string out(text);
  for (const auto& s : sorted)
    for (std::size_t at = out.find(s); at != std::string::npos; at = out.find(s, at + kRedacted.size()))
      out.replace(at, s.size(), kRedacted);
  return redact_text(out);
}

}  // namespace servelab::common
