// servelab/report: JSON text exactly as CPython's `json.dump(obj, f)` writes it, so that servelab's result
// files are byte-comparable with `vllm bench serve --save-result` files.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace servelab::report {

/// CPython `repr(float)`: shortest round-trip digits; scientific when the decimal exponent is < -4 or
/// >= 16 ("1e-05", "1e+16", "1.5e+300"), otherwise fixed with at least one fractional digit ("5.0",
/// "0.0001", "123456789.123"). Non-finite values give "inf", "-inf", "nan" (Python's spelling).
/// Source: CPython Python/pystrtod.c format_float_short (mode 'r'). Thread-safety: pure.
std::string python_float_repr(double value);

/// As python_float_repr, but non-finite values spelled as `json.dumps` does: Infinity, -Infinity, NaN.
std::string python_json_float(double value);

/// Serialises `value` as `json.dumps(value)` with default arguments: separators ", " and ": ", no indent,
/// ensure_ascii (non-ASCII and control characters as \uXXXX, surrogate pairs above U+FFFF), keys in the
/// object's stored order, integers as integers, doubles as python_json_float (so 10.0 stays "10.0").
/// Invalid UTF-8 bytes in strings are written as \ufffd. Never throws except std::bad_alloc.
std::string python_json_dumps(const nlohmann::ordered_json& value);

}  // namespace servelab::report
