// servelab/common: JSON text exactly as CPython's `json.dumps(obj)` writes it — the one writer of servelab
// for bytes that must equal Python's: request bodies as vLLM's benchmark sends them (client) and result
// files byte-comparable with `vllm bench serve --save-result` files (report).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace servelab::common {

/// CPython `repr(float)`: shortest round-trip digits; scientific when the decimal exponent is < -4 or
/// >= 16 ("1e-05", "1e+16", "1.5e+300"), otherwise fixed with at least one fractional digit ("5.0",
/// "0.0001", "123456789.123"). Non-finite values give "inf", "-inf", "nan" (Python's spelling).
/// Source: CPython Python/pystrtod.c format_float_short (mode 'r'). Thread-safety: pure.
std::string python_float_repr(double value);

/// As python_float_repr, but non-finite values spelled as `json.dumps` does: Infinity, -Infinity, NaN.
std::string python_json_float(double value);

/// What python_json_dumps does with a string that is not well-formed UTF-8 (Python's `str` cannot hold
/// one, so some decision happened before json.dumps in vLLM).
enum class InvalidUtf8 {
  /// std::invalid_argument naming the byte offset: request bodies, where vLLM would have failed reading
  /// the data (Python's strict UTF-8 decoding) and a replaced prompt would be a silently different request.
  kThrow,
  /// Each maximal ill-formed subpart as \ufffd, as Python's bytes.decode("utf-8", errors="replace")
  /// (Unicode 15 §3.9; common/utf8.h): result files, which must be written whatever bytes a server sent.
  kReplace,
};

/// Serialises `value` as `json.dumps(value)` with default arguments: separators ", " and ": ", no indent,
/// ensure_ascii (non-ASCII and control characters as \uXXXX, surrogate pairs above U+FFFF), keys in the
/// object's stored order, integers as integers, doubles as python_json_float (so 10.0 stays "10.0", 1e15
/// is "1000000000000000.0"). Invalid UTF-8 in strings (keys too) as `invalid` says. Throws only
/// std::invalid_argument (kThrow) and std::bad_alloc.
std::string python_json_dumps(const nlohmann::ordered_json& value, InvalidUtf8 invalid);

/// `text` with every bare NaN, Infinity and -Infinity outside strings replaced by null: the tokens Python's
/// json module writes for non-finite floats (vLLM's result of a run where nothing succeeded; Hugging Face
/// configs such as Mamba's time_step_limit [0.0, Infinity]), which strict JSON (RFC 8259, nlohmann::json)
/// rejects. `*replaced` (if given) receives how many were replaced. Escapes inside strings are skipped.
/// Thread-safety: pure.
std::string python_nonfinite_to_null(std::string_view text, int* replaced = nullptr);

}  // namespace servelab::common
