// servelab/sim (private): the memo the measured-operator lookups share (measured_ops.cc, measured_dsa.cc).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace servelab::sim::detail {

/// Memoised lookups: a fit builds the same step model many times. Values may be null (nothing measured).
/// Thread-safety: get() may be called concurrently; `make` runs outside the lock (two threads may both
/// make a value; the first stored wins).
template <class T>
class Memo {
 public:
  template <class Make>
  std::shared_ptr<const T> get(const std::string& key, Make make) {
    {
      std::lock_guard lock(mu_);
      if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    }
    std::shared_ptr<const T> v = make();
    std::lock_guard lock(mu_);
    return memo_.emplace(key, std::move(v)).first->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const T>> memo_;  // guarded by mu_
};

/// A number as a memo key part.
inline std::string number_key(double v) {
  return std::to_string(v);
}

}  // namespace servelab::sim::detail
