// `servelab ops`: the measured operator tables the twin reads (NVIDIA AIConfigurator's silicon data,
// imported by make deps): list what was measured, and look up one operator's latency the way the step
// model does (exact keys, interpolated axes, extrapolation marked).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/command_registry.h"
#include "servelab/common/text.h"
#include "servelab/ops/op_store.h"

namespace servelab::cli {
namespace {

struct OpsArgs {
  std::string store;
  std::string gpu, backend, version, table;
  std::vector<std::string> cells;  ///< COLUMN=VALUE
  bool json = false;
};

ops::OpStore open_store(const OpsArgs& a) {
  return ops::OpStore::open(a.store.empty() ? ops::OpStore::default_dir() : std::filesystem::path(a.store));
}

/// Checks each filter the user gave against the store, field by field (gpu, backend, table, version), each
/// narrowed by the ones before it: a value no table has is an error listing the values there are (exit 1;
/// an empty list was printed as "0 of 798 tables" before). A GPU given as "H100" / "h100" finds
/// "h100_sxm" (the systems names AIConfigurator uses) when that is the only such name.
void check_filters(const ops::OpStore& store, OpsArgs& a) {
  if (store.entries().empty()) {
    std::fprintf(stderr, "servelab ops: the store %s holds no table (make deps imports them)\n",
                 store.dir().c_str());
    throw ExitRequest{1};
  }
  if (!a.gpu.empty()) {
    std::set<std::string> gpus;
    for (const auto& e : store.entries()) gpus.insert(e.gpu);
    if (!gpus.count(a.gpu)) {
      std::string g = common::ascii_lower(a.gpu);
      for (const char* suffix : {"-sxm", "_sxm", "-sxm5", "sxm"})
        if (g.size() > std::string_view(suffix).size() && g.ends_with(suffix))
          g.resize(g.size() - std::string_view(suffix).size());
      if (gpus.count(g))
        a.gpu = g;
      else if (gpus.count(g + "_sxm"))
        a.gpu = g + "_sxm";
    }
  }
  struct Field {
    const char* flag;
    std::string* value;
    std::string ops::OpTableEntry::*member;
  };
  const Field fields[] = {{"--gpu", &a.gpu, &ops::OpTableEntry::gpu},
                          {"--backend", &a.backend, &ops::OpTableEntry::backend},
                          {"--table", &a.table, &ops::OpTableEntry::table},
                          {"--version", &a.version, &ops::OpTableEntry::version}};
  std::vector<const ops::OpTableEntry*> left;
  for (const auto& e : store.entries()) left.push_back(&e);
  std::string narrowed;
  for (const auto& f : fields) {
    if (f.value->empty()) continue;
    std::set<std::string> have;
    std::vector<const ops::OpTableEntry*> next;
    for (const auto* e : left) {
      have.insert(e->*f.member);
      if (e->*f.member == *f.value) next.push_back(e);
    }
    if (next.empty()) {
      std::string list;
      for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
      std::fprintf(stderr, "servelab ops: no table has %s %s%s; there are: %s\n", f.flag, f.value->c_str(),
                   narrowed.empty() ? "" : (" (with" + narrowed + ")").c_str(), list.c_str());
      throw ExitRequest{1};
    }
    narrowed += fmt::format(" {} {}", f.flag, *f.value);
    left = std::move(next);
  }
}

void run_list(const OpsArgs& given) {
  OpsArgs a = given;
  const auto store = open_store(a);
  check_filters(store, a);
  std::size_t shown = 0;
  for (const auto& e : store.entries()) {
    if ((!a.gpu.empty() && e.gpu != a.gpu) || (!a.backend.empty() && e.backend != a.backend) ||
        (!a.version.empty() && e.version != a.version) || (!a.table.empty() && e.table != a.table)) {
      continue;
    }
    std::printf("%-9s %-8s %-12s %-34s %9zu rows  %s\n", e.gpu.c_str(), e.backend.c_str(), e.version.c_str(),
                e.table.c_str(), e.rows, e.device.c_str());
    ++shown;
  }
  std::printf("%zu of %zu tables (%s)\n", shown, store.entries().size(), store.dir().c_str());
}

/// COLUMN=VALUE: a number when the whole value parses as one, else text.
std::pair<std::string, ops::OpValue> parse_cell(const std::string& cell) {
  const auto eq = cell.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::runtime_error("servelab ops query: '" + cell.substr(0, 200) + "' is not COLUMN=VALUE");
  }
  const std::string name = cell.substr(0, eq), value = cell.substr(eq + 1);
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (!value.empty() && end == value.c_str() + value.size()) return {name, v};
  return {name, value};
}

void run_query(const OpsArgs& given) {
  OpsArgs a = given;
  const auto store = open_store(a);
  check_filters(store, a);
  if (a.gpu.empty() || a.backend.empty() || a.version.empty() || a.table.empty()) {
    std::fprintf(stderr,
                 "servelab ops query: give --gpu, --backend, --version and --table (`servelab ops list` with "
                 "the ones you know shows the others)\n");
    throw ExitRequest{2};
  }
  const auto table = store.table(a.gpu, a.backend, a.version, a.table);
  if (!table) {
    std::string have;
    for (const auto& v : store.versions(a.gpu, a.backend, a.table)) have += (have.empty() ? "" : ", ") + v;
    std::fprintf(stderr, "servelab ops query: no %s for %s %s %s (measured releases: %s)\n", a.table.c_str(),
                 a.gpu.c_str(), a.backend.c_str(), a.version.c_str(), have.empty() ? "none" : have.c_str());
    throw ExitRequest{1};
  }
  // The user's query is checked strictly (the twin's own lookups may name columns an older table lacks):
  // a column the table does not have, one given twice or a negative / non-numeric axis value is an error
  // naming it (new-user trial: `bogus=1` ignored, `m=3000 m=1` took the first, `m=-5` answered m = 1).
  auto column_list = [&] {
    std::string keys, axes;
    for (const auto& k : table->keys()) keys += (keys.empty() ? "" : ", ") + k;
    for (const auto& x : table->axes()) axes += (axes.empty() ? "" : ", ") + x.name;
    return fmt::format("keys: {}; axes: {}", keys, axes);
  };
  ops::OpQuery q;
  for (const auto& c : a.cells) {
    auto [name, value] = parse_cell(c);
    if (!table->has_column(name)) {
      std::fprintf(stderr, "servelab ops query: %s has no column '%s' (%s)\n", table->table().c_str(),
                   name.c_str(), column_list().c_str());
      throw ExitRequest{2};
    }
    if (q.count(name)) {
      std::fprintf(stderr, "servelab ops query: column '%s' is given twice\n", name.c_str());
      throw ExitRequest{2};
    }
    const bool axis = std::any_of(table->axes().begin(), table->axes().end(),
                                  [&](const ops::OpAxis& x) { return x.name == name; });
    const double* number = std::get_if<double>(&value);
    if (axis && (!number || !std::isfinite(*number) || *number < 0)) {
      std::fprintf(stderr, "servelab ops query: %s is an interpolation axis: give a number >= 0, not '%s'\n",
                   name.c_str(), c.substr(c.find('=') + 1).c_str());
      throw ExitRequest{2};
    }
    q.emplace(std::move(name), std::move(value));
  }
  // Every key the query leaves open that has several values among the matching rows, at once (the lookup
  // names only the first: a moe_perf query took five rounds).
  ops::OpQuery keys_given;
  for (const auto& [k, v] : q)
    if (std::find(table->keys().begin(), table->keys().end(), k) != table->keys().end())
      keys_given.emplace(k, v);
  std::string open_keys;
  for (const auto& k : table->keys()) {
    if (q.count(k)) continue;
    const auto values = table->distinct(k, keys_given);
    if (values.size() < 2) continue;
    std::string list;
    for (std::size_t i = 0; i < values.size() && i < 12; ++i) list += (i ? ", " : "") + values[i];
    if (values.size() > 12) list += fmt::format(", ... ({} values)", values.size());
    open_keys += fmt::format("\n  {}: {}", k, list);
  }
  // ... and every interpolation axis left out, with its measured range (a lookup needs them all).
  for (const auto& x : table->axes()) {
    if (q.count(x.name)) continue;
    auto values = table->distinct(x.name, keys_given);
    if (values.size() < 2) continue;
    std::sort(values.begin(), values.end(), [](const std::string& l, const std::string& r) {
      return std::strtod(l.c_str(), nullptr) < std::strtod(r.c_str(), nullptr);
    });
    open_keys += fmt::format("\n  {}: {} .. {} ({} measured values; interpolated between them)", x.name,
                             values.front(), values.back(), values.size());
  }
  if (!open_keys.empty()) {
    std::fprintf(stderr, "servelab ops query: give a value for each of these columns (measured values):%s\n",
                 open_keys.c_str());
    throw ExitRequest{2};
  }
  const auto r = table->lookup(q);
  // Measured: every axis value given is one the matching rows measured (an axis left out has one value
  // here: the check above refused the others).
  bool measured = true;
  std::string between;
  for (const auto& x : table->axes()) {
    const auto it = q.find(x.name);
    if (it == q.end()) continue;
    const auto values = table->distinct(x.name, keys_given);
    const double* v = std::get_if<double>(&it->second);
    const bool hit = v && std::any_of(values.begin(), values.end(), [&](const std::string& s) {
                       return std::strtod(s.c_str(), nullptr) == *v;
                     });
    if (!hit) between += (between.empty() ? "" : ", ") + x.name;
    measured = measured && hit;
  }
  const std::string how = measured ? "measured" : "interpolated between measured points along " + between;
  if (a.json) {
    nlohmann::json j{{"ok", r.ok},
                     {"latency_ms", r.ok ? nlohmann::json(r.latency_ms) : nlohmann::json(nullptr)},
                     {"extrapolated", r.extrapolated},
                     {"measured", r.ok && measured && !r.extrapolated},
                     {"detail", r.detail},
                     {"table", table->table()},
                     {"release", table->version()},
                     {"device", table->device()}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (r.ok) {
    std::printf("latency_ms: %.6g\n%s%s (%s %s %s, %s)\n", r.latency_ms,
                r.extrapolated ? "EXTRAPOLATED: " : "", r.extrapolated ? r.detail.c_str() : how.c_str(),
                table->gpu().c_str(), table->backend().c_str(), table->version().c_str(),
                table->device().c_str());
  }
  if (!r.ok) {
    if (!a.json) std::fprintf(stderr, "servelab ops query: %s\n", r.detail.c_str());
    throw ExitRequest{1};
  }
}

void add_filters(CLI::App* cmd, OpsArgs& a) {
  cmd->add_option("--store", a.store,
                  "op store directory (default: $SERVELAB_OPS_DIR, else <cache>/ops/aic-ops)");
  cmd->add_option("--gpu", a.gpu,
                  "systems name of the GPU: a100_sxm, h100_sxm, h200_sxm, b200_sxm, b300_sxm, l40s");
  cmd->add_option("--backend", a.backend, "vllm, sglang, trtllm, or nccl (collectives)");
  cmd->add_option("--version", a.version, "engine (or NCCL) release as measured, e.g. 0.19.0");
  cmd->add_option("--table", a.table,
                  "table, e.g. gemm_perf, generation_attention_perf, moe_perf, nccl_perf");
}

}  // namespace

SERVELAB_REGISTER_COMMAND("ops", 60, [](CLI::App& root) {
  auto args = std::make_shared<OpsArgs>();
  CLI::App* cmd =
      root.add_subcommand("ops", "Measured GPU operator latencies (AIConfigurator tables) the twin reads");
  cmd->require_subcommand(1);
  CLI::App* list =
      cmd->add_subcommand("list", "List the imported tables (filter with --gpu/--backend/--version/--table)");
  add_filters(list, *args);
  list->callback([args] { run_list(*args); });
  CLI::App* query = cmd->add_subcommand(
      "query", "Latency of one operator: COLUMN=VALUE ... (keys exact, axes interpolated)");
  add_filters(query, *args);
  query->add_option("cells", args->cells, "COLUMN=VALUE, e.g. gemm_dtype=fp8 m=100 n=4096 k=4096");
  query->add_flag("--json", args->json, "print one JSON object");
  query->callback([args] { run_query(*args); });
});

}  // namespace servelab::cli
