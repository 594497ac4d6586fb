// common/text.h: ASCII case folding, trimming and abbreviating (progress lines cut long failure reasons).
#include "servelab/common/text.h"

#include <gtest/gtest.h>

namespace servelab::common {
namespace {

TEST(Text, AsciiLowerLeavesUtf8Alone) {
  EXPECT_EQ(ascii_lower("Qwen/Qwen3-8B ÄB"), "qwen/qwen3-8b Äb");  // Ä stays Ä
}

TEST(Text, TrimStripsTheGivenCharacters) {
  EXPECT_EQ(trim("  a b \n"), "a b");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim("x;,", ";,"), "x");
}

// A failure reason in a progress line is cut at a word, never inside a UTF-8 character (new-user trial:
// "...61.02 GiB per GPU needed, the GPU )").
TEST(Text, AbbreviateCutsAtAWordAndSaysSo) {
  EXPECT_EQ(abbreviate("short", 10), "short");
  EXPECT_EQ(abbreviate("weights need 61.02 GiB per GPU needed, the GPU has 45", 40),
            "weights need 61.02 GiB per GPU needed …");
  // No space in the second half: a character boundary (é is two bytes; byte 4 is its second).
  EXPECT_EQ(abbreviate("abcé" + std::string(20, 'x'), 4), "abc …");
  EXPECT_EQ(abbreviate("aaaaaaaaaa", 4), "aaaa …");
}

}  // namespace
}  // namespace servelab::common
