// servelab/engines: engine version numbers (PEP 440 subset) and version ranges, so that flags and
// defaults can say which releases they exist in.
#pragma once

#include <string>
#include <vector>

namespace servelab::engines {

/// A release number as the engines publish them: "0.11.0", "0.5.3rc0", "0.5.3.post3", "1.2.0rc5".
/// Ordering follows PEP 440: 0.5.3rc0 < 0.5.3 < 0.5.3.post3 < 0.5.4; 1.2.0rc1 < 1.2.0rc5 < 1.2.0.
struct EngineVersion {
  std::vector<int> release;  ///< {0, 5, 3}
  int pre = -1;              ///< rc/a/b number; -1 = final release
  int post = -1;             ///< .postN; -1 = none
  std::string text;          ///< as given

  /// Parses "X.Y[.Z...][rcN|aN|bN][.postN]" (a leading 'v' is accepted). Throws std::invalid_argument
  /// naming the text when it is not a version number.
  static EngineVersion parse(const std::string& text);
  /// -1, 0, 1 (missing release components count as 0: 0.17 == 0.17.0).
  int compare(const EngineVersion& other) const;
  bool operator<(const EngineVersion& o) const { return compare(o) < 0; }
  bool operator<=(const EngineVersion& o) const { return compare(o) <= 0; }
  bool operator==(const EngineVersion& o) const { return compare(o) == 0; }
};

/// Releases [since, until): "" bounds are open. A flag spec or a default carries one.
struct VersionRange {
  const char* since = "";  ///< first release that has it ("" = every modelled release)
  const char* until = "";  ///< first release that no longer has it ("" = still there)
  /// True when `v` lies in the range.
  bool contains(const EngineVersion& v) const;
};

/// True when `version` >= `threshold` (both as text; throws std::invalid_argument on a malformed one).
bool version_at_least(const std::string& version, const char* threshold);

}  // namespace servelab::engines
