PYTHON ?= /usr/bin/python3
BUILD ?= build
CMAKE ?= cmake
CTEST ?= ctest

DEBIAN_PACKAGES := python3-torch libtorch-dev pybind11-dev python3-pytest python3-numpy \
	python3-hypothesis ninja-build libopenblas0-openmp ccache googletest libgtest-dev cmake xz-utils

.PHONY: all deps configure build test test-cpp test-python test-upstream test-opinfo test-fuzz demo bench clean

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

# PyTorch's own test_view_ops.py and test_indexing.py on Loom, against
# tests/upstream/expected_failures.txt. The first run fetches them with apt-get source.
test-upstream: build
	$(PYTHON) tests/upstream/run.py --log-dir $(BUILD)/upstream

# Every sample of PyTorch's OpInfo database on Loom against the CPU (`make test` runs the
# first sample of each op); OPINFO_JSON=path writes the results, OPINFO_ARGS adds options
# of tests/python/opinfo_sweep.py (--ops PATTERN, --jobs N, --max-samples N).
OPINFO_JSON ?=
OPINFO_ARGS ?=
test-opinfo: build
	PYTHONPATH=python $(PYTHON) tests/python/opinfo_sweep.py $(if $(OPINFO_JSON),--json $(OPINFO_JSON)) $(OPINFO_ARGS)

# The view/write fuzzer with many more programs than `make test` runs (500); FUZZ_SEED
# draws other programs than the derandomized default.
FUZZ_EXAMPLES ?= 5000
FUZZ_SEED ?=
test-fuzz: build
	LOOM_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) LOOM_FUZZ_SEED=$(FUZZ_SEED) PYTHONPATH=python \
	  $(PYTHON) -m pytest -q tests/python/test_fuzz_views.py --hypothesis-show-statistics

# Runs every suite even when one fails, so one report shows everything.
test: build
	@rc=0; \
	echo "$(CTEST) --test-dir $(BUILD) --output-on-failure"; \
	$(CTEST) --test-dir $(BUILD) --output-on-failure || rc=1; \
	echo "PYTHONPATH=python $(PYTHON) -m pytest -q tests/python"; \
	PYTHONPATH=python $(PYTHON) -m pytest -q tests/python || rc=1; \
	echo "$(PYTHON) tests/upstream/run.py --log-dir $(BUILD)/upstream"; \
	$(PYTHON) tests/upstream/run.py --log-dir $(BUILD)/upstream || rc=1; \
	exit $$rc

demo: build
	PYTHONPATH=python $(PYTHON) examples/train_cifar.py --device cpu --steps 5
	PYTHONPATH=python $(PYTHON) examples/train_cifar.py --device loom --steps 5

bench: build
	PYTHONPATH=python $(PYTHON) bench/run.py

clean:
	rm -rf $(BUILD) python/loom/_loom*.so
