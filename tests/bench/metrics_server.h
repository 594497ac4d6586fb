// tests/bench: a minimal blocking HTTP server whose GET /metrics answer is produced by a callback (called
// with the 0-based number of the scrape), for the server-metrics scraper's tests. Other paths: 404.
// One connection at a time, Connection: close.
#pragma once

#include <boost/asio.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace servelab::bench::testing {

struct MetricsAnswer {
  std::string status = "200 OK";
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

class MetricsServer {
 public:
  explicit MetricsServer(std::function<MetricsAnswer(int scrape)> answer)
      : answer_(std::move(answer)), acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~MetricsServer() {
    stop_ = true;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket wake(io_);
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port()}, ec);
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  int scrapes() const { return scrapes_; }
  const std::string& last_accept() const { return last_accept_; }  // read after the scraper stopped

 private:
  void serve() {
    while (!stop_) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket sock(io_);
      acceptor_.accept(sock, ec);
      if (ec || stop_) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        std::size_t n = sock.read_some(boost::asio::buffer(buf), ec);
        if (ec) break;
        req.append(buf, n);
      }
      MetricsAnswer a{"404 Not Found", "application/json", R"({"detail": "Not Found"})"};
      if (req.rfind("GET /metrics ", 0) == 0) {
        a = answer_(scrapes_++);
        const auto at = req.find("\r\nAccept: ");
        if (at != std::string::npos) last_accept_ = req.substr(at + 10, req.find("\r\n", at + 2) - at - 10);
      }
      std::string resp = "HTTP/1.1 " + a.status + "\r\nContent-Type: " + a.content_type +
                         "\r\nContent-Length: " + std::to_string(a.body.size()) +
                         "\r\nConnection: close\r\n\r\n" + a.body;
      boost::asio::write(sock, boost::asio::buffer(resp), ec);
      sock.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }
  std::function<MetricsAnswer(int)> answer_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::atomic<int> scrapes_{0};
  std::string last_accept_;
  std::thread thread_;
};

}  // namespace servelab::bench::testing
