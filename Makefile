# The two set-up commands (README): `make demo` and `make test`. Both are idempotent.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PINS   := requirements/pins.txt
STAMP  := $(VENV)/.installed
# test processes (pytest-xdist): one per core of the 2-core machines CI runs on
JOBS   ?= 2

.PHONY: demo test install clean

# Re-install only when the pins or the package metadata change.
NODEPS := requirements/no-deps.txt

$(STAMP): $(PINS) $(NODEPS) pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first and pinned, so that nothing can pull a CUDA build in its place.
	$(PIP) install --quiet -c $(PINS) torch
	$(PIP) install --quiet -c $(PINS) -e '.[frameworks,test,ray]'
	$(PIP) install --quiet --no-deps -r $(NODEPS)
	touch $(STAMP)

install: $(STAMP)

# Verify every model in every target by both routes, ONNX and MMdnn, side by side (inference, and 5 training
# steps where the target trains), then time
# the DLF workloads on this CPU; the bench reuses the conversions kept in .rosetta-work.
demo: $(STAMP)
	$(VENV)/bin/rosetta verify --model all --via onnx,mmdnn --targets all --train-steps 5 --work-dir .rosetta-work --json demo-results.json
	$(VENV)/bin/rosetta bench --workload all --targets all --work-dir .rosetta-work --json demo-bench.json --plot-dir demo-charts

test: $(STAMP)
	$(PY) -m pytest -q -n $(JOBS) --dist loadgroup $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache demo-results.json demo-bench.json demo-charts .rosetta-work
