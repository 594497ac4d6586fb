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
#include <string>
#include <vector>

#include "cli/command_registry.h"
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

void run_list(const OpsArgs& a) {
  const auto store = open_store(a);
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

void run_query(const OpsArgs& a) {
  if (a.gpu.empty() || a.backend.empty() || a.version.empty() || a.table.empty()) {
    std::fprintf(stderr, "servelab ops query: give --gpu, --backend, --version and --table\n");
    throw ExitRequest{2};
  }
  const auto store = open_store(a);
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
  const auto r = table->lookup(q);
  if (a.json) {
    nlohmann::json j{{"ok", r.ok},
                     {"latency_ms", r.ok ? nlohmann::json(r.latency_ms) : nlohmann::json(nullptr)},
                     {"extrapolated", r.extrapolated},
                     {"detail", r.detail},
                     {"table", table->table()},
                     {"release", table->version()},
                     {"device", table->device()}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (r.ok) {
    std::printf("latency_ms: %.6g\n%s%s (%s %s %s, %s)\n", r.latency_ms,
                r.extrapolated ? "EXTRAPOLATED: " : "",
                r.extrapolated ? r.detail.c_str() : "measured or interpolated", table->gpu().c_str(),
                table->backend().c_str(), table->version().c_str(), table->device().c_str());
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
