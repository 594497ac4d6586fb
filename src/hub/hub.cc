// fetch_files / cached_file: huggingface_hub's hf_hub_download into its cache layout (see hub.h).
#include "servelab/hub/hub.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>

#include "hub/http.h"

namespace servelab::hub {
namespace {

namespace fs = std::filesystem;
using detail::HttpResponse;
using detail::NetworkError;
using Kind = HubError::Kind;

/// What one file is called in messages: "tokenizer.json of Qwen/Qwen3-0.6B (revision main)".
struct Subject {
  std::string repo, file, revision;
  std::string text() const { return fmt::format("{} of {} (revision {})", file, repo, revision); }
};

std::string read_small(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

bool safe_relative(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    const auto end = std::min(name.find('/', start), name.size());
    const std::string_view seg = name.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return true;
}

/// huggingface_hub quote(): percent-encodes all but unreserved characters and `safe`.
std::string quote(std::string_view s, std::string_view safe) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        safe.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

/// huggingface_hub _normalize_etag: drop a weak "W/" prefix and the quotes.
std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

bool is_hex(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

bool token_chars(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

/// Hex digest of `path` with the EVP digest `md` ("sha1", "sha256"); the git blob header "blob <size>\0"
/// first when `git_blob`.
std::string file_digest(const fs::path& path, const char* md, bool git_blob) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_get_digestbyname(md), nullptr);
  if (git_blob) {
    const std::string head = fmt::format("blob {}", fs::file_size(path));
    EVP_DigestUpdate(ctx.get(), head.data(), head.size() + 1);  // with the terminating NUL
  }
  std::ifstream in(path, std::ios::binary);
  char buf[64 * 1024];
  while (in.read(buf, sizeof buf) || in.gcount() > 0)
    EVP_DigestUpdate(ctx.get(), buf, static_cast<std::size_t>(in.gcount()));
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &n);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", out[i]);
  return hex;
}

/// Writes `text` to `p` through a new temporary file renamed over it: a symlink planted at `p` (refs/main
/// pointing at a file of the user's) is replaced, never written through.
void write_text(const fs::path& p, const std::string& text) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::string tmp = p.string() + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());  // O_CREAT | O_EXCL: never an existing file or link
  bool ok = fd >= 0;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  if (ok) ok = ::fchmodat(AT_FDCWD, tmp.c_str(), 0644, 0) == 0 && ::rename(tmp.c_str(), p.c_str()) == 0;
  if (!ok) {
    if (fd >= 0) ::unlink(tmp.c_str());
    throw HubError(Kind::kCache,
                   fmt::format("cannot write {} (check the permissions of HF_HUB_CACHE)", p.string()));
  }
}

/// Opens the partial download `part` for writing (appending, or truncated), never through a symlink
/// (O_NOFOLLOW). Null when it cannot be opened.
std::FILE* open_partial(const fs::path& part, bool append) {
  const int fd =
      ::open(part.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) return nullptr;
  std::FILE* f = ::fdopen(fd, append ? "ab" : "wb");
  if (!f) ::close(fd);
  return f;
}

/// An exclusive flock() on the lock file huggingface_hub's filelock uses; released on destruction.
class BlobLock {
 public:
  explicit BlobLock(const fs::path& path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ < 0) throw HubError(Kind::kCache, fmt::format("cannot create the lock file {}", path.string()));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~BlobLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

/// The Hub's metadata of one file (huggingface_hub HfFileMetadata).
struct FileMetadata {
  std::string commit;
  std::string etag;
  bool lfs = false;      ///< X-Linked-Etag present: the etag is the sha256 of the bytes
  long long size = -1;   ///< bytes; -1 unknown
  std::string location;  ///< where the bytes are (the CDN for LFS files)
};

class Fetcher {
 public:
  Fetcher(std::string_view repo, std::string_view revision, const HubOptions& o, RepoType type)
      : repo_(repo),
        revision_(revision.empty() ? "main" : std::string(revision)),
        o_(o),
        type_(type),
        storage_(o.cache_dir / repo_folder_name(repo, type)) {
    if (!is_repo_id(repo))
      throw HubError(Kind::kRepositoryNotFound,
                     fmt::format("'{}' is not a Hugging Face repository id (ORG/NAME)", repo));
    if (!safe_relative(revision_))
      throw HubError(Kind::kRevisionNotFound,
                     fmt::format("revision '{}' of {} is not a valid revision name", revision_, repo));
    endpoint_origin_ = detail::parse_url(o.endpoint + "/").origin();
  }

