// tests/e2e: a minimal blocking HTTP server for model discovery: GET /v1/models answers a vLLM-style model
// list (or the status/body given); anything else gets 404. One connection at a time, Connection: close.
#pragma once

#include <boost/asio.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace servelab::e2e {

inline const std::string kDefaultModelsBody =
    R"({"object": "list", "data": [{"id": "served-name", "object": "model", "root": "org/gpt2-root"}]})";

class ModelsServer {
 public:
  /// `models_status` / `models_body`: the answer to GET /v1/models.
  explicit ModelsServer(std::string models_status = "200 OK", std::string models_body = kDefaultModelsBody)
      : models_status_(std::move(models_status)),
        models_body_(std::move(models_body)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~ModelsServer() {
    stop_ = true;
    // A blocking accept() is not woken by close() from another thread: connect once to release it.
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket wake(io_);
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port()}, ec);
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int models_requests() const { return models_requests_; }

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
      std::string body, status;
      if (req.rfind("GET /v1/models ", 0) == 0) {
        ++models_requests_;
        status = models_status_;
        body = models_body_;
      } else {
        status = "404 Not Found";
        body = R"({"detail": "Not Found"})";
      }
      std::string resp = "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      boost::asio::write(sock, boost::asio::buffer(resp), ec);
      sock.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }
  std::string models_status_, models_body_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::atomic<int> models_requests_{0};
  std::thread thread_;
};

}  // namespace servelab::e2e
