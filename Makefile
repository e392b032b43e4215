PYTHON ?= /usr/bin/python3
BUILD ?= build
CMAKE ?= cmake
CTEST ?= ctest

DEBIAN_PACKAGES := python3-torch libtorch-dev pybind11-dev python3-pytest python3-numpy \
	python3-hypothesis ninja-build libopenblas0-openmp libdnnl-dev ccache googletest libgtest-dev cmake xz-utils \
	llvm-16-dev libclang-16-dev libclang-cpp16-dev \
	python3-matplotlib

.PHONY: all deps configure build test test-cpp test-python test-upstream test-opinfo test-fuzz test-torch2-headers test-torch2-trixie demo bench clean

all: build

deps:
	@missing=""; \
	for p in $(DEBIAN_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	  else \
	    echo "error: missing Debian packages:$$missing" >&2; \
	    echo "run as root: apt-get install -y$$missing" >&2; \
	    exit 1; \
	  fi; \
	fi

$(BUILD)/build.ninja:
	$(CMAKE) -S . -B $(BUILD) -G Ninja -DPython3_EXECUTABLE=$(PYTHON)

configure: deps $(BUILD)/build.ninja

build: configure
	$(CMAKE) --build $(BUILD)

test-cpp: build
	$(CTEST) --test-dir $(BUILD) --output-on-failure

test-python: build
	PYTHONPATH=python $(PYTHON) -m pytest -q tests/python

# PyTorch's own device-generic test files (tests/upstream/run.py FILES) on Loom, against
# tests/upstream/expected_failures.txt. The first run fetches them with apt-get source.
# `make test` runs all but test_binary_ufuncs.py (--quick).
test-upstream: build
	$(PYTHON) tests/upstream/run.py --log-dir $(BUILD)/upstream

# The binding against later PyTorch releases' headers (Debian's libtorch-dev 2.6 and 2.14,
# downloaded into $(BUILD)/torch-headers): every csrc/aten file compiles, and no op Loom
# registers changed its C++ signature unnoticed (tests/torch2/README.md). About 5 minutes.
test-torch2-headers: build
	bash tests/torch2/check_headers.sh $(BUILD)/torch-headers
	PYTHONPATH=python $(PYTHON) tests/torch2/schema_diff.py $(BUILD)/torch-headers/torch-*/usr/include

# Loom built and tested on Debian trixie's torch 2.6 in a debootstrapped root (needs root;
# about 2.3 GB, kept in TRIXIE_ROOT); TRIXIE_SUITE_SECONDS bounds its Python suite.
TRIXIE_ROOT ?= /var/tmp/loom-trixie
TRIXIE_SUITE_SECONDS ?= 1800
test-torch2-trixie:
	bash tests/torch2/trixie.sh $(TRIXIE_ROOT) $(TRIXIE_SUITE_SECONDS)

# Every sample of PyTorch's OpInfo database on Loom against the CPU (`make test` runs the
# first sample of each op); OPINFO_JSON=path writes the results, OPINFO_ARGS adds options
# of tests/python/opinfo_sweep.py (--ops PATTERN, --jobs N, --max-samples N).
OPINFO_JSON ?=
OPINFO_ARGS ?=
test-opinfo: build
	PYTHONPATH=python $(PYTHON) tests/python/opinfo_sweep.py $(if $(OPINFO_JSON),--json $(OPINFO_JSON)) $(OPINFO_ARGS)

# The view/write fuzzer and the fusion fuzzer with many more programs than `make test`
# runs (500 and 150); FUZZ_SEED draws other programs than the derandomized default.
FUZZ_EXAMPLES ?= 5000
FUZZ_SEED ?=
test-fuzz: build
	LOOM_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) LOOM_FUZZ_SEED=$(FUZZ_SEED) PYTHONPATH=python \
	  $(PYTHON) -m pytest -q tests/python/test_fuzz_views.py tests/python/test_fuzz_fusion.py \
	  --hypothesis-show-statistics

# Runs every suite even when one fails, so one report shows everything.
test: build
	@rc=0; \
	echo "$(CTEST) --test-dir $(BUILD) --output-on-failure"; \
	$(CTEST) --test-dir $(BUILD) --output-on-failure || rc=1; \
	echo "PYTHONPATH=python $(PYTHON) -m pytest -q tests/python"; \
	PYTHONPATH=python $(PYTHON) -m pytest -q tests/python || rc=1; \
	echo "$(PYTHON) tests/upstream/run.py --quick --log-dir $(BUILD)/upstream"; \
	$(PYTHON) tests/upstream/run.py --quick --log-dir $(BUILD)/upstream || rc=1; \
	exit $$rc

