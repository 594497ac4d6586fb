// Clock offset against an NTP server (SNTP client, RFC 5905 §7.3 packet, §8 on-wire protocol) or the
// kernel's own estimate (ntp_adjtime).
#include "servelab/bench/clock_offset.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/timex.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>

namespace servelab::bench {
namespace {

constexpr double kNtpEpochOffsetS = 2208988800.0;  // 1900-01-01 to 1970-01-01, s (RFC 5905 §6)
constexpr std::size_t kPacketBytes = 48;

double wall_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// NTP 64-bit timestamp (32.32 fixed point seconds since 1900) at `p`, as Unix seconds.
double read_timestamp(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<double>(v >> 32) + static_cast<double>(v & 0xffffffffu) / 4294967296.0 -
         kNtpEpochOffsetS;
}

void write_timestamp(unsigned char* p, double unix_s) {
  const double ntp = unix_s + kNtpEpochOffsetS;
  const auto secs = static_cast<std::uint64_t>(ntp);
  const auto frac = static_cast<std::uint64_t>((ntp - static_cast<double>(secs)) * 4294967296.0);
  const std::uint64_t v = (secs << 32) | (frac & 0xffffffffu);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (56 - 8 * i));
}

struct HostPort {
  std::string host;
  std::string port = "123";
};

HostPort split_reference(const std::string& ref) {
  HostPort hp;
  if (!ref.empty() && ref.front() == '[') {
    const auto close = ref.find(']');
    if (close == std::string::npos) throw std::runtime_error("--clock-reference '" + ref + "': missing ']'");
    hp.host = ref.substr(1, close - 1);
    if (close + 1 < ref.size() && ref[close + 1] == ':') hp.port = ref.substr(close + 2);
  } else if (const auto colon = ref.rfind(':'); colon != std::string::npos && ref.find(':') == colon) {
    hp.host = ref.substr(0, colon);
    hp.port = ref.substr(colon + 1);
  } else {
    hp.host = ref;
  }
  if (hp.host.empty() || hp.port.empty())
    throw std::runtime_error("--clock-reference '" + ref + "': expected HOST or HOST:PORT");
  return hp;
}

// One exchange on a connected UDP socket; nullopt on timeout or an invalid reply (reason in `why`).
std::optional<std::pair<NtpSample, int>> exchange(int fd, std::string& why) {
  std::array<unsigned char, kPacketBytes> req{};
  req[0] = (4 << 3) | 3;  // LI 0, version 4, mode 3 (client)
  const double t1 = wall_now_s();
  write_timestamp(&req[40], t1);  // transmit timestamp: the server echoes it as "origin"
  if (send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) {
    why = "send failed";
    return std::nullopt;
  }
  std::array<unsigned char, 512> rep{};
  const ssize_t n = recv(fd, rep.data(), rep.size(), 0);
  const double t4 = wall_now_s();
  if (n < static_cast<ssize_t>(kPacketBytes)) {
    why = n < 0 ? "no reply (timeout)" : "short reply";
    return std::nullopt;
  }
  const int mode = rep[0] & 7;
  if (mode != 4) {
    why = fmt::format("reply of mode {} (expected 4, server)", mode);
    return std::nullopt;
  }
  if (rep[1] == 0) {
    why = "kiss-o'-death reply (stratum 0)";
    return std::nullopt;
  }
  if (!std::equal(&rep[24], &rep[32], &req[40])) {
    why = "reply does not echo our transmit timestamp";
    return std::nullopt;
  }
  const NtpSample s = ntp_sample(t1, read_timestamp(&rep[32]), read_timestamp(&rep[40]), t4);
  return std::make_pair(s, static_cast<int>(static_cast<std::int8_t>(rep[3])));  // precision, log2 s
}

}  // namespace

NtpSample ntp_sample(double t1_s, double t2_s, double t3_s, double t4_s) {
  NtpSample s;
  s.offset_ms = -((t2_s - t1_s) + (t3_s - t4_s)) / 2.0 * 1000.0;
  s.delay_ms = ((t4_s - t1_s) - (t3_s - t2_s)) * 1000.0;
  return s;
}

ClockOffset measure_ntp_offset(const std::string& reference, int exchanges, double timeout_s) {
  const HostPort hp = split_reference(reference);
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &res); rc != 0)
    throw std::runtime_error(
        fmt::format("--clock-reference {}: cannot resolve: {}", reference, gai_strerror(rc)));
  const int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    freeaddrinfo(res);
    if (fd >= 0) close(fd);
    throw std::runtime_error(fmt::format("--clock-reference {}: cannot open a UDP socket to it", reference));
  }
  freeaddrinfo(res);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  tv.tv_usec = static_cast<suseconds_t>((timeout_s - static_cast<double>(tv.tv_sec)) * 1e6);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::optional<std::pair<NtpSample, int>> best;
  std::string why;
  for (int i = 0; i < exchanges; ++i) {
    auto s = exchange(fd, why);
    if (s && (!best || s->first.delay_ms < best->first.delay_ms)) best = s;
  }
  close(fd);
  if (!best)
    throw std::runtime_error(
        fmt::format("--clock-reference {}: no valid NTP reply in {} tries: {}", reference, exchanges, why));
  ClockOffset c;
  c.offset_ms = best->first.offset_ms;
  c.uncertainty_ms = std::max(0.0, best->first.delay_ms) / 2.0 + std::ldexp(1.0, best->second) * 1000.0;
  c.method = "ntp";
  c.reference = hp.host + ":" + hp.port;
  c.clock_id = host_clock_id();
  c.synchronized = true;
  return c;
}

ClockOffset kernel_clock_estimate() {
  ClockOffset c;
  c.method = "kernel";
  c.clock_id = host_clock_id();
  timex tx{};
  const int state = ntp_adjtime(&tx);
  c.synchronized = state >= 0 && state != TIME_ERROR;
  // esterror / maxerror are microseconds (adjtimex(2)).
  c.uncertainty_ms = static_cast<double>(c.synchronized ? tx.esterror : tx.maxerror) / 1000.0;
  return c;
}

std::string host_clock_id() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (f) std::getline(f, id);
  return id;
}

}  // namespace servelab::bench
