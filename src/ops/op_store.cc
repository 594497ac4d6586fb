// servelab/ops: the store's index (index.json of scripts/import_ops.mjs), release lookup with reuse
// declarations, and tables opened once on first use.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "servelab/common/paths.h"
#include "servelab/ops/op_store.h"

namespace servelab::ops {

namespace {

/// The importer's format this reader understands (scripts/import_ops.mjs FORMAT).
constexpr int kStoreFormat = 1;

struct Reuse {
  std::string gpu, family, backend, version, table, from_version;
};

}  // namespace

struct OpStore::State {
  std::filesystem::path dir;
  std::vector<OpTableEntry> entries;
  std::vector<Reuse> reuse;
  mutable std::mutex mu;                                     ///< guards `open`
  mutable std::vector<std::shared_ptr<const OpTable>> open;  ///< by entry index, filled on first use
};

std::filesystem::path OpStore::default_dir() {
  if (const char* e = std::getenv("SERVELAB_OPS_DIR"); e && *e) return e;
  return common::cache_dir() / "ops" / "aic-ops";
}

OpStore OpStore::open(const std::filesystem::path& dir) {
  const auto index = dir / "index.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(index, ec)) {
    throw std::runtime_error(fmt::format(
        "{}: no measured-operator store here (index.json missing); `make deps` imports "
        "$SERVELAB_DATA_DIR/aic-ops/data into it (scripts/import_ops.mjs), or set SERVELAB_OPS_DIR",
        dir.string()));
  }
  auto st = std::make_shared<State>();
  st->dir = dir;
  try {
    const auto j = nlohmann::json::parse(common::read_file(index));
    const int format = j.at("format").get<int>();
    if (format != kStoreFormat) {
      throw std::runtime_error(fmt::format("{}: store format {}, this servelab reads {}: re-run make deps",
                                           index.string(), format, kStoreFormat));
    }
    for (const auto& t : j.at("tables")) {
      OpTableEntry e;
      e.gpu = t.at("gpu").get<std::string>();
      e.family = t.at("family").get<std::string>();
      e.backend = t.at("backend").get<std::string>();
      e.version = t.at("version").get<std::string>();
      e.table = t.at("table").get<std::string>();
      const auto rel = t.at("path").get<std::string>();
      if (rel.empty() || rel.front() == '/' || rel.find("..") != std::string::npos) {
        throw std::runtime_error(fmt::format("{}: table path '{}' leaves the store", index.string(), rel));
      }
      e.path = dir / rel;
      e.rows = t.at("rows").get<std::size_t>();
      if (t.contains("device") && t["device"].is_string()) e.device = t["device"].get<std::string>();
      if (t.contains("inherited_from")) {
        e.inherited_from = t.at("inherited_from").get<std::string>();
        e.inherited_rows = t.at("inherited_rows").get<std::size_t>();
      }
      st->entries.push_back(std::move(e));
    }
    for (const auto& r : j.at("reuse")) {
      st->reuse.push_back({r.at("gpu").get<std::string>(), r.at("family").get<std::string>(),
                           r.at("backend").get<std::string>(), r.at("version").get<std::string>(),
                           r.at("table").get<std::string>(), r.at("from_version").get<std::string>()});
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: invalid index: {}", index.string(), e.what()));
  }
  st->open.resize(st->entries.size());
  OpStore s;
  s.state_ = std::move(st);
  return s;
}

const std::filesystem::path& OpStore::dir() const {
  return state_->dir;
}

const std::vector<OpTableEntry>& OpStore::entries() const {
  return state_->entries;
}

std::vector<std::string> OpStore::versions(std::string_view gpu, std::string_view backend,
                                           std::string_view table) const {
  std::vector<std::string> out;
  for (const auto& e : state_->entries) {
    if (e.gpu == gpu && e.backend == backend && e.table == table) out.push_back(e.version);
  }
  for (const auto& r : state_->reuse) {
    if (r.gpu == gpu && r.backend == backend && r.table == table) out.push_back(r.version);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::shared_ptr<const OpTable> OpStore::table(std::string_view gpu, std::string_view backend,
                                              std::string_view version, std::string_view table) const {
  std::string want(version);
  // A release that declares it reuses another's measurements: follow the chain (bounded: no cycles).
  for (int hop = 0; hop < 8; ++hop) {
    for (std::size_t i = 0; i < state_->entries.size(); ++i) {
      const auto& e = state_->entries[i];
      if (e.gpu != gpu || e.backend != backend || e.version != want || e.table != table) continue;
      std::lock_guard lock(state_->mu);
      if (!state_->open[i]) state_->open[i] = OpTable::open(e.path);
      return state_->open[i];
    }
    auto r = std::find_if(state_->reuse.begin(), state_->reuse.end(), [&](const Reuse& x) {
      return x.gpu == gpu && x.backend == backend && x.version == want && x.table == table;
    });
    if (r == state_->reuse.end()) return nullptr;
    want = r->from_version;
  }
  return nullptr;
}

}  // namespace servelab::ops
