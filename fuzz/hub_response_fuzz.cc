// Fuzzes the Hub client against a hostile Hub: a loopback server answers every request (the metadata HEAD,
// redirects, the download GET) with the fuzz input as raw HTTP bytes, then closes. fetch_files must return
// a snapshot or throw HubError; never crash, hang, follow a redirect forever, write outside its cache or
// allocate what a header claims (issue 31). A fresh cache per input.
#include <unistd.h>

#include <boost/asio.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include "servelab/hub/hub.h"

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

/// Serves `reply` to every connection on 127.0.0.1 (after reading the request head) until destroyed.
class HostileHub {
 public:
  explicit HostileHub(std::string reply)
      : reply_(std::move(reply)), acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~HostileHub() {
    stop_ = true;
    boost::system::error_code ec;
    tcp::socket wake(io_);
    wake.connect({net::ip::make_address("127.0.0.1"), port()}, ec);  // releases the blocking accept
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void serve() {
    while (!stop_) {
      boost::system::error_code ec;
      tcp::socket sock(io_);
      acceptor_.accept(sock, ec);
      if (ec || stop_) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
        const std::size_t n = sock.read_some(net::buffer(buf), ec);
        if (ec) break;
        req.append(buf, n);
      }
      net::write(sock, net::buffer(reply_), ec);
      sock.shutdown(tcp::socket::shutdown_both, ec);
    }
  }
  std::string reply_;
  net::io_context io_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  HostileHub hub(std::string(reinterpret_cast<const char*>(data), size));
  static const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("servelab-hub-fuzz-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  servelab::hub::HubOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(hub.port());
  o.cache_dir = root / "hub";
  o.token = "hf_fuzz_token";
  o.etag_timeout_s = 2;
  o.download_timeout_s = 2;
  try {
    (void)servelab::hub::fetch_files("org/model", {{"tokenizer.json", true}, {"config.json", false}}, "main",
                                     o);
  } catch (const servelab::hub::HubError&) {
  }
  std::filesystem::remove_all(root);
  return 0;
}
