# Entry points for users and CI. Both install what is missing, then build.
BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 600
FUZZ_RUNS ?=
PEER ?= ../shared/peers/diloco_peer.py

.PHONY: deps demo-deps bench-deps configure build demo test bench fuzz clean
CONFIGURE = cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

deps:
	@./scripts/install-deps.sh

# The demo installs only what it builds with (no fuzzer toolchain, Jupyter, Chromium or SLURM).
demo-deps:
	@./scripts/install-deps.sh --demo

bench-deps:
	@./scripts/install-deps.sh --bench

configure: deps
	@$(CONFIGURE)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The demo needs the simulator's two programs, not the tests.
demo: demo-deps
	@$(CONFIGURE)
	@cmake --build $(BUILD) -j $(JOBS) --target locosim locosim-sim
	./$(BUILD)/locosim run scenarios/quickstart.yaml

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Figures, not tests (bench/README.md): the swarm scale of timing-only runs, swarm-10k at 100 rounds,
# a full run's overhead over its LibTorch work and the step pool's speed-up, and locosim against a
# plain PyTorch DiLoCo loop (PEER, skipped with a line saying so where there is none). One line per
# measurement, kept in $(BUILD)/bench.txt for bench/record.py.
bench: build bench-deps
	bench/run.sh $(BUILD) "$(PEER)"

# The loader fuzzer (fuzz/README.md): FUZZ_SECONDS of fuzzing, or FUZZ_RUNS inputs when that is set.
fuzz: deps
	./fuzz/run.sh --build $(BUILD)/fuzz/clang $(if $(FUZZ_RUNS),--runs $(FUZZ_RUNS),--seconds $(FUZZ_SECONDS))

clean:
	rm -rf $(BUILD)
