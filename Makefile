# servelab — `make demo` (the main job) and `make test`; both install what is missing first.
BUILD ?= build
JOBS ?= $(shell nproc)
# Unity build (STYLE.md "Build"): a target's .cc files compiled in batches of 8, one compile each, which cuts
# the cold build's CPU time by ~40% (servelab_engines + engines_test, 25 TUs: 191 -> 115 CPU s) — what CI and
# a fresh machine pay. A plain `cmake -B build` is not a unity build.
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON
PREFIX ?= /usr/local
# The sanitizer build: clang, ASan + UBSan (every finding fatal) and libFuzzer coverage, so `make test-asan`
# and `make fuzz` share one build. -O1 with line tables: symbolised reports, tests faster than at -O0.
ASAN_BUILD ?= build-asan
# BOOST_DISABLE_ASSERTS: the shipped (Release, NDEBUG) build has no Boost asserts either, and Boost 1.74's
# Beast asserts `n >= 5` in parse_chunk_header on a partial final chunk that it then handles safely (the input
# fuzz/corpus/http_response_fuzz/beast-partial-final-chunk runs clean under ASan + UBSan with the assert off).
ASAN_CMAKE_FLAGS ?= -DCMAKE_CXX_COMPILER=clang++ -DSERVELAB_FUZZ=ON -DSERVELAB_BUILD_BENCHMARKS=OFF -DCMAKE_UNITY_BUILD=ON \
                    -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only -DBOOST_DISABLE_ASSERTS"
FUZZ_SECONDS ?= 60
# The CI subset of the sanitizer build (`make test-asan-input`, .ci/run): only the code that parses hostile
# input — the fuzz targets of fuzz/ and the unit tests labelled `hostile_input` (tokenizer, SSE, payload,
# HTTP response, simserve bad requests, dataset loaders). study_toml_fuzz is built from the study parser's
# own sources (study files are shared between users); result_files_fuzz covers what compare / bench merge
# read, hub_response_fuzz the Hub client against a hostile Hub. The full `make test-asan` and `make fuzz`
# (a second cold build of everything) run before a landing, not in CI.
ASAN_INPUT_FUZZERS ?= sse_fuzz http_response_fuzz simserve_request_fuzz tokenizer_json_fuzz dataset_fuzz \
                      study_toml_fuzz result_files_fuzz hub_response_fuzz
ASAN_INPUT_TARGETS ?= tokenizer_test client_unit_test client_hostile_server_test simserve_bad_request_test \
                      dataset_test dataset_file_test $(ASAN_INPUT_FUZZERS)
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all deps build test test-asan build-asan test-asan-input fuzz fuzz-input demo demo-local bench install clean format format-check

all: build

deps:
	@./scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) $(ASAN_CMAKE_FLAGS)

build-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# detect_leaks: every test binary must also free what it allocates; abort_on_error keeps the report.
# Label `corpus` (leave-one-study-out over the whole released corpus, ~1 min in Release, many times that
# under ASan) runs in `make test` only; the same simulator, fit and validation code runs under ASan in
# sim_validate_subset_test (two studies) and sim_model_test.
test-asan: build-asan
	cd $(ASAN_BUILD) && $(ASAN_ENV) ctest --output-on-failure -j $(JOBS) --timeout 900 -LE corpus

# The hostile-input subset (ASAN_INPUT_TARGETS) built and tested under the sanitizers; the executables not
# built here are not selected (-L hostile_input).
test-asan-input: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target $(ASAN_INPUT_TARGETS)
	cd $(ASAN_BUILD) && $(ASAN_ENV) ctest --output-on-failure -j $(JOBS) --timeout 900 -L '^hostile_input$$'

# Every fuzz target for FUZZ_SECONDS each (scripts/fuzz.sh runs two at a time).
fuzz: build-asan
	./scripts/fuzz.sh $(ASAN_BUILD) $(FUZZ_SECONDS)

# The fuzz targets of test-asan-input's build, FUZZ_SECONDS each (CI: 20).
fuzz-input: test-asan-input
	FUZZ_TARGETS="$(ASAN_INPUT_FUZZERS)" ./scripts/fuzz.sh $(ASAN_BUILD) $(FUZZ_SECONDS)

demo: build
	./scripts/demo.sh $(BUILD)

# The reference study through --target local on the engine stand-ins (the GPU-node path, no GPU needed).
demo-local: build
	./scripts/demo_local.sh $(BUILD)

# The binary into $(PREFIX)/bin; studies, engine stand-ins and the real data (../shared/data without the
# operator tables) into $(PREFIX)/share/servelab; docs into $(PREFIX)/share/doc/servelab.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	./scripts/benchmarks.sh $(BUILD)

# Every tracked .cc/.h as .clang-format says; `make format-check` (and ctest's format_check) fail on any
# file that differs.
format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

format-check:
	./scripts/format_check.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
