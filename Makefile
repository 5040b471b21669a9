# The two set-up commands (README): `make demo` and `make test`. Both are idempotent.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PINS   := requirements/pins.txt
STAMP  := $(VENV)/.installed
# GPU=1 (`make demo GPU=1`, `make test GPU=1`): the CUDA builds of requirements/gpu.txt (which holds every pin of
# pins.txt too), with a stamp of their own; a venv installed for the other setting is made anew.
GPU    ?=
NODEPS := requirements/no-deps.txt
VENV_FLAGS :=
ifeq ($(GPU),1)
PINS   := requirements/gpu.txt
STAMP  := $(VENV)/.installed-gpu
OTHER  := $(VENV)/.installed
else
OTHER  := $(VENV)/.installed-gpu
endif
DEPENDS := $(PINS) requirements/pins.txt $(NODEPS) pyproject.toml
# GPU=1 on a GPU image whose $(PYTHON) already imports a CUDA build of torch (and JAX): the venv sees its packages
# (--system-site-packages) and keeps its torch, torchvision, jax and jaxlib, whose pins are left out of the
# constraints (written into the venv); everything else is pinned as usual. SYSTEM_TORCH=0 installs the pins instead.
ifeq ($(GPU),1)
ifeq ($(origin SYSTEM_TORCH),undefined)
SYSTEM_TORCH := $(shell $(PYTHON) -c 'import sys, torch; sys.exit(not torch.version.cuda)' >/dev/null 2>&1 && echo 1)
endif
ifeq ($(SYSTEM_TORCH),1)
VENV_FLAGS := --system-site-packages
KEEP   := ^(torch|torchvision|jax|jaxlib)[=<>!~ ;]
PINS   := $(VENV)/pins-system.txt
NODEPS := $(VENV)/no-deps-system.txt
endif
endif
# test processes (pytest-xdist): one per core of the 2-core machines CI runs on
JOBS   ?= 2

.PHONY: demo test test-all install clean gpu-check

# Re-install only when the pins or the package metadata change.
$(STAMP): $(DEPENDS)
	test ! -e $(OTHER) || rm -rf $(VENV)
	test -x $(PY) || $(PYTHON) -m venv $(strip $(VENV_FLAGS) $(VENV))
ifeq ($(GPU)$(SYSTEM_TORCH),11)
	grep -hvE '^-c |$(KEEP)' requirements/pins.txt requirements/gpu.txt > $(PINS)
	grep -vE '$(KEEP)' requirements/no-deps.txt > $(NODEPS)
endif
	$(PIP) install --quiet --upgrade pip
	# torch first and pinned, so that nothing can pull another build (CUDA; with GPU=1, CPU) in its place.
	$(PIP) install --quiet -c $(PINS) torch
	$(PIP) install --quiet -c $(PINS) -e '.[frameworks,test,ray]'
ifeq ($(GPU),1)
	# The CUDA builds in place of onnxruntime and tensorflow-cpu (MXNet stays a CPU build: requirements/gpu.txt).
	# Each pair ships the same Python module, so both builds go first (a re-run has just put the CPU one back),
	# then the CUDA one is installed alone.
	$(PIP) uninstall --quiet --yes onnxruntime onnxruntime-gpu tensorflow-cpu tensorflow
	$(PIP) install --quiet -c $(PINS) onnxruntime-gpu 'tensorflow[and-cuda]'
endif
	$(PIP) install --quiet --no-deps -r $(NODEPS)
	touch $(STAMP)

install: $(STAMP)

# Verify every model in every target by both routes, ONNX and MMdnn, side by side (inference, and 5 training
# steps where the target trains), then time
# the DLF workloads on this CPU; the bench reuses the conversions kept in .rosetta-work.
demo: $(STAMP)
	$(VENV)/bin/rosetta verify --model all --via onnx,mmdnn --targets all --train-steps 5 --work-dir .rosetta-work --json demo-results.json
	$(VENV)/bin/rosetta bench --workload all --targets all --work-dir .rosetta-work --json demo-bench.json --plot-dir demo-charts

# `make test`: every test but the cells marked `whole`, the rest of large matrices (each file keeps every registry
# entry at least once in the fixed subset, tests/shared.py fixed_subset); `make test-all`: the whole suite.
# OMP_WAIT_POLICY=PASSIVE: the test processes (one per core) and their workers each run OpenMP pools as wide as
# the machine, and an idle OpenMP thread spins by default, taking the core another process waits for; passive
# threads sleep (the same numbers; measured 8-20 % less wall time on a quarter of the suite). Not for `make demo`,
# whose bench times each framework as users run it.
# compileall first: where PYTHONDONTWRITEBYTECODE is set (this machine and CI), no process writes rosetta's
# bytecode, so each of the suite's hundreds of worker processes compiled the modules it imports again (the
# package is installed editable; pip compiles only site-packages); reading .pyc files is not affected
# (measured 8 % less CPU time on tests/test_cli.py). Under a second.
test: $(STAMP)
	$(PY) -m compileall -q rosetta tests > /dev/null
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest -q -n $(JOBS) --dist loadgroup --durations=15 -m "not whole" $(PYTEST_ARGS)

test-all: $(STAMP)
	$(PY) -m compileall -q rosetta tests > /dev/null
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest -q -n $(JOBS) --dist loadgroup --durations=15 $(PYTEST_ARGS)

# On a machine with one NVIDIA GPU (issue 41's device check, scripts/gpu_check.py): no install, the $(PYTHON) there
# with its CUDA torch and JAX, rosetta from this folder; within 480 s (GPU_CHECK_ARGS="--budget S"), each step saved as
# it ends; the table is gpu-check/gpu-check.md.
gpu-check:
	$(PYTHON) scripts/gpu_check.py --out gpu-check $(GPU_CHECK_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache demo-results.json demo-bench.json demo-charts .rosetta-work gpu-check