  /// The path of `file`, nullopt when an optional file does not exist.
  std::optional<fs::path> fetch(const FileSpec& file, std::string* commit_out) {
    const Subject s{repo_, file.filename, revision_};
    if (!safe_relative(file.filename))
      throw HubError(Kind::kProtocol, fmt::format("bad file name '{}'", file.filename));
    bool missing = false;
    if (auto p = cached_file(repo_, file.filename, revision_, o_, type_, &missing)) {
      *commit_out = commit_of(*p);
      return p;
    }
    if (missing) return not_found(file, s, "recorded in the cache's .no_exist");
    if (o_.offline)
      throw HubError(
          Kind::kOffline,
          fmt::format("{} is not in the Hugging Face cache ({}) and HF_HUB_OFFLINE is set, so it is not "
                      "downloaded: unset HF_HUB_OFFLINE, or fill the cache on a machine with access "
                      "(`hf download {} {}` with HF_HUB_CACHE pointing there)",
                      s.text(), storage_.string(), repo_, file.filename));
    std::optional<FileMetadata> meta;
    try {
      meta = metadata(file, s);
    } catch (const NetworkError& e) {
      throw HubError(
          Kind::kNetwork,
          fmt::format("cannot reach the Hugging Face Hub at {} to download {}: {}; it is not in the cache "
                      "({}) either. Check the connection (a proxy is not supported), set HF_ENDPOINT "
                      "to a mirror, or fill the cache and set HF_HUB_OFFLINE=1",
                      o_.endpoint, s.text(), e.what(), storage_.string()));
    }
    if (!meta) return std::nullopt;  // optional, recorded in .no_exist
    *commit_out = meta->commit;
    if (revision_ != meta->commit) {
      const fs::path ref = storage_ / "refs" / revision_;
      std::error_code ec;
      if (!fs::exists(ref, ec) || read_small(ref) != meta->commit) write_text(ref, meta->commit);
    }
    const fs::path pointer = storage_ / "snapshots" / meta->commit / file.filename;
    const fs::path blob = storage_ / "blobs" / meta->etag;
    std::error_code ec;
    if (fs::exists(pointer, ec)) return pointer;
    if (!fs::exists(blob, ec)) {
      BlobLock lock(o_.cache_dir / ".locks" / repo_folder_name(repo_, type_) / (meta->etag + ".lock"));
      if (!fs::exists(blob, ec)) download(*meta, blob, s);
    }
    link(blob, pointer);
    return pointer;
  }

 private:
  std::string resolve_url(const std::string& filename) const {
    return fmt::format("{}/{}{}/resolve/{}/{}", o_.endpoint, type_ == RepoType::kDataset ? "datasets/" : "",
                       repo_, quote(revision_, ""), quote(filename, "/"));
  }

  std::vector<std::pair<std::string, std::string>> headers_for(const std::string& url) const {
    std::vector<std::pair<std::string, std::string>> h;
    // The token goes to the endpoint's origin only (scheme, host and port, as requests / huggingface_hub
    // drop it on any change of them): never to a CDN, another host, or another port a redirect names.
    if (o_.token && detail::parse_url(url).origin() == endpoint_origin_)
      h.emplace_back("Authorization", "Bearer " + *o_.token);
    return h;
  }

  std::string commit_of(const fs::path& pointer) const {
    // snapshots/<commit>/<file...>: the component after "snapshots".
    const fs::path rel = pointer.lexically_relative(storage_ / "snapshots");
    return rel.empty() ? std::string() : rel.begin()->string();
  }

  std::optional<fs::path> not_found(const FileSpec& file, const Subject& s, const std::string& how) const {
    if (!file.required) return std::nullopt;
    throw HubError(Kind::kEntryNotFound,
                   fmt::format("{} does not exist in the repository ({})", s.text(), how));
  }

