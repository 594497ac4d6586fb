// servelab/engines: a default value with the source it was read from.
#pragma once

namespace servelab::engines {

/// A constant with where it comes from. `verified` is false for values marked [unverified]: believed
/// from a nearby engine version or secondary documentation, not read in the named version's source.
template <class T>
struct Sourced {
  T value;
  const char* source;
  bool verified = true;
};

}  // namespace servelab::engines
