// servelab/bench: a parser of the Prometheus text exposition format (version 0.0.4, what vLLM's and
// SGLang's prometheus_client `/metrics` serve), for bench's server-metrics scrape (server_metrics.h).
// Spec: https://prometheus.io/docs/instrumenting/exposition_formats/ ("Text-based format"), read with the
// reference parser's rules (prometheus/common expfmt/text_parse.go): `# HELP name text` (escapes `\\`,
// `\n`), `# TYPE name counter|gauge|histogram|summary|untyped`, other `#` lines are comments, a sample is
// `name[{label="value",...}] value [timestamp_ms]` with label-value escapes `\\`, `\"`, `\n`, values as
// Go's ParseFloat (`NaN`, `+Inf`, `-Inf`, decimal and scientific) and an optional int64 timestamp (ms).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace servelab::bench::prometheus {

/// A metric family's `# TYPE` (untyped when no TYPE line names it).
enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };

/// One sample line. `labels` in the order written (values unescaped).
struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0.0;                        ///< may be NaN or ±inf
  std::optional<std::int64_t> timestamp_ms;  ///< milliseconds since the Unix epoch, when the line has one

  /// The value of label `key`, nullptr when absent.
  const std::string* label(std::string_view key) const;
};

/// A `# HELP` / `# TYPE` description.
struct Family {
  MetricType type = MetricType::kUntyped;
  std::string help;  ///< unescaped
};

/// A line the parser could not read: it is skipped and counted, never guessed at.
struct SkippedLine {
  std::size_t line = 0;  ///< 1-based line number
  std::string reason;    ///< e.g. "unterminated label value"
};

/// A parsed exposition.
struct Exposition {
  std::vector<Sample> samples;                          ///< in file order
  std::map<std::string, Family, std::less<>> families;  ///< by the name in the HELP/TYPE lines
  std::vector<SkippedLine> skipped;  ///< malformed lines (the first 20 kept; see skipped_count)
  std::size_t skipped_count = 0;     ///< every malformed line

  /// The type of a sample: its family's TYPE, looking the name up as written and without the suffixes the
  /// format appends (`_total`/`_created` of counters, `_bucket`/`_sum`/`_count` of histograms and
  /// summaries; prometheus_client writes counters' TYPE line as `name_total`). kUntyped when none matches.
  MetricType type_of(std::string_view sample_name) const;
};

/// Parses `text` (lines separated by `\n`, a trailing `\r` tolerated, OpenMetrics' `# EOF` and exemplars
/// after ` # ` accepted and ignored). Malformed lines (bad name, unterminated or badly escaped label value,
/// missing or unparsable value or timestamp, a second TYPE line for one family, an unknown TYPE) are
/// skipped and reported in `skipped`; nothing throws. Thread-safety: pure function.
Exposition parse(std::string_view text);

/// Go ParseFloat's spelling of a sample value: decimal or scientific, `NaN`, `Inf`/`+Inf`/`-Inf` (any
/// case, also `infinity`). nullopt when `text` is not a number.
std::optional<double> parse_value(std::string_view text);

}  // namespace servelab::bench::prometheus
