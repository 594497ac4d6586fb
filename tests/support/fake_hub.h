// tests/support: a fake Hugging Face Hub on loopback (plain HTTP, HF_ENDPOINT=http://127.0.0.1:PORT). It
// answers HEAD/GET {repo}/resolve/{revision}/{file} with the headers the real Hub sends:
//   - a regular file: 200, ETag "<git blob sha1>", X-Repo-Commit, Content-Length (Range → 206);
//   - an LFS file: 302 to http://localhost:PORT/cdn/<sha256>?X-Amz-Signature=... (another host name),
//     X-Linked-Etag "<sha256>", X-Linked-Size, X-Repo-Commit (the CDN honours Range);
//   - a renamed repository: 307 with a relative Location (/new-org/new-name/resolve/...);
//   - a gated repository: 401 X-Error-Code: GatedRepo without a token, 403 with a wrong one;
//   - 401 RepositoryNotFound for an unknown repository, 404 RevisionNotFound, 404 EntryNotFound (with
//     X-Repo-Commit) for a missing file.
// Every request is logged (method, target, Host, Authorization, Range). Connection: close, one at a time.
#pragma once

#include <openssl/evp.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace servelab::test_support {

/// Lower-case hex digest of `data` with EVP digest `md`.
inline std::string hex_digest(const std::string& data, const char* md) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), out, &n, EVP_get_digestbyname(md), nullptr);
  std::string hex;
  static const char* kHex = "0123456789abcdef";
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}
/// git's object id of a file: sha1("blob <size>\0" + content) — the Hub's ETag of a regular file.
inline std::string git_blob_sha1(const std::string& content) {
  std::string blob = "blob " + std::to_string(content.size());
  blob.push_back('\0');
  return hex_digest(blob + content, "sha1");
}
inline std::string sha256_hex(const std::string& content) {
  return hex_digest(content, "sha256");
}

struct FakeHubFile {
  std::string content;
  bool lfs = false;
};

struct FakeHubRepo {
  std::map<std::string, std::string> refs;                            ///< branch or tag -> commit
  std::map<std::string, std::map<std::string, FakeHubFile>> commits;  ///< commit -> path -> file
  bool gated = false;
  std::string renamed_to;  ///< non-empty: every resolve URL answers 307 to this id
  /// Origin the LFS redirect names ("" = http://localhost:PORT, another host name of this server); set it to
  /// another server's origin (another port on 127.0.0.1) to test credentials across ports.
  std::string cdn_origin;
};

struct FakeHubRequest {
  std::string method, target, host, authorization, range;
};

