// servelab/tune: points of the knob space (configs), their rendering into a real launch command, and
// pruning of invalid combinations before anything is launched.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// One point of the space: an engine and a value label per knob. Knobs absent from `knobs` take their
/// baseline value. Value semantics; compare by key().
struct CandidateConfig {
  std::string engine;
  std::map<std::string, std::string> knobs;  ///< knob name → value label (non-baseline only after normalize)
};

/// Drops knobs set to their baseline value so equal configs have equal keys.
CandidateConfig normalize(const Study& study, CandidateConfig config);

/// Stable identity, e.g. "sglang{parallelism=tp8-dp8-dpattn,context_length=32768}" (knobs in study
/// order; baseline values omitted, so a baseline is "vllm{}").
std::string config_key(const Study& study, const CandidateConfig& config);

/// Human label: "baseline" or "parallelism=tp8-dp8-dpattn + context_length=32768".
std::string config_label(const Study& study, const CandidateConfig& config);

/// A config rendered into what gets executed.
struct Rendered {
  std::vector<std::string> argv;           ///< the full launch command, argv[0] = program
  std::map<std::string, std::string> env;  ///< environment added to the inherited one
  /// Shell form for reports: `ENV=.. prog arg ...` with single-quoting where needed.
  std::string shell() const;
};

/// Renders a config (does not validate; see check_config). Unknown knob values throw std::out_of_range.
Rendered render(const Study& study, const CandidateConfig& config);

/// Why a config cannot be launched, or nullopt if it can. Checks, in order: every non-default knob value
/// has a rendering for the engine; no rendering part rejects it (engine-specific reasons from the study);
/// the parallelism layout fits the hardware (GPUs used = tp·pp·dp, or tp·pp with DP-attention, must divide
/// hardware.gpu_count; ep must divide the GPUs used; with DP-attention dp must divide tp; dcp must divide
/// tp); the engine's own CLI accepts the rendered command (engines::parse_launch_command, unless the engine
/// sets check_flags = false), else its message.
std::optional<std::string> check_config(const Study& study, const CandidateConfig& config);

/// A rendered command an engine's own CLI refuses (check_config's last check), found before the study runs.
struct FlagRefusal {
  std::string engine;
  std::string knob;     ///< empty: the engine's `command` and `base_flags` (every configuration carries them)
  std::string value;    ///< the knob's value label (empty with no knob)
  std::string message;  ///< the engine CLI's error
  bool baseline = false;  ///< `value` is the knob's baseline: every configuration keeping it is refused
};

/// The commands the engines' CLIs refuse, for the engines with check_flags: each engine's `command` and
/// `base_flags` alone (refused: no configuration of it can launch); then its baseline (every knob at its
/// baseline; refused: each knob whose baseline alone on top of them is refused); else the baseline with
/// one knob changed (at most kFlagCheckValues values a knob: the first and last halves), each refused value.
std::vector<FlagRefusal> flag_refusals(const Study& study);

/// Most values of one knob flag_refusals renders, half from each end (a 30,000-value knob differs only in
/// its numbers).
inline constexpr std::size_t kFlagCheckValues = 64;

/// Evaluates a RenderPart `when` condition against a value's fields (grammar in study.h). Throws
/// StudyError for a malformed condition or an unknown field.
bool eval_condition(const std::string& when, const std::map<std::string, std::string>& fields);

/// Knobs that have a rendering for `engine` (greedy tries only these), in search order.
std::vector<std::string> knobs_for_engine(const Study& study, const std::string& engine);

/// Most configurations enumerate_grid builds.
inline constexpr std::size_t kMaxGridPoints = 1000000;

/// Number of configurations of the grid (the product of each engine's knob value counts, summed over the
/// engines), computed without building them; saturates at SIZE_MAX instead of overflowing.
std::size_t grid_points(const Study& study);

/// grid_points(study), or std::runtime_error ("the grid has N points, over a million: narrow the knob
/// space") when that is more than kMaxGridPoints.
std::size_t grid_points_within_limit(const Study& study);

/// The full product of the knobs applicable to each engine (grid), before pruning. Throws
/// std::runtime_error when it has more than kMaxGridPoints points (counted first: nothing is built then).
std::vector<CandidateConfig> enumerate_grid(const Study& study);

}  // namespace servelab::tune