  /// HEAD the resolve URL, following relative redirects (renamed repositories), as get_hf_file_metadata.
  /// nullopt: an optional file that does not exist (recorded in .no_exist).
  std::optional<FileMetadata> metadata(const FileSpec& file, const Subject& s) {
    std::string url = resolve_url(file.filename);
    const detail::HttpTimeouts t{o_.etag_timeout_s, o_.etag_timeout_s};
    for (int hop = 0; hop < 10; ++hop) {
      const HttpResponse r = detail::http_request("HEAD", url, headers_for(url), t);
      if (r.status >= 300 && r.status < 400) {
        const std::string loc = r.header("location");
        if (loc.empty())
          throw HubError(Kind::kProtocol, fmt::format("{}: HTTP {} without a Location header from {}",
                                                      s.text(), r.status, url));
        const bool relative = loc.find("://") == std::string::npos && loc.rfind("//", 0) != 0;
        if (relative) {  // a renamed repository: same host, keep asking for metadata there
          url = detail::resolve_location(detail::parse_url(url), loc);
          continue;
        }
        return metadata_of(r, detail::resolve_location(detail::parse_url(url), loc), s);
      }
      if (r.status >= 200 && r.status < 300) return metadata_of(r, url, s);
      if (r.status == 404 && r.header("x-error-code") == "EntryNotFound") {
        const std::string commit = r.header("x-repo-commit");
        if (is_commit_hash(commit)) {
          write_text(storage_ / ".no_exist" / commit / file.filename, "");
          if (revision_ != commit) write_text(storage_ / "refs" / revision_, commit);
        }
        not_found(file, s, fmt::format("HTTP 404 EntryNotFound from {}", o_.endpoint));
        return std::nullopt;
      }
      raise_for_status(r, s);
    }
    throw HubError(Kind::kProtocol, fmt::format("{}: more than 10 redirects from {}", s.text(), o_.endpoint));
  }

  FileMetadata metadata_of(const HttpResponse& r, const std::string& location, const Subject& s) const {
    FileMetadata m;
    m.commit = r.header("x-repo-commit");
    const std::string linked = r.header("x-linked-etag");
    m.lfs = !linked.empty();
    m.etag = normalize_etag(m.lfs ? linked : r.header("etag"));
    const std::string size =
        !r.header("x-linked-size").empty() ? r.header("x-linked-size") : r.header("content-length");
    if (!size.empty() && std::all_of(size.begin(), size.end(),
                                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      // from_chars, not stoll: a 300-digit size must be a clear error, not std::out_of_range("stoll").
      const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), m.size);
      if (ec != std::errc() || end != size.data() + size.size())
        throw HubError(Kind::kProtocol,
                       fmt::format("{}: {} announced a size of {} digits, more than a file can have",
                                   s.text(), o_.endpoint, size.size()));
    }
    m.location = location;
    if (!is_commit_hash(m.commit) || !token_chars(m.etag))
      throw HubError(
          Kind::kProtocol,
          fmt::format("{}: {} answered without a valid X-Repo-Commit ('{}') or ETag ('{}'): is HF_ENDPOINT a "
                      "Hugging Face Hub?",
                      s.text(), o_.endpoint, m.commit, m.etag));
    return m;
  }

  [[noreturn]] void raise_for_status(const HttpResponse& r, const Subject& s) const {
    const std::string code = r.header("x-error-code");
    const std::string server = r.header("x-error-message");
    const std::string said = server.empty() ? "" : fmt::format(" (the Hub says: \"{}\")", server);
    const std::string page =
        fmt::format("{}/{}{}", o_.endpoint, type_ == RepoType::kDataset ? "datasets/" : "", repo_);
    if (code == "GatedRepo") {
      if (!o_.token)
        throw HubError(
            Kind::kGated,
            fmt::format("{} is a gated model: HTTP {} without a token{}. Accept its conditions at {} and "
                        "give a token with read access: export HF_TOKEN=hf_..., or `hf auth login` (which "
                        "writes $HF_HOME/token)",
                        repo_, r.status, said, page));
      throw HubError(
          Kind::kGated,
          fmt::format("{} is a gated model and the token from {} has no access to it: HTTP {}{}. Request "
                      "access at {} (or use a token of an account that has it)",
                      repo_, o_.token_source, r.status, said, page));
    }
    if (code == "RevisionNotFound")
      throw HubError(Kind::kRevisionNotFound,
                     fmt::format("revision '{}' does not exist in {}: HTTP {}{}; give a branch, "
                                 "tag or commit of {}",
                                 revision_, repo_, r.status, said, page));
    if (code == "RepositoryNotFound" || r.status == 404)
      throw HubError(
          Kind::kRepositoryNotFound,
          fmt::format("{} not found on {}: HTTP {}{}. Check the id{}", repo_, o_.endpoint, r.status, said,
                      o_.token ? " and that the token from " + o_.token_source + " can read it"
                               : "; a private repository needs a token (HF_TOKEN)"));
    if (r.status == 401 || r.status == 403)
      throw HubError(
          Kind::kUnauthorized,
          fmt::format("{}: HTTP {}{} from {}: {}", s.text(), r.status, said, o_.endpoint,
                      o_.token ? "the token from " + o_.token_source + " is invalid or lacks permission"
                               : "a token is needed (HF_TOKEN)"));
    throw HubError(Kind::kProtocol,
                   fmt::format("{}: HTTP {}{} from {}", s.text(), r.status, said, o_.endpoint));
  }

