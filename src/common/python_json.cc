// The Python-json writer and reader fix-up (see python_json.h).
#include "servelab/common/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "servelab/common/utf8.h"

namespace servelab::common {
namespace {

// Shortest round-trip digits of a finite non-zero |value|: digits without dot, decimal exponent `decpt`
// such that value = 0.d1d2... * 10^decpt (CPython's _Py_dg_dtoa mode 0 convention).
void shortest_digits(double value, std::string& digits, int& decpt) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(value), std::chars_format::scientific);
  const std::string_view s(buf, static_cast<std::size_t>(res.ptr - buf));  // d[.ddd]e[+-]XX
  const std::size_t e = s.find('e');
  digits.clear();
  for (std::size_t i = 0; i < e; ++i) {
    if (s[i] != '.') digits.push_back(s[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int exp10 = 0;
  std::string_view exp_text = s.substr(e + 1);
  if (!exp_text.empty() && exp_text.front() == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp10);
  decpt = exp10 + 1;
}

std::string finite_repr(double value) {
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  std::string digits;
  int decpt = 0;
  shortest_digits(value, digits, decpt);
  std::string out;
  if (std::signbit(value)) out.push_back('-');
  const int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (n > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    const int exp10 = decpt - 1;
    out.push_back('e');
    out.push_back(exp10 < 0 ? '-' : '+');
    const int abs_exp = std::abs(exp10);
    if (abs_exp < 10) out.push_back('0');
    out.append(std::to_string(abs_exp));
  } else if (decpt <= 0) {
    out.append("0.");
    out.append(static_cast<std::size_t>(-decpt), '0');
    out.append(digits);
  } else if (decpt >= n) {
    out.append(digits);
    out.append(static_cast<std::size_t>(decpt - n), '0');
    out.append(".0");
  } else {
    out.append(digits, 0, static_cast<std::size_t>(decpt));
    out.push_back('.');
    out.append(digits, static_cast<std::size_t>(decpt), std::string::npos);
  }
  return out;
}

void append_hex4(std::string& out, unsigned v) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.append("\\u");
  for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(v >> shift) & 0xF]);
}

void append_string(std::string& out, std::string_view s, InvalidUtf8 invalid) {
  out.push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto uc = static_cast<unsigned char>(c);
    if (uc >= 0x20 && uc < 0x7F && c != '"' && c != '\\') {
      out.push_back(c);
      ++i;
      continue;
    }
    switch (c) {
      case '"':
        out.append("\\\"");
        ++i;
        continue;
      case '\\':
        out.append("\\\\");
        ++i;
        continue;
      case '\n':
        out.append("\\n");
        ++i;
        continue;
      case '\r':
        out.append("\\r");
        ++i;
        continue;
      case '\t':
        out.append("\\t");
        ++i;
        continue;
      case '\b':
        out.append("\\b");
        ++i;
        continue;
      case '\f':
        out.append("\\f");
        ++i;
        continue;
      default:
        break;
    }
    std::size_t subpart = 0;
    if (utf8_well_formed_length(s, i, subpart) == 0) {
      if (invalid == InvalidUtf8::kThrow) {
        throw std::invalid_argument("JSON string: invalid UTF-8 at byte " + std::to_string(i) + " of " +
                                    std::to_string(s.size()));
      }
      append_hex4(out, 0xFFFD);
      i += subpart;
      continue;
    }
    const char32_t cp = utf8_next(s, i);
    if (cp >= 0x10000) {
      const char32_t v = cp - 0x10000;
      append_hex4(out, 0xD800 | static_cast<unsigned>(v >> 10));
      append_hex4(out, 0xDC00 | static_cast<unsigned>(v & 0x3FF));
    } else {
      append_hex4(out, static_cast<unsigned>(cp));
    }
  }
  out.push_back('"');
}

void dump(std::string& out, const nlohmann::ordered_json& v, InvalidUtf8 invalid) {
  using value_t = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case value_t::null:
    case value_t::discarded:
      out.append("null");
      return;
    case value_t::boolean:
      out.append(v.get<bool>() ? "true" : "false");
      return;
    case value_t::number_integer:
      out.append(std::to_string(v.get<std::int64_t>()));
      return;
    case value_t::number_unsigned:
      out.append(std::to_string(v.get<std::uint64_t>()));
      return;
    case value_t::number_float:
      out.append(python_json_float(v.get<double>()));
      return;
    case value_t::string:
      append_string(out, v.get_ref<const std::string&>(), invalid);
      return;
    case value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& item : v) {
        if (!first) out.append(", ");
        first = false;
        dump(out, item, invalid);
      }
      out.push_back(']');
      return;
    }
    case value_t::object: {
      out.push_back('{');
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out.append(", ");
        first = false;
        append_string(out, it.key(), invalid);
        out.append(": ");
        dump(out, it.value(), invalid);
      }
      out.push_back('}');
      return;
    }
    case value_t::binary:
      out.append("null");
      return;
  }
}

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return finite_repr(value);
}

std::string python_json_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return finite_repr(value);
}

std::string python_json_dumps(const nlohmann::ordered_json& value, InvalidUtf8 invalid) {
  std::string out;
  dump(out, value, invalid);
  return out;
}

std::string python_nonfinite_to_null(std::string_view text, int* replaced) {
  std::string out;
  out.reserve(text.size());
  int n = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool hit = false;
    for (const std::string_view token : {"-Infinity", "Infinity", "NaN"})
      if (text.substr(i, token.size()) == token) {
        out += "null";
        i += token.size() - 1;
        ++n;
        hit = true;
        break;
      }
    if (!hit) out += c;
  }
  if (replaced) *replaced = n;
  return out;
}

}  // namespace servelab::common
