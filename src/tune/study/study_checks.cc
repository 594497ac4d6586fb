#include "tune/study/study_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "servelab/common/text.h"
#include "servelab/tune/study/space.h"

namespace servelab::tune {

namespace {

bool truthy(const std::string& v) {
  return !v.empty() && v != "false" && v != "0";
}

}  // namespace

// Defined here, with the parse-time checks, so that the study parser alone (fuzz/study_toml_fuzz) holds it.
bool eval_condition(const std::string& when_raw, const std::map<std::string, std::string>& fields) {
  const std::string when = common::trim(when_raw, " \t");
  if (when.empty()) return true;
  auto field = [&](const std::string& name) -> const std::string& {
    auto it = fields.find(name);
    if (it == fields.end()) throw StudyError("condition '" + when + "' uses unknown field '" + name + "'");
    return it->second;
  };
  for (const char* op : {"==", "!=", ">=", "<=", ">", "<"}) {
    size_t pos = when.find(op);
    if (pos == std::string::npos) continue;
    std::string lhs = common::trim(when.substr(0, pos), " \t"),
                rhs = common::trim(when.substr(pos + std::string(op).size()), " \t");
    if (rhs.size() >= 2 && (rhs.front() == '"' || rhs.front() == '\'')) rhs = rhs.substr(1, rhs.size() - 2);
    const std::string& v = field(lhs);
    const std::string o(op);
    if (o == "==") return v == rhs;
    if (o == "!=") return v != rhs;
    double a, b;
    try {
      a = std::stod(v);
      b = std::stod(rhs);
    } catch (const std::exception&) {
      throw StudyError("condition '" + when + "' compares non-numbers");
    }
    if (o == ">=") return a >= b;
    if (o == "<=") return a <= b;
    if (o == ">") return a > b;
    return a < b;
  }
  if (when[0] == '!') return !truthy(field(common::trim(when.substr(1), " \t")));
  return truthy(field(when));
}

namespace detail {

bool is_identifier(const std::string& id, std::size_t max_size) {
  return !id.empty() && id.size() <= max_size && std::isalnum(static_cast<unsigned char>(id[0])) &&
         std::all_of(id.begin(), id.end(), [](char ch) {
           return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
         });
}

std::optional<ConditionError> check_conditions(const std::vector<RenderPart>& parts,
                                               const std::vector<KnobValue>& values) {
  for (const auto& v : values) {
    if (v.is_default) continue;  // never rendered (check_config, render)
    auto error = [&](std::size_t i, const StudyError& e) {
      std::string fields;
      for (const auto& [f, text] : v.fields) fields += (fields.empty() ? "" : ", ") + f;
      return ConditionError{i, fmt::format("{} (value {}; the fields a condition may use: {}; operators ==, "
                                           "!=, >=, <=, >, <, or a field alone, or !field)",
                                           e.what(), v.label, fields)};
    };
    bool rejected = false;
    for (std::size_t i = 0; i < parts.size() && !rejected; ++i) {
      if (parts[i].reject.empty()) continue;
      try {
        rejected = eval_condition(parts[i].when, v.fields);
      } catch (const StudyError& e) {
        return error(i, e);
      }
    }
    if (rejected) continue;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!parts[i].reject.empty()) continue;
      try {
        (void)eval_condition(parts[i].when, v.fields);
      } catch (const StudyError& e) {
        return error(i, e);
      }
    }
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace servelab::tune
