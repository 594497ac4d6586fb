// servelab/cli: `--op-data`, where the twin's operator times come from (sim run | validate | calibrate |
// serve). One spelling for every subcommand that predicts, so `sim serve` and `sim run` give one answer.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "servelab/ops/op_store.h"
#include "servelab/sim/sim.h"

namespace servelab::cli {

/// The value of `--op-data` when it is not given: the measured tables of `make deps` (issue 29: held out,
/// the measured step model beats the roofline on tok/s, TTFT, TPOT and the ranking; README).
inline constexpr const char* kOpDataDefault = "default";

/// Help text of `--op-data`.
inline constexpr const char* kOpDataHelp =
    "where operator times come from: `default` = GEMM, attention, MLA, gated-DeltaNet, MoE and all-reduce "
    "times from the "
    "measured tables make deps imports from $SERVELAB_DATA_DIR/aic-ops (the roofline, with a note, when that "
    "store is missing, or for a launch whose GPU and engine have no table or only tables of later release "
    "lines than its own); `none` = the roofline everywhere (physics and fitted kernel efficiencies); or an "
    "op store directory";

/// Applies `--op-data` (sim::use_measured_operators) before a simulation starts. `none` (or empty) is the
/// roofline; `default` is the store make deps builds, and the roofline with a note on stderr when that
/// store is missing (a build without `make deps`); any other value is an op store directory, which must
/// exist (a raw AIConfigurator systems/data tree must be imported first). Throws std::runtime_error for a
/// directory that is not an op store.
inline void apply_op_data(const std::string& dir) {
  if (dir.empty() || dir == "none") {
    sim::use_measured_operators({});
    return;
  }
  const bool by_default = dir == "default";
  const std::filesystem::path p = by_default ? ops::OpStore::default_dir() : std::filesystem::path(dir);
  std::error_code ec;
  if (by_default && !std::filesystem::is_regular_file(p / "index.json", ec)) {
    std::fprintf(stderr,
                 "servelab sim: no measured operator store at %s (`make deps` builds it from "
                 "$SERVELAB_DATA_DIR/aic-ops): every operator is the roofline\n",
                 p.string().c_str());
    sim::use_measured_operators({});
    return;
  }
  if (!std::filesystem::exists(p / "index.json", ec) && std::filesystem::is_directory(p, ec)) {
    throw std::runtime_error(
        "--op-data " + p.string() +
        ": not an op store (no index.json). An AIConfigurator systems/data tree is imported "
        "with: node scripts/import_ops.mjs " +
        p.string() + " OUT_DIR, then --op-data OUT_DIR");
  }
  sim::use_measured_operators(p);
}

/// Adds `--op-data` to `app`, bound to `value` (which holds its default, kOpDataDefault).
inline void add_op_data_option(CLI::App& app, std::string& value) {
  app.add_option("--op-data", value, kOpDataHelp)->capture_default_str();
}

}  // namespace servelab::cli
