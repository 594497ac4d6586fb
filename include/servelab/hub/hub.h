// servelab/hub: files of a Hugging Face Hub repository (tokenizer.json, tokenizer_config.json, config.json),
// downloaded into, and read from, the cache exactly as huggingface_hub lays it out, so that
// huggingface_hub, transformers and vLLM reuse what servelab fetched and servelab reuses theirs:
//
//   $HF_HUB_CACHE/models--ORG--NAME/
//     blobs/<etag>                      the file's bytes (etag = git blob sha1, or the LFS sha256)
//     blobs/<etag>.incomplete           a download in progress (resumed with a Range request)
//     snapshots/<commit>/<filename>     symlink to ../../blobs/<etag> (relative)
//     refs/<revision>                   the commit a branch or tag named, no newline
//     .no_exist/<commit>/<filename>     empty: the file is known not to exist at that commit
//   $HF_HUB_CACHE/.locks/models--ORG--NAME/<etag>.lock   flock()ed while the blob is written
//
// Source of the layout and the protocol: huggingface_hub file_download.py (hf_hub_download,
// _hf_hub_download_to_cache_dir, get_hf_file_metadata, http_get), constants.py (environment) and
// utils/_http.py (hf_raise_for_status: X-Error-Code), 0.2x-1.x.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace servelab::hub {

/// Where and how to reach the Hub, as huggingface_hub reads it from the environment.
struct HubOptions {
  std::string endpoint = "https://huggingface.co";  ///< HF_ENDPOINT, trailing '/' removed
  std::filesystem::path cache_dir;                  ///< HF_HUB_CACHE, else $HF_HOME/hub
  std::optional<std::string> token;                 ///< HF_TOKEN, else the token file; never printed
  std::string token_source;        ///< where the token came from ("HF_TOKEN", a file path), for messages
  bool offline = false;            ///< HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is 1/ON/YES/TRUE: cache only
  double etag_timeout_s = 10;      ///< HF_HUB_ETAG_TIMEOUT: connect + the metadata request, seconds
  double download_timeout_s = 10;  ///< HF_HUB_DOWNLOAD_TIMEOUT: longest wait for the next bytes, seconds
  std::function<void(const std::string&)> log;  ///< one line per file downloaded; may be empty
};

/// An environment lookup: the value of a variable, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// HubOptions from `env` as huggingface_hub's constants.py does: HF_HOME = $HF_HOME, else
/// $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface; cache_dir = $HF_HUB_CACHE (or the legacy
/// HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub; token = $HF_TOKEN (or the legacy HUGGING_FACE_HUB_TOKEN),
/// else the contents of $HF_TOKEN_PATH (default $HF_HOME/token), whitespace stripped, empty = none.
/// Unparsable timeouts keep the defaults. Never throws.
HubOptions options_from_environment(const EnvLookup& env);
/// options_from_environment of the process environment (std::getenv).
HubOptions options_from_environment();

/// The variables options_from_environment reads (HOME, the process's own, aside): what a process that must
/// reach the Hub as another one does is given (tune's bench container beside its engine).
// clang-format off
inline constexpr std::string_view kHubEnvironmentVariables[] = {
    "HF_ENDPOINT", "HF_HOME", "XDG_CACHE_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_ETAG_TIMEOUT",
    "HF_HUB_DOWNLOAD_TIMEOUT"};
// clang-format on

/// Repository kind: the cache folder prefix ("models--", "datasets--") and the URL prefix ("", "datasets/").
enum class RepoType { kModel, kDataset };

/// True when `id` can be a Hub repository id, "ORG/NAME" or a legacy "NAME" (huggingface_hub
/// validate_repo_id: segments of [A-Za-z0-9_.-], at most 96 characters, no "--" or "..", not starting or
/// ending with '-' or '.'), and is not a local path ("./x", "/x", "~/x", or one with more than one '/').
bool is_repo_id(std::string_view id);

/// The cache folder of a repository: "models--ORG--NAME" (huggingface_hub repo_folder_name).
std::string repo_folder_name(std::string_view repo_id, RepoType type = RepoType::kModel);

