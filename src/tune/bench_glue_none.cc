// bench's in-process run API for the local target. bench (src/bench) has not published a run function
// yet (only its flag parsing), so the local target reports that it is unavailable; the process control,
// readiness, classification and recording around it are complete (see local_runner.h).
#include "tune/twin_runner.h"

namespace servelab::tune {

ScenarioFn bench_scenario_fn(const Study&) { return {}; }

}  // namespace servelab::tune
