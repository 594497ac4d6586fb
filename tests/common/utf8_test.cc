// The one UTF-8 codec (common/utf8.h): well-formedness per Unicode 15 Table 3-7 and the U+FFFD
// replacement of maximal subparts. Expected values: Python 3.11, bytes.decode("utf-8", errors="replace").
#include "servelab/common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace servelab::common {
namespace {

std::string lossy(std::string_view bytes) {
  std::string out;
  utf8_append_lossy(out, bytes);
  return out;
}

TEST(Utf8, WellFormedLengthAndMaximalSubpart) {
  std::size_t sub = 0;
  EXPECT_EQ(utf8_well_formed_length("a", 0, sub), 1u);
  EXPECT_EQ(utf8_well_formed_length("\xc3\xa9", 0, sub), 2u);
  EXPECT_EQ(utf8_well_formed_length("\xe2\x82\xac", 0, sub), 3u);
  EXPECT_EQ(utf8_well_formed_length("\xf0\x9f\x98\x80", 0, sub), 4u);
  // Truncated euro sign: one maximal subpart of 2 bytes.
  EXPECT_EQ(utf8_well_formed_length("\xe2\x82", 0, sub), 0u);
  EXPECT_EQ(sub, 2u);
  // Surrogate D800 (ED A0 80): ED accepts only 80..9F next, so the subpart is the lead byte alone.
  EXPECT_EQ(utf8_well_formed_length("\xed\xa0\x80", 0, sub), 0u);
  EXPECT_EQ(sub, 1u);
  // Overlong (C0), above U+10FFFF (F4 90): lead byte alone.
  EXPECT_EQ(utf8_well_formed_length("\xc0\xaf", 0, sub), 0u);
  EXPECT_EQ(sub, 1u);
  EXPECT_EQ(utf8_well_formed_length("\xf4\x90\x80\x80", 0, sub), 0u);
  EXPECT_EQ(sub, 1u);
}

TEST(Utf8, LossyMatchesPythonReplace) {
  // b"x\x80y\xe2\x82".decode("utf-8", "replace") == "x\ufffdy\ufffd"
  EXPECT_EQ(lossy("x\x80y\xe2\x82"), "x\xef\xbf\xbdy\xef\xbf\xbd");
  // b"\xc3\x28\xed\xa0\x80\xf0\x9f\x98" → "\ufffd(" + 3 × "\ufffd" + "\ufffd"
  EXPECT_EQ(lossy("\xc3\x28\xed\xa0\x80\xf0\x9f\x98"),
            "\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(lossy("h\xc3\xa9llo \xf0\x9f\x98\x80"), "h\xc3\xa9llo \xf0\x9f\x98\x80");
}

TEST(Utf8, ValidAndDecodeRoundTrip) {
  EXPECT_TRUE(utf8_valid("plain ASCII longer than eight bytes"));
  EXPECT_TRUE(utf8_valid("\xe2\x82\xac and \xf4\x8f\xbf\xbf"));  // U+20AC, U+10FFFF
  EXPECT_FALSE(utf8_valid("eight bytes then \xed\xb0\x80"));     // lone low surrogate DC00
  EXPECT_FALSE(utf8_valid("\xe0\x80\xaf"));                      // overlong 3-byte "/"
  std::string s;
  for (char32_t cp : {U'A', U'\u00e9', U'\u20ac', U'\U0001F600', U'\U0010FFFF'}) utf8_append(s, cp);
  std::size_t i = 0;
  std::u32string back;
  while (i < s.size()) back.push_back(utf8_next(s, i));
  EXPECT_EQ(back, std::u32string(U"A\u00e9\u20ac\U0001F600\U0010FFFF"));
}

}  // namespace
}  // namespace servelab::common
