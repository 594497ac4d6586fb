// Python `repr(float)` / `json.dumps` formatting: fixed cases, a bulk comparison with CPython, and a
// byte-exact round trip of a real `vllm bench serve` result file.
#include "servelab/common/python_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "servelab/common/paths.h"

namespace servelab::common {
namespace {

TEST(PythonFloatRepr, FixedCases) {
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(1e-05), "1e-05");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(5.0), "5.0");
  EXPECT_EQ(python_float_repr(123456789.123), "123456789.123");
  EXPECT_EQ(python_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(0.00012345), "0.00012345");
  EXPECT_EQ(python_float_repr(1.5e-7), "1.5e-07");
  EXPECT_EQ(python_float_repr(0.0), "0.0");
  EXPECT_EQ(python_float_repr(-0.0), "-0.0");
  EXPECT_EQ(python_float_repr(-2.5), "-2.5");
  EXPECT_EQ(python_float_repr(2.5e100), "2.5e+100");
  EXPECT_EQ(python_float_repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(python_float_repr(100.0), "100.0");
  EXPECT_EQ(python_float_repr(1234567890123456789.0), "1.2345678901234568e+18");
  EXPECT_EQ(python_float_repr(5e-324), "5e-324");
  EXPECT_EQ(python_float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(python_float_repr(9007199254740993.0), "9007199254740992.0");
  EXPECT_EQ(python_float_repr(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(python_float_repr(1e22), "1e+22");
  EXPECT_EQ(python_float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(python_float_repr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(python_float_repr(std::nan("")), "nan");
  EXPECT_EQ(python_json_float(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(python_json_float(-std::numeric_limits<double>::infinity()), "-Infinity");
  EXPECT_EQ(python_json_float(std::nan("")), "NaN");
  EXPECT_EQ(python_json_float(1e-05), "1e-05");
}

// 20,000 doubles with random bit patterns and random magnitudes, formatted by CPython and by us.
TEST(PythonFloatRepr, MatchesCPythonOnRandomDoubles) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> exponent(-30, 30), mantissa(1, 10);
  std::vector<double> values;
  for (int i = 0; i < 10000; ++i) {
    std::uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isfinite(d)) values.push_back(d);
    values.push_back(mantissa(rng) * std::pow(10.0, std::floor(exponent(rng))));
  }
  const auto path =
      std::filesystem::temp_directory_path() / ("servelab_repr_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream f(path);
    char buf[64];
    for (double d : values) {
      std::snprintf(buf, sizeof buf, "%a\n", d);
      f << buf;
    }
  }
  const std::string cmd =
      "/usr/bin/python3 -c \"import sys\nfor l in open(sys.argv[1]): "
      "print(repr(float.fromhex(l.strip())))\" '" +
      path.string() + "'";
  std::string text;
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << "python3 failed: " << cmd;
  std::filesystem::remove(path);
  std::istringstream lines(text);
  std::string line;
  std::size_t i = 0, mismatches = 0;
  while (std::getline(lines, line)) {
    ASSERT_LT(i, values.size());
    if (python_float_repr(values[i]) != line && ++mismatches < 10) {
      ADD_FAILURE() << "value " << i << ": python " << line << ", servelab " << python_float_repr(values[i]);
    }
    ++i;
  }
  EXPECT_EQ(i, values.size());
  EXPECT_EQ(mismatches, 0u);
}

TEST(PythonJsonDumps, SeparatorsAndTypes) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["b"] = nlohmann::ordered_json::array({1, 2.0, nullptr, true, nlohmann::ordered_json::object()});
  j["a"] = nlohmann::ordered_json::array();
  j["inf"] = std::numeric_limits<double>::infinity();
  j["neg"] = -7;
  j["big"] = 18446744073709551615ull;
  EXPECT_EQ(
      python_json_dumps(j, InvalidUtf8::kThrow),
      R"({"b": [1, 2.0, null, true, {}], "a": [], "inf": Infinity, "neg": -7, "big": 18446744073709551615})");
}

TEST(PythonJsonDumps, StringEscapesAsEnsureAscii) {
  // json.dumps('a"b\\c\n\t\x01\x7f é 😀 /')
  const std::string s = "a\"b\\c\n\t\x01\x7f \xc3\xa9 \xf0\x9f\x98\x80 /";
  for (InvalidUtf8 mode : {InvalidUtf8::kThrow, InvalidUtf8::kReplace}) {
    EXPECT_EQ(python_json_dumps(s, mode), R"("a\"b\\c\n\t\u0001\u007f \u00e9 \ud83d\ude00 /")");
    EXPECT_EQ(python_json_dumps(std::string("\r\b\f"), mode), R"("\r\b\f")");
  }
}

// Bug (issue 12): the result-file writer replaced each invalid byte by U+FFFD, the payload writer decoded
// "\xC3(" as U+00E8 and lost the '('. Python: json.dumps(b.decode("utf-8", "replace")) replaces each maximal
// subpart once (a truncated "\xe2\x82" is one U+FFFD; a surrogate "\xed\xa0\x80" and "\xf0\x9f\x98" at the
// end are 3 and 1), and a strict decode fails.
TEST(PythonJsonDumps, InvalidUtf8ReplacedAsPythonOrRejected) {
  // python3 -c 'import json; print(json.dumps(b"x\x80y\xe2\x82".decode("utf-8", "replace")))'
  EXPECT_EQ(python_json_dumps(std::string("x\x80y\xe2\x82"), InvalidUtf8::kReplace), R"("x\ufffdy\ufffd")");
  // b"\xc3\x28\xed\xa0\x80\xf0\x9f\x98" → "\ufffd(\ufffd\ufffd\ufffd\ufffd"
  EXPECT_EQ(python_json_dumps(std::string("\xc3\x28\xed\xa0\x80\xf0\x9f\x98"), InvalidUtf8::kReplace),
            R"("\ufffd(\ufffd\ufffd\ufffd\ufffd")");
  // Overlong "/" (C0 AF) and above U+10FFFF (F4 90 80 80): invalid, as in Python.
  EXPECT_EQ(python_json_dumps(std::string("\xc0\xaf\xf4\x90\x80\x80"), InvalidUtf8::kReplace),
            R"("\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd")");
  // Keys too.
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j[std::string("k\xff")] = 1;
  EXPECT_EQ(python_json_dumps(j, InvalidUtf8::kReplace), R"({"k\ufffd": 1})");
  try {
    python_json_dumps(std::string("ab\xc3\x28"), InvalidUtf8::kThrow);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "JSON string: invalid UTF-8 at byte 2 of 4");
  }
  EXPECT_THROW(python_json_dumps(j, InvalidUtf8::kThrow), std::invalid_argument);
}

// Bug (issue 12): the payload writer printed 1e15 as nlohmann does ("1e+15"); Python writes repr(1e15).
TEST(PythonJsonDumps, FloatsAsPythonRepr) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array({1e15, 1e16, 0.1, 100.0, 1e-05});
  // python3 -c 'import json; print(json.dumps([1e15, 1e16, 0.1, 100.0, 1e-05]))'
  EXPECT_EQ(python_json_dumps(j, InvalidUtf8::kThrow), "[1000000000000000.0, 1e+16, 0.1, 100.0, 1e-05]");
}

// CPython's json.dumps(json.loads(ours)) must give back our exact bytes: random doubles (incl. inf),
// random Unicode (BMP and astral, controls, quotes), nested arrays/objects, ints near 2^63.
TEST(PythonJsonDumps, CPythonReserialisesIdentically) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> cp_class(0, 5), ascii(0, 127), bmp(0x80, 0xD7FF),
      astral(0x10000, 0x10FFFF);
  std::uniform_real_distribution<double> exponent(-12, 22);
  const auto utf8 = [](char32_t c, std::string& out) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  };
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  for (int i = 0; i < 300; ++i) {
    std::string text;
    for (int k = 0; k < 20; ++k) {
      const int cls = cp_class(rng);
      utf8(cls < 3   ? static_cast<char32_t>(ascii(rng))
           : cls < 5 ? static_cast<char32_t>(bmp(rng))
                     : static_cast<char32_t>(astral(rng)),
           text);
    }
    const double x = std::uniform_real_distribution<double>(-1, 1)(rng) * std::pow(10.0, exponent(rng));
    doc["k" + std::to_string(i) + text] = nlohmann::ordered_json::array(
        {x, static_cast<double>(i), text, nlohmann::ordered_json{{"n", 9223372036854775807LL - i}}, nullptr});
  }
  doc["inf"] = std::numeric_limits<double>::infinity();
  const std::string ours = python_json_dumps(doc, InvalidUtf8::kThrow);
  const auto path =
      std::filesystem::temp_directory_path() / ("servelab_json_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream f(path, std::ios::binary);
    f << ours;
  }
  const std::string cmd =
      "/usr/bin/python3 -c \"import json,sys\nsys.stdout.write(json.dumps(json.load("
      "open(sys.argv[1]))))\" '" +
      path.string() + "'";
  std::string text;
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << "python3 failed: " << cmd;
  std::filesystem::remove(path);
  EXPECT_EQ(text.size(), ours.size());
  EXPECT_TRUE(text == ours) << "first difference at byte "
                            << std::mismatch(text.begin(), text.end(), ours.begin(), ours.end()).first -
                                   text.begin();
}

// Every line of a real `vllm bench serve --append-result` file re-serialises to the identical bytes.
TEST(PythonJsonDumps, RealResultFileRoundTripsByteForByte) {
  const auto path = common::data_dir() / "vllm_bench_serve_results_llmd_l40s.jsonl";
  const std::string text = common::read_file(path);
  std::istringstream lines(text);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::ordered_json::parse(line);
    EXPECT_EQ(python_json_dumps(j, InvalidUtf8::kThrow), line) << path << " line " << count + 1;
    ++count;
  }
  EXPECT_EQ(count, 9);
}

// The reader's fix-up: NaN / Infinity / -Infinity outside strings become null (counted), never inside a
// string, an escaped quote included.
TEST(PythonJson, NonFiniteTokensOutsideStringsBecomeNull) {
  int n = -1;
  EXPECT_EQ(
      python_nonfinite_to_null(R"({"a": NaN, "b": [0.0, Infinity, -Infinity], "c": "NaN \" Infinity"})", &n),
      R"({"a": null, "b": [0.0, null, null], "c": "NaN \" Infinity"})");
  EXPECT_EQ(n, 3);
  EXPECT_EQ(python_nonfinite_to_null("[1, 2]", &n), "[1, 2]");
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace servelab::common