  /// GETs the bytes into blob.incomplete (resuming it), checks them and renames the file to `blob`.
  void download(const FileMetadata& m, const fs::path& blob, const Subject& s) {
    const fs::path part = fs::path(blob.string() + ".incomplete");
    std::error_code ec;
    fs::create_directories(blob.parent_path(), ec);
    for (int attempt = 0;; ++attempt) {
      // A symlink planted at the partial file would be resumed into (and its target written): removed.
      if (fs::is_symlink(fs::symlink_status(part, ec))) fs::remove(part, ec);
      long long have = fs::exists(part, ec) ? static_cast<long long>(fs::file_size(part, ec)) : 0;
      if (m.size >= 0 && have > m.size) {  // longer than the file: cannot be a prefix of it
        fs::remove(part, ec);
        have = 0;
      }
      if (o_.log)
        o_.log(fmt::format("Downloading {} from {}{}", s.text(), o_.endpoint,
                           m.size >= 0 ? fmt::format(" ({} bytes{})", m.size,
                                                     have > 0 ? fmt::format(", resuming at {}", have) : "")
                                       : ""));
      if (m.size < 0 || have < m.size) get_into(m, part, have, s);
      if (m.size == 0) {  // nothing to GET: the empty file itself (its hash is still checked)
        std::unique_ptr<std::FILE, decltype(&std::fclose)> empty(open_partial(part, false), &std::fclose);
        if (!empty) throw HubError(Kind::kCache, fmt::format("cannot write {}", part.string()));
      }
      const long long got = static_cast<long long>(fs::file_size(part, ec));
      std::string problem;
      if (m.size >= 0 && got != m.size)
        problem = fmt::format("{} bytes arrived, the Hub announced {}", got, m.size);
      if (problem.empty()) problem = hash_problem(m, part);
      if (problem.empty()) break;
      fs::remove(part, ec);
      if (attempt == 0 && have > 0) continue;  // a stale partial file: start once more from zero
      throw HubError(Kind::kCorrupt, fmt::format("{} from {}: {}; the download was discarded, run again",
                                                 s.text(), m.location, problem));
    }
    fs::rename(part, blob, ec);
    if (ec)
      throw HubError(Kind::kCache,
                     fmt::format("cannot move {} to {}: {}", part.string(), blob.string(), ec.message()));
  }

  /// "" when the bytes hash to the etag (sha256 for LFS, git blob sha1 otherwise), else the mismatch.
  static std::string hash_problem(const FileMetadata& m, const fs::path& part) {
    if (!is_hex(m.etag)) return "";
    std::string got;
    if (m.lfs && m.etag.size() == 64)
      got = file_digest(part, "sha256", false);
    else if (!m.lfs && m.etag.size() == 40)
      got = file_digest(part, "sha1", true);
    else
      return "";
    std::string want = m.etag;
    std::transform(want.begin(), want.end(), want.begin(), [](unsigned char c) { return std::tolower(c); });
    return got == want ? "" : fmt::format("the bytes hash to {}, the Hub's id is {}", got, want);
  }

