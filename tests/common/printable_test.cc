// printable(): untrusted text bounded and escaped for error messages (issue 31: a 50,000-character key,
// terminal escape codes and NUL in a study name).
#include "servelab/common/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace servelab::common {
namespace {

TEST(Printable, KeepsPlainTextAndUtf8) {
  EXPECT_EQ(printable("mean_ttft_ms"), "mean_ttft_ms");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
}

TEST(Printable, EscapesControlsAndBadBytes) {
  EXPECT_EQ(printable(std::string("a\x1b[2Jb\0c", 8)), "a\\x1b[2Jb\\0c");
  EXPECT_EQ(printable("x\ny\tz\\"), "x\\ny\\tz\\\\");
  EXPECT_EQ(printable("\x7f"), "\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\u009b31m");  // C1 CSI
  EXPECT_EQ(printable("ok\xff\xfe"), "ok\\xff\\xfe");
}

TEST(Printable, BoundsTheLengthAndNamesIt) {
  const std::string key(50000, 'k');
  EXPECT_EQ(printable(key, 8), "kkkkkkkk... (50000 bytes)");
  EXPECT_EQ(printable(key).size(), 80u + std::string("... (50000 bytes)").size());
  // Never cuts a character in two: the euro sign (3 bytes) does not fit in 2.
  EXPECT_EQ(printable("a\xe2\x82\xac", 2), "a... (4 bytes)");
  EXPECT_EQ(printable(std::string(10, 'x'), 10), std::string(10, 'x'));
}

}  // namespace
}  // namespace servelab::common
