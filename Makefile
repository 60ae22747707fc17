# The two commands of the README: `make demo` and `make test`. Both install what they need.
PRESET ?= release
BUILD_DIR := build/$(PRESET)
MMPT := $(BUILD_DIR)/mmpt
# Tiers `make test` runs: everything that needs no GPU.
TEST_LABELS ?= unit|slow|dist
JOBS ?= $(shell nproc)
# pytest markers `make test` runs after ctest (`make unit` leaves out `dist` and `slow`).
PYTEST_MARKERS ?= not gpu

.PHONY: deps build demo install test unit dev fuzz clean

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build $(BUILD_DIR) -j$(JOBS)

# Builds only the mmpt binary (not the tests), so a fresh clone gets to the demo sooner.
demo: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build $(BUILD_DIR) --target mmpt -j$(JOBS)
	@$(MMPT) demo

# Installs `mmpt`, its data (presets, chat templates, the default tokenizer) and, when the preset
# builds it, the Python package under PREFIX (README "Install"); builds only what it installs.
PREFIX ?= /usr/local
install: deps
	@cmake --preset $(PRESET) >/dev/null
	@targets=mmpt; grep -q '^MMPT_PYTHON:BOOL=ON' $(BUILD_DIR)/CMakeCache.txt && targets="mmpt _mmpt"; \
	  cmake --build $(BUILD_DIR) --target $$targets -j$(JOBS)
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# Python tests, when the preset builds the module (MMPT_PYTHON): Debian's python3 and the package
# mmpt (extension included) in $(BUILD_DIR)/python. pytest's exit 5 (nothing collected) is fine.
define run_pytest
	@if grep -q '^MMPT_PYTHON:BOOL=ON' $(BUILD_DIR)/CMakeCache.txt; then \
	  PYTHONPATH=$(CURDIR)/$(BUILD_DIR)/python /usr/bin/python3 -m pytest \
	    tests/python -q -p no:cacheprovider -m '$(1)'; \
	  rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ] || exit $$rc; \
	fi
endef

# Seconds each libFuzzer target runs at the end of `make test` (the `fuzz` tier; 0 skips it).
TEST_FUZZ_SECONDS ?= 15

# Every tier that needs no GPU, on the optimized build; then every fuzz target briefly.
test: build
	@ctest --test-dir $(BUILD_DIR) -L '$(TEST_LABELS)' -j$(JOBS) --output-on-failure --timeout 900
	$(call run_pytest,$(PYTEST_MARKERS))
	@if [ '$(TEST_FUZZ_SECONDS)' != 0 ]; then \
	  $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS); fi

# The fast tier alone, for the edit-build-test loop.
unit: build
	@ctest --test-dir $(BUILD_DIR) -L unit -j$(JOBS) --output-on-failure
	$(call run_pytest,not dist and not slow and not gpu)

# The unit tier under ASan + UBSan.
dev:
	@$(MAKE) --no-print-directory test PRESET=dev TEST_LABELS=unit TEST_FUZZ_SECONDS=0

# Build the libFuzzer targets (only them, not the tests) with clang and run each for
# FUZZ_SECONDS from its seeds in tests/fuzz/<target>/; a crash fails and keeps its input.
FUZZ_SECONDS ?= 30
fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz --target mmpt_fuzzers -j$(JOBS)
	@bash scripts/run-fuzzers.sh build/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf build