class FakeHub {
 public:
  FakeHub() : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeHub() {
    stop_ = true;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket wake(io_);
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port()}, ec);
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port()); }

  void add_repo(const std::string& id, FakeHubRepo repo) {
    std::lock_guard lock(mu_);
    repos_[id] = std::move(repo);
  }
  /// The token that has access to gated repositories.
  void set_token(std::string token) {
    std::lock_guard lock(mu_);
    token_ = std::move(token);
  }
  /// The next GET whose body is `content` sends its full headers but only `bytes` of the body, then closes.
  void cut_next_body(const std::string& content, std::size_t bytes) {
    std::lock_guard lock(mu_);
    cut_content_ = content;
    cut_bytes_ = bytes;
  }
  /// Serve `wrong` instead of the bytes of the file whose content is `content` (a corrupt transfer).
  void corrupt_body(const std::string& content, std::string wrong) {
    std::lock_guard lock(mu_);
    corrupt_[content] = std::move(wrong);
  }
  std::vector<FakeHubRequest> requests() const {
    std::lock_guard lock(mu_);
    return log_;
  }
  std::size_t request_count() const {
    std::lock_guard lock(mu_);
    return log_.size();
  }

 private:
  struct Answer {
    std::string head;  ///< status line + headers, without Content-Length
    std::string body;  ///< full body (HEAD: only its length is sent)
    std::size_t send_only = std::string::npos;
  };

  static std::string decode(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }

  static Answer error(const std::string& status, const std::string& code, const std::string& message,
                      const std::string& extra = "") {
    return {"HTTP/1.1 " + status + "\r\nX-Error-Code: " + code + "\r\nX-Error-Message: " + message +
                "\r\nContent-Type: application/json\r\n" + extra,
            "{\"error\":\"" + message + "\"}"};
  }

  /// The body (ranged when `range` is "bytes=N-") of `content`, as 200 or 206.
  Answer bytes(const std::string& content, const std::string& headers, const std::string& range, bool get) {
    std::string body = content;
    if (auto it = corrupt_.find(content); it != corrupt_.end()) body = it->second;
    Answer a;
    std::size_t from = 0;
    if (range.rfind("bytes=", 0) == 0 && range.back() == '-') from = std::stoul(range.substr(6));
    if (from > 0 && from >= body.size()) return {"HTTP/1.1 416 Range Not Satisfiable\r\n", ""};
    if (from > 0) {
      a.head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(from) + "-" +
               std::to_string(body.size() - 1) + "/" + std::to_string(body.size()) + "\r\n" + headers;
      a.body = body.substr(from);
    } else {
      a.head = "HTTP/1.1 200 OK\r\n" + headers;
      a.body = body;
    }
    if (get && !cut_content_.empty() && content == cut_content_) {
      a.send_only = cut_bytes_;
      cut_content_.clear();
    }
    return a;
  }

  Answer answer(const FakeHubRequest& r) {
    std::lock_guard lock(mu_);
    const std::string path = r.target.substr(0, r.target.find('?'));
    if (path.rfind("/cdn/", 0) == 0) {
      for (const auto& [id, repo] : repos_)
        for (const auto& [commit, files] : repo.commits)
          for (const auto& [name, f] : files)
            if (f.lfs && sha256_hex(f.content) == path.substr(5))
              return bytes(f.content,
                           "Content-Type: application/octet-stream\r\nETag: \"" + path.substr(5) + "\"\r\n",
                           r.range, r.method == "GET");
      return {"HTTP/1.1 404 Not Found\r\n", "NoSuchKey"};
    }
    const auto at = path.find("/resolve/");
    if (at == std::string::npos) return error("404 Not Found", "RepositoryNotFound", "Not Found");
    const std::string id = path.substr(1, at - 1);
    const std::string rest = path.substr(at + 9);
    const std::string rev = decode(rest.substr(0, rest.find('/')));
    const std::string file =
        rest.find('/') == std::string::npos ? "" : decode(rest.substr(rest.find('/') + 1));
    const auto repo_it = repos_.find(id);
    if (repo_it == repos_.end())
      return error("401 Unauthorized", "RepositoryNotFound", "Repository not found");
    const FakeHubRepo& repo = repo_it->second;
    if (!repo.renamed_to.empty())
      return {"HTTP/1.1 307 Temporary Redirect\r\nLocation: /" + repo.renamed_to + "/resolve/" +
                  rest.substr(0, rest.find('/')) + "/" + rest.substr(rest.find('/') + 1) + "\r\n",
              "Temporary Redirect. Redirecting to /" + repo.renamed_to};
    if (repo.gated) {
      if (r.authorization.empty())
        return error("401 Unauthorized", "GatedRepo",
                     "Access to model " + id +
                         " is restricted. You must have access to it and be authenticated to "
                         "access it. Please log in.");
      if (r.authorization != "Bearer " + token_)
        return error("403 Forbidden", "GatedRepo",
                     "Access to model " + id + " is restricted and you are not in the authorized list.");
    }
    std::string commit = rev;
    if (auto ref = repo.refs.find(rev); ref != repo.refs.end()) commit = ref->second;
    const auto files_it = repo.commits.find(commit);
    if (files_it == repo.commits.end())
      return error("404 Not Found", "RevisionNotFound", "Invalid rev id: " + rev);
    const auto f = files_it->second.find(file);
    if (f == files_it->second.end())
      return error("404 Not Found", "EntryNotFound", file + " does not exist on \"" + rev + "\"",
                   "X-Repo-Commit: " + commit + "\r\n");
    if (f->second.lfs) {
      const std::string sha = sha256_hex(f->second.content);
      const std::string cdn =
          repo.cdn_origin.empty() ? "http://localhost:" + std::to_string(port()) : repo.cdn_origin;
      return {"HTTP/1.1 302 Found\r\nLocation: " + cdn + "/cdn/" + sha +
                  "?X-Amz-Signature=abc123\r\nX-Linked-Etag: \"" + sha +
                  "\"\r\nX-Linked-Size: " + std::to_string(f->second.content.size()) + "\r\nETag: \"" +
                  git_blob_sha1("pointer " + sha) + "\"\r\nX-Repo-Commit: " + commit + "\r\n",
              "Found. Redirecting to the CDN"};
    }
    return bytes(f->second.content,
                 "Content-Type: text/plain; charset=utf-8\r\nETag: \"" + git_blob_sha1(f->second.content) +
                     "\"\r\nX-Repo-Commit: " + commit + "\r\nAccept-Ranges: bytes\r\n",
                 r.range, r.method == "GET");
  }

  void serve() {
    namespace http = boost::beast::http;
    while (!stop_) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket sock(io_);
      acceptor_.accept(sock, ec);
      if (ec || stop_) return;
      boost::beast::flat_buffer buf;
      http::request<http::empty_body> req;
      http::read(sock, buf, req, ec);
      if (ec) continue;
      FakeHubRequest r{std::string(req.method_string()), std::string(req.target()),
                       std::string(req[http::field::host]), std::string(req[http::field::authorization]),
                       std::string(req[http::field::range])};
      {
        std::lock_guard lock(mu_);
        log_.push_back(r);
      }
      const Answer a = answer(r);
      std::string out =
          a.head + "Content-Length: " + std::to_string(a.body.size()) + "\r\nConnection: close\r\n\r\n";
      if (r.method != "HEAD") out += a.body.substr(0, a.send_only);
      boost::asio::write(sock, boost::asio::buffer(out), ec);
      sock.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<std::string, FakeHubRepo> repos_;
  std::string token_;
  std::string cut_content_;
  std::size_t cut_bytes_ = 0;
  std::map<std::string, std::string> corrupt_;
  std::vector<FakeHubRequest> log_;
};

}  // namespace servelab::test_support