  void get_into(const FileMetadata& m, const fs::path& part, long long have, const Subject& s) {
    std::string url = m.location;
    const detail::HttpTimeouts t{o_.etag_timeout_s, o_.download_timeout_s};
    for (int hop = 0; hop < 12; ++hop) {
      auto headers = headers_for(url);
      if (have > 0) headers.emplace_back("Range", fmt::format("bytes={}-", have));
      std::unique_ptr<std::FILE, decltype(&std::fclose)> f(nullptr, &std::fclose);
      long long written = 0;
      bool write_failed = false;
      // The file is opened once the status is known: appended to on a 206 that starts where it ends,
      // rewritten on a 200 (a server that ignores Range sends the whole file).
      auto on_head = [&](const HttpResponse& r) {
        const bool append =
            r.status == 206 && r.header("content-range").rfind(fmt::format("bytes {}-", have), 0) == 0;
        if (r.status == 200 || append) {
          if (!append) have = 0;
          f.reset(open_partial(part, append));
          write_failed = !f;
        }
      };
      bool too_long = false;
      auto sink = [&](const char* data, std::size_t n) {
        if (!f) return false;
        if (m.size >= 0 &&
            have + written + static_cast<long long>(n) > m.size) {  // bounded by the announced size
          too_long = true;
          return false;
        }
        if (std::fwrite(data, 1, n, f.get()) != n) {
          write_failed = true;
          return false;
        }
        written += static_cast<long long>(n);
        return true;
      };
      HttpResponse r;
      try {
        r = detail::http_request("GET", url, headers, t, sink, on_head);
      } catch (const NetworkError& e) {
        throw HubError(
            Kind::kNetwork,
            fmt::format("downloading {} from {} stopped after {} of {} bytes: {}. The partial file is kept "
                        "({}); run again to resume",
                        s.text(), detail::parse_url(url).host_header, have + written,
                        m.size >= 0 ? std::to_string(m.size) : "?", e.what(), part.string()));
      }
      if (write_failed)
        throw HubError(Kind::kCache, fmt::format("cannot write {} (disk full?)", part.string()));
      if (too_long) {
        f.reset();
        std::error_code ec;
        fs::remove(part, ec);
        throw HubError(
            Kind::kCorrupt,
            fmt::format("{} from {}: more than the {} bytes the Hub announced arrived; the download was "
                        "discarded, run again",
                        s.text(), detail::parse_url(url).host_header, m.size));
      }
      if (f) return;  // 200, or a 206 appended
      if (r.status >= 300 && r.status < 400 && !r.header("location").empty()) {
        url = detail::resolve_location(detail::parse_url(url), r.header("location"));
        continue;
      }
      if ((r.status == 416 || r.status == 206) && have > 0) {  // the partial file is not a prefix: start over
        std::error_code ec;
        fs::remove(part, ec);
        have = 0;
        continue;
      }
      raise_for_status(r, s);
    }
    throw HubError(Kind::kProtocol, fmt::format("{}: more than 10 redirects downloading it", s.text()));
  }

  void link(const fs::path& blob, const fs::path& pointer) const {
    std::error_code ec;
    fs::create_directories(pointer.parent_path(), ec);
    if (fs::exists(pointer, ec)) return;
    fs::remove(pointer, ec);  // a dangling symlink
    const fs::path target = blob.lexically_relative(pointer.parent_path());
    fs::create_symlink(target, pointer, ec);
    if (ec && !fs::exists(pointer)) {  // a file system without symlinks: huggingface_hub copies
      fs::copy_file(blob, pointer, ec);
      if (ec)
        throw HubError(Kind::kCache, fmt::format("cannot create {}: {}", pointer.string(), ec.message()));
    }
  }

  std::string repo_, revision_;
  const HubOptions& o_;
  RepoType type_;
  fs::path storage_;
  std::string endpoint_origin_;  ///< scheme://host[:port] of HubOptions::endpoint
};

}  // namespace

std::optional<std::filesystem::path> cached_file(std::string_view repo_id, std::string_view filename,
                                                 std::string_view revision, const HubOptions& options,
                                                 RepoType type, bool* known_missing) {
  if (known_missing) *known_missing = false;
  if (!is_repo_id(repo_id) || !safe_relative(filename)) return std::nullopt;
  const std::string rev = revision.empty() ? "main" : std::string(revision);
  if (!safe_relative(rev)) return std::nullopt;
  const fs::path storage = options.cache_dir / repo_folder_name(repo_id, type);
  std::error_code ec;
  std::string commit;
  if (fs::is_regular_file(storage / "refs" / rev, ec))
    commit = read_small(storage / "refs" / rev);
  else if (is_commit_hash(rev))
    commit = rev;
  if (!is_commit_hash(commit)) return std::nullopt;
  if (known_missing && fs::is_regular_file(storage / ".no_exist" / commit / std::string(filename), ec))
    *known_missing = true;
  const fs::path p = storage / "snapshots" / commit / std::string(filename);
  if (fs::is_regular_file(p, ec)) return p;  // follows the symlink: a dangling one is not a hit
  return std::nullopt;
}

Snapshot fetch_files(std::string_view repo_id, const std::vector<FileSpec>& files, std::string_view revision,
                     const HubOptions& options, RepoType type) {
  Fetcher f(repo_id, revision, options, type);
  Snapshot snap;
  for (const FileSpec& file : files) {
    std::string commit;
    auto p = f.fetch(file, &commit);
    if (!commit.empty()) snap.commit = commit;
    snap.files[file.filename] = p;
  }
  if (!snap.commit.empty())
    snap.dir = options.cache_dir / repo_folder_name(repo_id, type) / "snapshots" / snap.commit;
  return snap;
}

}  // namespace servelab::hub
