# servelab — `make demo` (the main job) and `make test`; both install what is missing first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
PREFIX ?= /usr/local

.PHONY: all deps build test demo demo-local bench install clean format

all: build

deps:
	@./scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

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
	rm -rf $(BUILD)
