// servelab/tune (private): parsing of the load sections of STUDY.toml — [load], a scenario's `load`, [slo],
// [cost], [[objectives]] — called by parse_study. Errors are StudyError "<origin>:<line>: <toml.path>:
// problem".
#pragma once

#include <toml++/toml.h>
#include <optional>
#include <string>

#include "servelab/tune/study/study.h"

namespace servelab::tune::detail {

/// A `load = {concurrency = [...], request_rate = [...]}` table at `path` of `parent` (key `key`), or nullopt
/// when absent. Throws StudyError for a non-table, an unknown key, a concurrency < 1 or a rate ≤ 0.
std::optional<LoadSpec> parse_load_table(const toml::table& parent, const std::string& key,
                                         const std::string& path, const std::string& origin);

/// Throws the StudyError of an unknown key at `node` ("<origin>:<line>: unknown key <path> (allowed:
/// <allowed>)"; without the line when the node has none). The key's path is not followed by a colon, so the
/// CLI's secret redaction (common::redact_text) does not take a key named like a credential (api_key) for a
/// name and the words after it for its value. `path` and `allowed` are printed as given.
[[noreturn]] void fail_unknown_key(const std::string& origin, const toml::node* node, const std::string& path,
                                   const std::string& allowed);

/// Reads [load], [slo], [cost] and [[objectives]] of `root` into `study` (whose scenarios and [objective] are
/// already parsed) and checks them against each other: an slo_goodput objective needs [slo], cost needs
/// [cost], tokens_per_gpu and min_latency need concurrency load points; the primary objective must be one
/// the search maximises. Throws StudyError.
void parse_load_sections(const toml::table& root, const std::string& origin, Study& study);

}  // namespace servelab::tune::detail
