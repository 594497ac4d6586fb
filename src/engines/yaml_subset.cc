// YAML subset parser for engine option files. See yaml_subset.h.
#include "engines/yaml_subset.h"

#include <cctype>
#include <stdexcept>

#include "engines/cli_parser.h"
#include "engines/engines_detail.h"
#include "servelab/common/text.h"

namespace servelab::engines::detail {
namespace {

struct Line {
  int number;
  int indent;
  std::string text;  // without indentation and comment
};

[[noreturn]] void error(int line, const std::string& what) {
  throw std::invalid_argument("YAML line " + std::to_string(line) + ": " + what);
}

// Removes a trailing comment (" #..." outside quotes).
std::string strip_comment(const std::string& s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

nlohmann::json scalar(const std::string& raw, int line) {
  std::string v = common::trim(raw);
  if (v.empty() || v == "null" || v == "~" || v == "Null" || v == "NULL") return nullptr;
  if (v.front() == '"' || v.front() == '\'') {
    if (v.size() < 2 || v.back() != v.front()) error(line, "unterminated quoted scalar " + v);
    std::string body = v.substr(1, v.size() - 2);
    if (v.front() == '"' && nlohmann::json::accept(v)) return nlohmann::json::parse(v);
    if (v.front() == '\'') {
      std::string out;
      for (std::size_t i = 0; i < body.size(); ++i) {
        out += body[i];
        if (body[i] == '\'' && i + 1 < body.size() && body[i + 1] == '\'') ++i;
      }
      return out;
    }
    return body;
  }
  // YAML 1.1 booleans, as PyYAML's safe_load (what vLLM, SGLang and TensorRT-LLM read these files with)
  // resolves them: true/yes/on and false/no/off in lower, Title or UPPER case [recalled: PyYAML resolver.py].
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (v == t) return true;
  for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (v == f) return false;
  if (v.front() == '[') {
    if (v.back() != ']') error(line, "unterminated flow list " + v);
    nlohmann::json arr = nlohmann::json::array();
    std::string inner = common::trim(v.substr(1, v.size() - 2));
    if (inner.empty()) return arr;
    std::size_t start = 0;
    while (start <= inner.size()) {
      auto comma = inner.find(',', start);
      std::string item = inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (common::trim(item).find_first_of("[]{}") != std::string::npos)
        error(line, "nested flow collections are not supported");
      arr.push_back(scalar(item, line));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return arr;
  }
  if (v.front() == '{' || v.front() == '&' || v.front() == '*' || v.front() == '|' || v.front() == '>' ||
      v.front() == '!')
    error(line, "unsupported YAML construct '" + v + "'");
  if (auto i = python_int(v); i && v.find('_') == std::string::npos) return *i;
  if (auto f = python_float(v); f && v.find('_') == std::string::npos && v != "inf" && v != "nan") return *f;
  return v;
}

class Parser {
 public:
  explicit Parser(std::vector<Line> lines) : lines_(std::move(lines)) {}

  nlohmann::json parse_block(std::size_t& i, int indent) {
    if (i >= lines_.size()) return nullptr;
    if (lines_[i].text.rfind("- ", 0) == 0 || lines_[i].text == "-") return parse_list(i, indent);
    return parse_map(i, indent);
  }

 private:
  nlohmann::json parse_list(std::size_t& i, int indent) {
    nlohmann::json arr = nlohmann::json::array();
    while (i < lines_.size() && lines_[i].indent == indent &&
           (lines_[i].text.rfind("- ", 0) == 0 || lines_[i].text == "-")) {
      std::string item = lines_[i].text.size() > 1 ? lines_[i].text.substr(2) : "";
      if (item.find(": ") != std::string::npos || (!item.empty() && item.back() == ':'))
        error(lines_[i].number, "lists of mappings are not supported");
      arr.push_back(scalar(item, lines_[i].number));
      ++i;
    }
    if (i < lines_.size() && lines_[i].indent > indent) error(lines_[i].number, "unexpected indentation");
    return arr;
  }

  nlohmann::json parse_map(std::size_t& i, int indent) {
    nlohmann::json obj = nlohmann::json::object();
    while (i < lines_.size() && lines_[i].indent == indent) {
      const Line& l = lines_[i];
      if (l.text.rfind("- ", 0) == 0) error(l.number, "list item where a key was expected");
      auto colon = l.text.find(": ");
      std::string key, rest;
      if (colon != std::string::npos) {
        key = common::trim(l.text.substr(0, colon));
        rest = common::trim(l.text.substr(colon + 2));
      } else if (!l.text.empty() && l.text.back() == ':') {
        key = common::trim(l.text.substr(0, l.text.size() - 1));
      } else {
        error(l.number, "expected 'key: value', got '" + l.text + "'");
      }
      if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front())
        key = key.substr(1, key.size() - 2);
      if (obj.contains(key)) error(l.number, "duplicate key '" + key + "'");
      ++i;
      if (!rest.empty()) {
        obj[key] = scalar(rest, l.number);
      } else if (i < lines_.size() && lines_[i].indent > indent) {
        obj[key] = parse_block(i, lines_[i].indent);
      } else if (i < lines_.size() && lines_[i].indent == indent && lines_[i].text.rfind("- ", 0) == 0) {
        obj[key] = parse_list(i, indent);  // YAML allows a block list at the key's own indentation
      } else {
        obj[key] = nullptr;
      }
    }
    if (i < lines_.size() && lines_[i].indent > indent) error(lines_[i].number, "unexpected indentation");
    return obj;
  }

  std::vector<Line> lines_;
};

}  // namespace

nlohmann::json parse_yaml_subset(const std::string& text) {
  std::vector<Line> lines;
  int number = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    std::string raw = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    ++number;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (raw == "---" || raw == "...") continue;
    std::size_t indent = 0;
    while (indent < raw.size() && raw[indent] == ' ') ++indent;
    if (indent < raw.size() && raw[indent] == '\t') error(number, "tab indentation is not valid YAML");
    std::string body = common::trim(strip_comment(raw.substr(indent)));
    if (body.empty()) continue;
    lines.push_back({number, static_cast<int>(indent), body});
  }
  if (lines.empty()) return nlohmann::json::object();
  if (lines[0].indent != 0) error(lines[0].number, "the document must start at column 0");
  Parser p(lines);
  std::size_t i = 0;
  nlohmann::json doc = p.parse_block(i, 0);
  if (i < lines.size()) error(lines[i].number, "unexpected content");
  return doc;
}

std::string yaml_scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_float()) return format_number(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

}  // namespace servelab::engines::detail
