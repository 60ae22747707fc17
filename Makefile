# The two commands of the README: `make demo` and `make test`. Both install what they need.
PRESET ?= release
BUILD_DIR := build/$(PRESET)
MMPT := $(BUILD_DIR)/mmpt
JOBS ?= $(shell nproc)

.PHONY: deps build demo install lint test test-ctest test-pytest test-replay unit dev bench \
  bench-doc fuzz-build fuzz stress clean

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
# mmpt (extension included) in $(BUILD_DIR)/python; markers, timeout and strict markers are set in
# pyproject.toml. Any exit but 0 fails, 5 (nothing collected) included: a module that does not
# import collects nothing.
PYTEST = if grep -q '^MMPT_PYTHON:BOOL=ON' $(BUILD_DIR)/CMakeCache.txt; then \
	  PYTHONPATH=$(CURDIR)/$(BUILD_DIR)/python /usr/bin/python3 -m pytest -q $(1); fi

# The style checks: C++ against .clang-format, Python against .flake8 (scripts/lint.sh).
lint: deps
	@bash scripts/lint.sh

# The tiers (docs/testing.md says what runs where and why).
# `make test`: the style checks, every ctest and pytest test (GPU ones skip without CUDA; pytest
# lists its 20 slowest), then every fuzz target's inputs replayed under ASan + UBSan; it ends with
# each tier's wall seconds. Each tier also runs alone: `make lint`, `make test-ctest`,
# `make test-pytest`, `make test-replay`.
TIER = "$(1)" "$(MAKE) --no-print-directory $(2)"
test: build fuzz-build
	@bash scripts/run-tiers.sh $(call TIER,lint,lint) $(call TIER,ctest,test-ctest) \
	  $(call TIER,pytest,test-pytest) $(call TIER,fuzz inputs replayed (ASan+UBSan),test-replay)

test-ctest:
	@ctest --test-dir $(BUILD_DIR) -j$(JOBS) --output-on-failure --timeout 600

# pytest runs its test files over $(JOBS) workers (python3-pytest-xdist; a file's tests, and
# so its module fixtures, stay on one worker).
test-pytest:
	@$(call PYTEST,-n $(JOBS) --dist loadfile --durations=20)

test-replay:
	@bash scripts/run-fuzzers.sh build/fuzz 0

# The race hunt, not in `make test`: every suite that writes temporary files, 30 times beside
# each other (ctest --repeat until-fail), then the pytest tier twice (scripts/stress.sh).
stress: build
	@bash scripts/stress.sh

# The fast tier alone, for the edit-build-test loop.
unit: build
	@ctest --test-dir $(BUILD_DIR) -L unit -j$(JOBS) --output-on-failure
	@$(call PYTEST,-m 'not dist and not slow and not gpu')

# The unit tier under ASan + UBSan.
dev: deps
	@cmake --preset dev >/dev/null
	@cmake --build build/dev -j$(JOBS)
	@ctest --test-dir build/dev -L unit -j$(JOBS) --output-on-failure

# Every benchmark reproduction of docs/benchmarks.md (its `bench` blocks, and README's pip build),
# run as written from a folder standing for the checkout, printing its figures.
BENCH_DOCS = docs/benchmarks.md README.md
bench: build
	@bash scripts/run-tiers.sh $(foreach doc,$(BENCH_DOCS),$(call TIER,$(doc),bench-doc DOC=$(doc)))

bench-doc:
	@PYTHONPATH=$(CURDIR)/$(BUILD_DIR)/python /usr/bin/python3 tests/python/doc_blocks.py \
	  --bench --checkout $(BUILD_DIR) $(DOC)

# The libFuzzer targets (only them, not the tests) with clang, ASan and UBSan: a small second tree.
fuzz-build: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz --target mmpt_fuzzers -j$(JOBS)

# Fuzzing proper: each target for FUZZ_SECONDS from its seeds in tests/fuzz/<target>/; a crash
# fails and keeps its input.
FUZZ_SECONDS ?= 30
fuzz: fuzz-build
	@bash scripts/run-fuzzers.sh build/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf build
