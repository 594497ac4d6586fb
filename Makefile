# servelab — `make demo` (the main job) and `make test`; both install what is missing first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
PREFIX ?= /usr/local
# The sanitizer build: clang, ASan + UBSan (every finding fatal) and libFuzzer coverage, so `make test-asan`
# and `make fuzz` share one build. -O1 with line tables: symbolised reports, tests faster than at -O0.
ASAN_BUILD ?= build-asan
ASAN_CMAKE_FLAGS ?= -DCMAKE_CXX_COMPILER=clang++ -DSERVELAB_FUZZ=ON -DSERVELAB_BUILD_BENCHMARKS=OFF \
                    -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only"
FUZZ_SECONDS ?= 60

.PHONY: all deps build test test-asan build-asan fuzz demo demo-local bench install clean format

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
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) --timeout 900 -LE corpus

# Every fuzz target for FUZZ_SECONDS each (scripts/fuzz.sh runs two at a time).
fuzz: build-asan
	./scripts/fuzz.sh $(ASAN_BUILD) $(FUZZ_SECONDS)

demo: build
	./scripts/demo.sh $(BUILD)

# The reference study through --target local on the engine stand-ins (the GPU-node path, no GPU needed).
demo-local: build
	./scripts/demo_local.sh $(BUILD)

# The binary into $(PREFIX)/bin; studies and engine stand-ins into $(PREFIX)/share/servelab; docs into
# $(PREFIX)/share/doc/servelab.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	./scripts/benchmarks.sh $(BUILD)

format:
	find src tests benchmarks -name '*.cc' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