/// True for a 40-hex-digit commit hash (huggingface_hub REGEX_COMMIT_HASH).
bool is_commit_hash(std::string_view revision);

/// An error of a Hub download, with what went wrong as `kind`. The message names the repository, the
/// file, the revision and what to do; it never contains the token.
class HubError : public std::runtime_error {
 public:
  enum class Kind {
    kRepositoryNotFound,  ///< no such repository (or private and no access)
    kRevisionNotFound,    ///< no such branch, tag or commit
    kEntryNotFound,       ///< a required file does not exist in the repository at that revision
    kGated,               ///< gated repository: no token, or the token has no access
    kUnauthorized,        ///< 401/403 otherwise (invalid token, no permission)
    kOffline,             ///< HF_HUB_OFFLINE set and the file is not in the cache
    kNetwork,             ///< DNS, connect, TLS, timeout, connection lost (partial download kept)
    kCorrupt,             ///< size or hash of the downloaded bytes differs from the Hub's
    kProtocol,            ///< another HTTP status, or an answer without the Hub's headers
    kCache,               ///< the cache cannot be written (permissions, disk full)
  };
  HubError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

/// One file to fetch. A required file missing from the repository is an error; an optional one is not.
struct FileSpec {
  std::string filename;  ///< path in the repository, '/'-separated ("tokenizer.json", "sub/x.json")
  bool required = true;
};

/// The outcome of fetch_files: the snapshot directory and, per requested file, its path there (or nullopt
/// when an optional file does not exist in the repository).
struct Snapshot {
  std::filesystem::path dir;  ///< <cache>/models--ORG--NAME/snapshots/<commit>
  std::string commit;         ///< the commit the revision resolved to
  std::map<std::string, std::optional<std::filesystem::path>> files;
};

/// The cached path of `filename` at `revision` ("" = "main"; a branch, a tag or a commit hash), without any
/// request (huggingface_hub try_to_load_from_cache): the file through refs/<revision> (or the commit
/// itself), nullopt when it is not cached. `known_missing` (when given) is set when .no_exist records that
/// the file does not exist at that commit. Never throws.
std::optional<std::filesystem::path> cached_file(std::string_view repo_id, std::string_view filename,
                                                 std::string_view revision, const HubOptions& options,
                                                 RepoType type = RepoType::kModel,
                                                 bool* known_missing = nullptr);

/// The local path of each of `files` of `repo_id` at `revision` ("" = "main"), downloading what the cache
/// lacks (huggingface_hub hf_hub_download per file). A file found in the cache (through refs/<revision> or
/// the commit) costs no request; so does an optional file recorded in .no_exist. Otherwise: HEAD
/// {endpoint}/{repo}/resolve/{revision}/{file} (relative redirects followed, as for renamed repositories) for
/// the commit (X-Repo-Commit), the blob id (X-Linked-Etag, else ETag) and size (X-Linked-Size, else
/// Content-Length); refs/<revision> written; the bytes GET from where it points (the CDN for LFS files;
/// Authorization is sent to the endpoint's host only), appended to blobs/<etag>.incomplete (resumed with
/// `Range: bytes=N-`), checked (size; git blob sha1 or sha256 against the etag), renamed to blobs/<etag>
/// and linked from snapshots/<commit>/<file>. Progress lines go to options.log.
/// Throws HubError (kind above) naming the repository, file and revision; HF_HUB_OFFLINE makes every cache
/// miss a kOffline error. Thread-safety: reentrant; concurrent processes are serialised per blob by the
/// same lock file huggingface_hub uses.
Snapshot fetch_files(std::string_view repo_id, const std::vector<FileSpec>& files, std::string_view revision,
                     const HubOptions& options, RepoType type = RepoType::kModel);

/// What the model and tokenizer resolvers need to know to fetch from the Hub.
struct FetchRequest {
  std::string revision;   ///< branch, tag or commit; empty = "main"
  bool download = false;  ///< false: only local files and the cache are used (no network)
  std::function<void(const std::string&)> log;  ///< download progress lines; may be empty
};

}  // namespace servelab::hub
