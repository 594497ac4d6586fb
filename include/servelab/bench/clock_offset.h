// servelab/bench: how far this host's wall clock is from a reference, for load sent from several hosts
// (`bench serve --shard I/N --start-at EPOCH_S`): every shard starts its schedule when ITS wall clock reads
// the start time, so a host whose clock is ahead starts early. Each shard measures its offset once, before
// the run; `bench merge` moves each shard's times onto the reference clock and reports the skew.
// Methods: an SNTP exchange with an NTP server (RFC 5905 §8 on-wire protocol, client mode), or, without a
// reference, the kernel's own estimate of its error (ntp_adjtime(2): offset unknown, taken as 0).
#pragma once

#include <string>

namespace servelab::bench {

/// One host's wall clock against the reference, as recorded in a shard result.
struct ClockOffset {
  /// This host's wall clock minus the reference's, ms (> 0: this host is ahead, so it started early).
  double offset_ms = 0.0;
  /// Half-width of the interval the true offset lies in, ms (NTP: round-trip delay / 2 + the reference's
  /// precision; kernel: its estimated error, or its maximum error when the clock is not synchronized).
  double uncertainty_ms = 0.0;
  std::string method;     ///< "ntp" (measured against `reference`) or "kernel" (ntp_adjtime estimate)
  std::string reference;  ///< "HOST:PORT" of the NTP server; "" for "kernel"
  /// /proc/sys/kernel/random/boot_id: shards with the same id ran on one host and share one clock exactly.
  std::string clock_id;
  bool synchronized = false;  ///< kernel: the clock is NTP-synchronized; ntp: always true
};

/// One NTP exchange (RFC 5905 §8): t1 client send, t2 server receive, t3 server send, t4 client receive,
/// seconds on each side's wall clock.
struct NtpSample {
  double offset_ms = 0.0;  ///< client minus server: -((t2 - t1) + (t3 - t4)) / 2, ms
  double delay_ms = 0.0;   ///< round trip without the server's time: (t4 - t1) - (t3 - t2), ms
};

/// The offset and delay of one exchange (pure; see NtpSample).
NtpSample ntp_sample(double t1_s, double t2_s, double t3_s, double t4_s);

/// Measures this host's offset against the NTP server `reference` ("HOST" or "HOST:PORT", port 123 by
/// default; IPv6 literal as "[ADDR]:PORT"): `exchanges` SNTP requests over UDP, each waiting up to
/// `timeout_s`, and keeps the one of least delay (NTP's clock filter). Throws std::runtime_error naming the
/// reference when it cannot be resolved or no valid reply came (timeout, kiss-o'-death, wrong mode).
ClockOffset measure_ntp_offset(const std::string& reference, int exchanges = 8, double timeout_s = 1.0);

/// The kernel's view of its own clock (ntp_adjtime with no change): offset 0, uncertainty its estimated
/// error (`esterror`), or its maximum error (`maxerror`) when the clock is not synchronized. Never throws.
ClockOffset kernel_clock_estimate();

/// This boot's id (/proc/sys/kernel/random/boot_id, "" when unreadable). Never throws.
std::string host_clock_id();

}  // namespace servelab::bench
