#!/usr/bin/env bash
# Refits the engine twin's efficiency factors (src/sim/calibration.json) on every released corpus
# (../shared/reference and ../shared/reference/inferencemax; withheld entries are never read), then rebuilds so the new
# file is embedded. Usage: scripts/calibrate_sim.sh [build-dir]   (about 2 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
cmake -S . -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target servelab -j "$(nproc)"
"$BUILD/servelab" sim calibrate --write src/sim/calibration.json
cmake --build "$BUILD" --target servelab -j "$(nproc)"
"$BUILD/servelab" sim validate | tail -5
