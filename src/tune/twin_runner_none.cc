// Built when src/sim is not part of the build: the twin target reports that it is unavailable.
#include <stdexcept>

#include "tune/twin_runner.h"

namespace servelab::tune {

bool twin_available() { return false; }

TrialRunner make_twin_runner(const Study&) {
  throw std::runtime_error("the engine twin (src/sim) is not part of this build");
}

std::string twin_data_note(const Study&) { return "engine twin not built"; }

}  // namespace servelab::tune
