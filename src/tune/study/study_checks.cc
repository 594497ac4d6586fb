#include "tune/study/study_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "servelab/tune/study/space.h"

namespace servelab::tune::detail {

bool is_identifier(const std::string& id) {
  return !id.empty() && id.size() <= 64 && std::isalnum(static_cast<unsigned char>(id[0])) &&
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

}  // namespace servelab::tune::detail
