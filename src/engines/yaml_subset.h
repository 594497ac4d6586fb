// servelab/engines private: the YAML subset engine option files use (TRT-LLM --extra_llm_api_options,
// vLLM/SGLang --config): block mappings by indentation, scalars (plain or quoted), flow lists [a, b],
// block lists of scalars (- a), `null`/`~`, comments. Anything else (anchors, multi-line strings, flow
// mappings, nested lists) is refused with the line number, never guessed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servelab::engines::detail {

/// Parses `text` into JSON (mappings -> objects, lists -> arrays; scalars: true/false/null/ints/floats
/// as such, everything else a string). Throws std::invalid_argument("YAML line N: ...") outside the subset.
nlohmann::json parse_yaml_subset(const std::string& text);

/// A scalar's text as an engine reads it from an option file: a string as is, numbers as Python's str()
/// writes them, true/false; anything else its JSON text.
std::string yaml_scalar_text(const nlohmann::json& value);

}  // namespace servelab::engines::detail
