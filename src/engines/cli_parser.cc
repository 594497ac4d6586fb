// argparse (Python 3.12) and click (8.1) emulation for engine launch commands. See cli_parser.h.
#include "engines/cli_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "servelab/engines/engines.h"

namespace servelab::engines::detail {
namespace {

std::string strip(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Removes '_' between two digits (Python numeric literal rule for int()/float()); nullopt when an
// underscore is misplaced.
std::optional<std::string> drop_digit_underscores(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      continue;
    }
    out += s[i];
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

// argparse's name of an action in messages: all option strings joined by '/'.
std::vector<std::string> option_strings(const FlagSpec& spec) {
  std::vector<std::string> out;
  for (const auto& n : spec.names) {
    out.push_back(n);
    if (spec.kind == ValueKind::kBoolOptional && n.rfind("--", 0) == 0) out.push_back("--no-" + n.substr(2));
  }
  return out;
}

bool is_int_kind(ValueKind k) {
  return k == ValueKind::kInt || k == ValueKind::kIntList || k == ValueKind::kHumanInt;
}

// SequenceMatcher(None, a, b).ratio() without junk (inputs are short option names).
double sequence_ratio(const std::string& a, const std::string& b) {
  // Recursive longest-match decomposition, as difflib.get_matching_blocks.
  std::size_t matches = 0;
  struct Range {
    std::size_t alo, ahi, blo, bhi;
  };
  std::vector<Range> queue{{0, a.size(), 0, b.size()}};
  while (!queue.empty()) {
    Range r = queue.back();
    queue.pop_back();
    std::size_t best_i = r.alo, best_j = r.blo, best_k = 0;
    // Longest common substring; ties -> smallest i, then smallest j (difflib's contract).
    std::vector<std::size_t> prev(r.bhi - r.blo + 1, 0), cur(r.bhi - r.blo + 1, 0);
    for (std::size_t i = r.alo; i < r.ahi; ++i) {
      for (std::size_t j = r.blo; j < r.bhi; ++j) {
        std::size_t jj = j - r.blo + 1;
        cur[jj] = a[i] == b[j] ? prev[jj - 1] + 1 : 0;
        std::size_t k = cur[jj];
        if (k > best_k) {
          best_k = k;
          best_i = i + 1 - k;
          best_j = j + 1 - k;
        }
      }
      std::swap(prev, cur);
      std::fill(cur.begin(), cur.end(), 0);
    }
    if (best_k == 0) continue;
    matches += best_k;
    if (r.alo < best_i && r.blo < best_j) queue.push_back({r.alo, best_i, r.blo, best_j});
    if (best_i + best_k < r.ahi && best_j + best_k < r.bhi)
      queue.push_back({best_i + best_k, r.ahi, best_j + best_k, r.bhi});
  }
  std::size_t total = a.size() + b.size();
  return total == 0 ? 1.0 : 2.0 * static_cast<double>(matches) / static_cast<double>(total);
}

[[noreturn]] void argparse_error(const ArgparseSettings& s, const std::string& msg) {
  throw EngineArgError(s.kind, s.prog + ": error: " + msg);
}

// Validates/converts one argparse value; returns the normalised text stored in ParsedFlag::values.
std::string argparse_value(const FlagSpec& spec, const std::string& action_name, const std::string& v,
                           const ArgparseSettings& s) {
  std::string stored = v;
  switch (spec.kind) {
    case ValueKind::kInt:
    case ValueKind::kIntList: {
      auto n = python_int(v);
      if (!n) argparse_error(s, "argument " + action_name + ": invalid int value: " + python_repr(v));
      stored = std::to_string(*n);
      break;
    }
    case ValueKind::kHumanInt: {
      std::string t = strip(v);
      if (!t.empty() && std::string("KMGT").find(t.back()) != std::string::npos &&
          t.find('.') != std::string::npos) {
        std::string number = t.substr(0, t.size() - 1);
        bool numeric = !number.empty() && std::all_of(number.begin(), number.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
        });
        if (numeric) {
          std::string lower(1, static_cast<char>(std::tolower(static_cast<unsigned char>(t.back()))));
          argparse_error(
              s, "argument " + action_name + ": Decimals are not allowed with binary suffixes like " +
                     t.substr(t.size() - 1) + ". Did you mean to use " + number + lower + " instead?");
        }
      }
      auto n = human_readable_int(v);
      if (!n)
        argparse_error(s,
                       "argument " + action_name + ": invalid human_readable_int value: " + python_repr(v));
      stored = std::to_string(*n);
      break;
    }
    case ValueKind::kFloat: {
      if (!python_float(v))
        argparse_error(s, "argument " + action_name + ": invalid float value: " + python_repr(v));
      break;
    }
    case ValueKind::kJson: {
      // vLLM: type=json.loads-based parser; a JSON error becomes argparse's "invalid <type> value".
      // [unverified: the exact type-function name vLLM 0.13 reports]
      if (!nlohmann::json::accept(v))
        argparse_error(s, "argument " + action_name + ": invalid loads value: " + python_repr(v));
      break;
    }
    default:
      break;
  }
  if (!spec.choices.empty() &&
      std::find(spec.choices.begin(), spec.choices.end(), stored) == spec.choices.end()) {
    std::vector<std::string> reprs;
    for (const auto& c : spec.choices) reprs.push_back(is_int_kind(spec.kind) ? c : python_repr(c));
    // Python 3.12 format: invalid choice: <repr> (choose from <repr>, <repr>).
    argparse_error(s, "argument " + action_name +
                          ": invalid choice: " + (is_int_kind(spec.kind) ? stored : python_repr(stored)) +
                          " (choose from " + join(reprs, ", ") + ")");
  }
  return stored;
}

struct OptionEntry {
  std::string name;
  const FlagSpec* spec;
  bool negated;
};

struct Classified {
  enum Kind { kPositional, kKnown, kUnknown } kind = kPositional;
  const FlagSpec* spec = nullptr;
  bool negated = false;
  std::optional<std::string> explicit_arg;
};

bool looks_negative_number(const std::string& t) {
  // argparse _negative_number_matcher: '^-\d+$|^-\d*\.\d+$'
  if (t.size() < 2 || t[0] != '-') return false;
  std::size_t i = 1, digits_before = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++digits_before;
  if (i == t.size()) return digits_before > 0;
  if (t[i] != '.') return false;
  ++i;
  std::size_t digits_after = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++digits_after;
  return i == t.size() && digits_after > 0;
}

}  // namespace

std::optional<long long> python_int(const std::string& text) {
  std::string t = strip(text);
  if (t.empty()) return std::nullopt;
  std::size_t start = (t[0] == '+' || t[0] == '-') ? 1 : 0;
  std::string digits = t.substr(start);
  if (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits[0]))) return std::nullopt;
  auto cleaned = drop_digit_underscores(digits);
  if (!cleaned) return std::nullopt;
  if (!std::all_of(cleaned->begin(), cleaned->end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  errno = 0;
  long long v = std::strtoll(cleaned->c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;  // Python would accept; no engine knob needs > 2^63
  return t[0] == '-' ? -v : v;
}

std::optional<double> python_float(const std::string& text) {
  std::string t = strip(text);
  if (t.empty()) return std::nullopt;
  std::string lower;
  for (char c : t) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string body = (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
  double sign = lower[0] == '-' ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") return sign * std::numeric_limits<double>::infinity();
  if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
  for (char c : body)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' || c == '-' ||
          c == '_'))
      return std::nullopt;
  auto cleaned = drop_digit_underscores(body);
  if (!cleaned || cleaned->empty()) return std::nullopt;
  const char* begin = cleaned->c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end != begin + cleaned->size()) return std::nullopt;
  if (!std::any_of(cleaned->begin(), cleaned->end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  return sign * v;
}

std::optional<long long> human_readable_int(const std::string& text) {
  std::string t = strip(text);
  if (!t.empty()) {
    char suffix = t.back();
    std::string number = t.substr(0, t.size() - 1);
    static const std::map<char, double> kDecimal{{'k', 1e3}, {'m', 1e6}, {'g', 1e9}, {'t', 1e12}};
    static const std::map<char, long long> kBinary{
        {'K', 1LL << 10}, {'M', 1LL << 20}, {'G', 1LL << 30}, {'T', 1LL << 40}};
    // re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
    auto dot = number.find('.');
    auto all_digits = [](const std::string& s) {
      return !s.empty() && std::all_of(s.begin(), s.end(),
                                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    bool number_ok = dot == std::string::npos
                         ? all_digits(number)
                         : all_digits(number.substr(0, dot)) && all_digits(number.substr(dot + 1));
    constexpr double kMax = 9.0e18;  // keep the product inside long long
    if (number_ok && kDecimal.count(suffix)) {
      double v = std::strtod(number.c_str(), nullptr) * kDecimal.at(suffix);
      if (v >= kMax) return std::nullopt;
      return static_cast<long long>(v);
    }
    if (number_ok && kBinary.count(suffix) && dot == std::string::npos) {
      double v = std::strtod(number.c_str(), nullptr) * static_cast<double>(kBinary.at(suffix));
      if (v >= kMax) return std::nullopt;
      return std::strtoll(number.c_str(), nullptr, 10) * kBinary.at(suffix);
    }
  }
  return python_int(text);
}

std::string python_repr(const std::string& text) {
  bool has_single = text.find('\'') != std::string::npos;
  bool has_double = text.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == static_cast<unsigned char>(quote))
      out += std::string("\\") + quote;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::vector<std::string> close_matches(const std::string& word,
                                       const std::vector<std::string>& possibilities) {
  std::vector<std::pair<double, std::string>> scored;
  for (const auto& p : possibilities) {
    double r = sequence_ratio(p, word);
    if (r >= 0.6) scored.emplace_back(r, p);
  }
  // heapq.nlargest(3, (score, x)): highest score first, ties by larger string.
  std::sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second > y.second;
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

int to_int(const std::string& text) {
  long long v = python_int(text).value_or(0);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw std::invalid_argument("value " + text + " is out of range for servelab's 32-bit engine knobs");
  return static_cast<int>(v);
}
double to_double(const std::string& text) {
  return python_float(text).value_or(0.0);
}
bool to_bool(const std::string& text) {
  return text == "true";
}

std::vector<FlagSpec> specs_in(const std::vector<FlagSpec>& specs, const EngineVersion& version) {
  std::vector<FlagSpec> out;
  out.reserve(specs.size());
  for (const auto& s : specs)
    if (s.versions.contains(version)) out.push_back(s);
  return out;
}

ParsedArgs parse_argparse(const std::vector<FlagSpec>& specs, const std::vector<std::string>& args,
                          const ArgparseSettings& s) {
  std::vector<OptionEntry> entries;  // declaration order (Python dict order)
  std::map<std::string, std::size_t> index;
  for (const auto& spec : specs) {
    for (const auto& n : spec.names) {
      entries.push_back({n, &spec, false});
      index[n] = entries.size() - 1;
      if (spec.kind == ValueKind::kBoolOptional && n.rfind("--", 0) == 0) {
        entries.push_back({"--no-" + n.substr(2), &spec, true});
        index[entries.back().name] = entries.size() - 1;
      }
    }
  }
  auto classify = [&](const std::string& t) -> Classified {
    Classified c;
    if (t.empty() || t[0] != '-') return c;
    if (auto it = index.find(t); it != index.end()) {
      c.kind = Classified::kKnown;
      c.spec = entries[it->second].spec;
      c.negated = entries[it->second].negated;
      return c;
    }
    if (t.size() == 1) return c;
    if (auto eq = t.find('='); eq != std::string::npos) {
      if (auto it = index.find(t.substr(0, eq)); it != index.end()) {
        c.kind = Classified::kKnown;
        c.spec = entries[it->second].spec;
        c.negated = entries[it->second].negated;
        c.explicit_arg = t.substr(eq + 1);
        return c;
      }
    }
    // _get_option_tuples
    std::vector<std::pair<const OptionEntry*, std::optional<std::string>>> tuples;
    if (t.size() > 1 && t[1] == '-') {
      if (s.allow_abbrev) {
        auto eq = t.find('=');
        std::string prefix = t.substr(0, eq);
        std::optional<std::string> explicit_arg;
        if (eq != std::string::npos) explicit_arg = t.substr(eq + 1);
        for (const auto& e : entries)
          if (e.name.rfind(prefix, 0) == 0) tuples.emplace_back(&e, explicit_arg);
      }
    } else {
      std::string short_prefix = t.substr(0, 2);
      for (const auto& e : entries) {
        if (e.name == short_prefix)
          tuples.emplace_back(&e, t.substr(2));
        else if (e.name.rfind(t, 0) == 0)
          tuples.emplace_back(&e, std::nullopt);
      }
    }
    if (tuples.size() > 1) {
      std::vector<std::string> names;
      for (const auto& tup : tuples) names.push_back(tup.first->name);
      argparse_error(s, "ambiguous option: " + t + " could match " + join(names, ", "));
    }
    if (tuples.size() == 1) {
      c.kind = Classified::kKnown;
      c.spec = tuples[0].first->spec;
      c.negated = tuples[0].first->negated;
      c.explicit_arg = tuples[0].second;
      return c;
    }
    if (looks_negative_number(t)) return c;
    if (t.find(' ') != std::string::npos) return c;
    c.kind = Classified::kUnknown;
    return c;
  };

  // First pass, as argparse: classify every argument before consuming (ambiguity errors come first).
  std::vector<Classified> cls(args.size());
  std::vector<bool> is_double_dash(args.size(), false);
  bool after_dd = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!after_dd && args[i] == "--") {
      after_dd = true;
      is_double_dash[i] = true;
      continue;
    }
    if (!after_dd) cls[i] = classify(args[i]);
  }

  ParsedArgs out;
  std::vector<std::string> extras;
  bool seen_required = s.required == nullptr;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (is_double_dash[i]) continue;
    const Classified& c = cls[i];
    if (c.kind == Classified::kPositional) {
      if (out.positionals.size() < s.max_positionals)
        out.positionals.push_back(args[i]);
      else
        extras.push_back(args[i]);
      continue;
    }
    if (c.kind == Classified::kUnknown) {
      extras.push_back(args[i]);
      continue;
    }
    const FlagSpec& spec = *c.spec;
    std::string action_name = join(option_strings(spec), "/");
    ParsedFlag pf;
    pf.spec = &spec;
    pf.negated = c.negated;
    auto next_is_value = [&](std::size_t j) {
      return j < args.size() && !is_double_dash[j] && cls[j].kind == Classified::kPositional;
    };
    switch (spec.kind) {
      case ValueKind::kStoreTrue:
      case ValueKind::kBoolOptional:
        if (c.explicit_arg)
          argparse_error(
              s, "argument " + action_name + ": ignored explicit argument " + python_repr(*c.explicit_arg));
        pf.values = {c.negated ? "false" : "true"};
        break;
      case ValueKind::kStringList:
      case ValueKind::kIntList:
        if (c.explicit_arg) {
          pf.values.push_back(argparse_value(spec, action_name, *c.explicit_arg, s));
        } else {
          while (next_is_value(i + 1)) pf.values.push_back(argparse_value(spec, action_name, args[++i], s));
          if (pf.values.empty())
            argparse_error(s, "argument " + action_name + ": expected at least one argument");
        }
        break;
      default:
        if (c.explicit_arg) {
          pf.values.push_back(argparse_value(spec, action_name, *c.explicit_arg, s));
        } else if (next_is_value(i + 1)) {
          pf.values.push_back(argparse_value(spec, action_name, args[++i], s));
        } else {
          argparse_error(s, "argument " + action_name + ": expected one argument");
        }
        break;
    }
    if (&spec == s.required) seen_required = true;
    out.flags.push_back(std::move(pf));
  }
  if (!seen_required)
    argparse_error(s, "the following arguments are required: " + join(option_strings(*s.required), "/"));
  if (!extras.empty()) {
    const std::string& prog = s.unrecognized_prog.empty() ? s.prog : s.unrecognized_prog;
    EngineArgError e(s.kind, prog + ": error: unrecognized arguments: " + join(extras, " "));
    e.unrecognized = extras;
    throw e;
  }
  return out;
}

ParsedArgs parse_click(const std::vector<FlagSpec>& specs, const std::vector<std::string>& args,
                       const std::string& argument_name, EngineKind kind) {
  auto fail = [&](const std::string& msg) -> void { throw EngineArgError(kind, "Error: " + msg); };
  auto no_such_option = [&](const std::string& msg, const std::string& word) -> void {
    EngineArgError e(kind, "Error: " + msg);
    e.unrecognized = {word};
    throw e;
  };
  std::map<std::string, const FlagSpec*> long_opts;
  std::vector<std::string> long_names;
  for (const auto& spec : specs)
    for (const auto& n : spec.names) {
      long_opts[n] = &spec;
      long_names.push_back(n);
    }
  struct Occurrence {
    const FlagSpec* spec;
    std::string name;
    std::string value;
  };
  std::vector<Occurrence> occurrences;
  std::vector<std::string> positionals;
  bool after_dd = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& t = args[i];
    if (!after_dd && t == "--") {
      after_dd = true;
      continue;
    }
    if (after_dd || t.size() < 2 || t[0] != '-') {
      positionals.push_back(t);
      continue;
    }
    std::string name = t;
    std::optional<std::string> explicit_value;
    if (auto eq = t.find('='); eq != std::string::npos) {
      name = t.substr(0, eq);
      explicit_value = t.substr(eq + 1);
    }
    auto it = long_opts.find(name);
    if (it == long_opts.end()) {
      if (t.rfind("--", 0) == 0) {
        auto possibilities = close_matches(name, long_names);
        std::string msg = "No such option: " + name;
        if (!possibilities.empty()) {
          std::sort(possibilities.begin(), possibilities.end());
          msg += possibilities.size() == 1 ? " Did you mean " + possibilities[0] + "?"
                                           : " (Possible options: " + join(possibilities, ", ") + ")";
        }
        no_such_option(msg, t);
      }
      // click's short-option path: the first character names the (unknown) short option.
      no_such_option("No such option: " + t.substr(0, 2), t);
    }
    const FlagSpec* spec = it->second;
    if (spec->kind == ValueKind::kStoreTrue) {
      if (explicit_value) fail("Option " + python_repr(name) + " does not take a value.");
      occurrences.push_back({spec, name, "true"});
      continue;
    }
    if (explicit_value) {
      occurrences.push_back({spec, name, *explicit_value});
    } else if (i + 1 < args.size()) {
      occurrences.push_back({spec, name, args[++i]});
    } else {
      fail("Option " + python_repr(name) + " requires an argument.");
    }
  }
  // Processing: each option once (last value wins), in order of first occurrence.
  std::vector<const FlagSpec*> order;
  std::map<const FlagSpec*, std::string> last;
  for (const auto& o : occurrences) {
    if (!last.count(o.spec)) order.push_back(o.spec);
    last[o.spec] = o.value;
  }
  ParsedArgs out;
  for (const FlagSpec* spec : order) {
    std::string v = last[spec];
    std::vector<std::string> hints;
    for (const auto& n : spec->names) hints.push_back("'" + n + "'");
    std::string hint = join(hints, " / ");
    if (spec->kind == ValueKind::kInt) {
      auto n = python_int(v);
      if (!n) fail("Invalid value for " + hint + ": " + python_repr(v) + " is not a valid integer.");
      v = std::to_string(*n);
    } else if (spec->kind == ValueKind::kFloat) {
      if (!python_float(v))
        fail("Invalid value for " + hint + ": " + python_repr(v) + " is not a valid float.");
    }
    if (!spec->choices.empty() &&
        std::find(spec->choices.begin(), spec->choices.end(), v) == spec->choices.end()) {
      std::vector<std::string> reprs;
      for (const auto& c : spec->choices) reprs.push_back(python_repr(c));
      fail("Invalid value for " + hint + ": " + python_repr(v) +
           (spec->choices.size() == 1 ? " is not " : " is not one of ") + join(reprs, ", ") + ".");
    }
    out.flags.push_back({spec, {v}, false});
  }
  if (positionals.empty()) fail("Missing argument " + python_repr(argument_name) + ".");
  out.positionals.push_back(positionals[0]);
  if (positionals.size() > 1) {
    std::vector<std::string> extra(positionals.begin() + 1, positionals.end());
    fail(std::string(extra.size() == 1 ? "Got unexpected extra argument ("
                                       : "Got unexpected extra arguments (") +
         join(extra, " ") + ")");
  }
  return out;
}

void apply_parsed(LaunchConfig& config, const ParsedArgs& parsed) {
  for (const auto& pf : parsed.flags) {
    const FlagSpec& spec = *pf.spec;
    config.explicit_flags.insert(spec.names[0]);
    if (spec.apply) {
      spec.apply(config, pf.values);
      continue;
    }
    EngineOption opt;
    if (spec.kind == ValueKind::kStoreTrue || spec.kind == ValueKind::kBoolOptional) {
      opt.flag = pf.negated ? "--no-" + spec.names[0].substr(2) : spec.names[0];
    } else {
      opt.flag = spec.names[0];
      opt.values = pf.values;
    }
    // Last occurrence wins, as in the engines: replace an earlier record of the same option.
    auto same = [&](const EngineOption& o) {
      return o.flag == spec.names[0] || o.flag == "--no-" + spec.names[0].substr(2);
    };
    config.unmodelled_options.erase(
        std::remove_if(config.unmodelled_options.begin(), config.unmodelled_options.end(), same),
        config.unmodelled_options.end());
    config.unmodelled_options.push_back(std::move(opt));
  }
}

}  // namespace servelab::engines::detail
