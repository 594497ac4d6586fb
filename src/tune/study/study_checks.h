// servelab/tune private: checks of a study's names and rendering conditions that the parser runs once the
// values they apply to are read (study_parse.cc reports their failures with file, line and key).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "servelab/tune/study/study.h"

namespace servelab::tune::detail {

/// Whether `id` may name a study, engine, scenario or knob: 1 to `max_size` letters, digits, '.', '_' or '-',
/// starting with a letter or digit. Such names key the trials ("vllm{ctx=32768}", "sharegpt@c16"), name the
/// output directory (the study: out/<name>, at most 128) and stand in reports as code, unescaped (new-user
/// trial: an engine `vllm<i>` and a scenario `s<1>&` reached report.md as markup).
bool is_identifier(const std::string& id, std::size_t max_size = 64);

/// A rendering condition that cannot be evaluated on a value its part applies to.
struct ConditionError {
  std::size_t part = 0;  ///< index into the knob's parts of one engine
  std::string message;   ///< eval_condition's, the value and the fields a condition may use
};

/// Evaluates every `when` of `parts` on each value of `values` they apply to, as check_config and render
/// do: the reject parts on every non-default value, the other parts on the values no reject part matches
/// (new-user trial: `dpp > 1` and `dp => 1` stopped a running study with no file or line; review: a
/// condition on a field only the non-rejected values have is valid). The first failure, or nullopt.
std::optional<ConditionError> check_conditions(const std::vector<RenderPart>& parts,
                                               const std::vector<KnobValue>& values);

}  // namespace servelab::tune::detail