demo: build
	PYTHONPATH=python $(PYTHON) examples/train_cifar.py --device cpu --steps 5
	PYTHONPATH=python $(PYTHON) examples/train_cifar.py --device loom --steps 5

bench: build
	PYTHONPATH=python $(PYTHON) bench/run.py

clean:
	rm -rf $(BUILD) python/loom/_loom*.so

# --- reliability (issue 6): long runs, sanitizers, libFuzzer ---
.PHONY: test-long test-asan test-tsan test-fuzz-index deps-fuzz

# The training-memory test at its full length (`make test` runs 60 steps).
test-long: build
	LOOM_MEMORY_STEPS=400 PYTHONPATH=python $(PYTHON) -m pytest -q -s tests/python/test_memory.py

# The engine, its C++ tests and the extension built with ASan and UBSan in their own
# directory; the extension lands there too, beside a copy of the package, and a short
# Python smoke test runs it with the ASan runtime preloaded (Python itself is not built
# with ASan, so leak checking stays off for that part).
ASAN_BUILD ?= build-asan
test-asan: deps
	$(CMAKE) -S . -B $(ASAN_BUILD) -G Ninja -DPython3_EXECUTABLE=$(PYTHON) \
	  -DLOOM_SANITIZE=address,undefined -DLOOM_EXTENSION_DIR=$(CURDIR)/$(ASAN_BUILD)/python/loom
	$(CMAKE) --build $(ASAN_BUILD)
	UBSAN_OPTIONS=print_stacktrace=1 $(CTEST) --test-dir $(ASAN_BUILD) --output-on-failure
	cp python/loom/*.py $(ASAN_BUILD)/python/loom/
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  LD_PRELOAD="$$($(CXX) -print-file-name=libasan.so) $$($(CXX) -print-file-name=libubsan.so)" \
	  PYTHONPATH=$(ASAN_BUILD)/python LOOM_CACHE_DIR=$(CURDIR)/$(ASAN_BUILD)/kernels \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/python/test_asan_smoke.py

# The engine's C++ tests built with ThreadSanitizer, with the executor (NOTE [Asynchronous
# execution]) and again with every task run where it is issued (the pool's workers).
TSAN_BUILD ?= build-tsan
test-tsan: deps
	$(CMAKE) -S . -B $(TSAN_BUILD) -G Ninja -DPython3_EXECUTABLE=$(PYTHON) \
	  -DLOOM_SANITIZE=thread -DLOOM_BUILD_EXTENSION=OFF
	$(CMAKE) --build $(TSAN_BUILD) --target loom_cpp_tests
	TSAN_OPTIONS=halt_on_error=1 LOOM_CACHE_DIR=$(CURDIR)/$(TSAN_BUILD)/kernels $(TSAN_BUILD)/loom_cpp_tests
	TSAN_OPTIONS=halt_on_error=1 LOOM_CACHE_DIR=$(CURDIR)/$(TSAN_BUILD)/kernels LOOM_ASYNC=0 \
	  $(TSAN_BUILD)/loom_cpp_tests

# libFuzzer on the index-arithmetic case (tests/cpp/index_fuzz.h) for FUZZ_SECONDS, with
# clang in its own build directory; `make test` runs the same case from a seeded PRNG.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_CLANG ?= clang-14
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev
deps-fuzz:
	@for p in $(FUZZ_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "error: test-fuzz needs: apt-get install -y$$missing" >&2; exit 1; fi

test-fuzz-index: deps-fuzz
	CC=$(FUZZ_CLANG) CXX=$(subst clang,clang++,$(FUZZ_CLANG)) $(CMAKE) -S . -B $(FUZZ_BUILD) -G Ninja \
	  -DLOOM_BUILD_EXTENSION=OFF -DLOOM_FUZZER=ON -DLOOM_SANITIZE=address,undefined,fuzzer-no-link
	$(CMAKE) --build $(FUZZ_BUILD) --target loom_index_fuzzer
	mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/loom_index_fuzzer -max_total_time=$(FUZZ_SECONDS) -max_len=256 $(FUZZ_BUILD)/corpus

test-fuzz: test-fuzz-index
