# The two commands of the README: `make demo` and `make test`. Both install what is
# missing first (scripts/bootstrap.sh).

CARGO ?= cargo
# The demo's ranks: 4, or as many as the machine has CPUs when fewer (at least 2, one
# pair of the kernel): more ranks than CPUs share them, and the suggestion's prediction
# cannot be confirmed on such a run. `make demo RANKS=4` asks for 4 all the same.
ifndef RANKS
RANKS := $(shell n=$$(nproc 2>/dev/null || echo 4); [ "$$n" -gt 4 ] && n=4; [ "$$n" -lt 2 ] && n=2; echo $$n)
endif
DEMO_DIR := traces/demo

.PHONY: setup build demo test bench clean

setup:
	@scripts/bootstrap.sh $(BOOTSTRAP_FLAGS)

# What the demo runs (the overlap and overlap-kernels binaries), in release, and the
# preload users trace their own programs with, for the default MPI. Without the tables
# (`analyze --csv` and `--parquet`: polars, two thirds of a release build) and the
# other MPIs' preloads: `cargo build --release` and `scripts/build-preloads.sh --release`
# add them (docs/build.md).
build: setup
	$(CARGO) build --release -p overlap -p overlap-kernels --no-default-features \
	  --features overlap/otf2,overlap-kernels/mpi,overlap-kernels/cuda
	scripts/build-preloads.sh --release --default

demo: build
	mkdir -p $(DEMO_DIR)
	./target/release/overlap run false-overlap --ranks $(RANKS) --variant naive --out $(DEMO_DIR)/false-overlap-naive.json
	@echo
	./target/release/overlap run false-overlap --ranks $(RANKS) --variant fixed --out $(DEMO_DIR)/false-overlap-fixed.json
	@echo
	./target/release/overlap diff $(DEMO_DIR)/false-overlap-naive.json $(DEMO_DIR)/false-overlap-fixed.json
	@echo
	./target/release/overlap baseline $(DEMO_DIR)/false-overlap-fixed.json --out $(DEMO_DIR)/baseline-fixed.json
	@echo "The CI gate, naive against the fixed baseline (another variant, hence"
	@echo "--allow-different; it must fail, exit 1):"
	./target/release/overlap check $(DEMO_DIR)/false-overlap-naive.json --baseline $(DEMO_DIR)/baseline-fixed.json --tolerance 25 --allow-different; test $$? -eq 1
	@echo
	@echo "The reordering overlap suggests for naive, set against the fixed run:"
	./target/release/overlap suggest $(DEMO_DIR)/false-overlap-naive.json --confirm $(DEMO_DIR)/false-overlap-fixed.json
	@echo
	@echo "GPU halo packets staged through pinned host memory, bulk then pipelined (the cuda"
	@echo "backend where libcuda, NVRTC and a GPU are present, else host-emulated):"
	./target/release/overlap run gpu-pipeline --ranks 2 --variant bulk --iters 5 --out $(DEMO_DIR)/gpu-pipeline-bulk.json
	@echo
	./target/release/overlap run gpu-pipeline --ranks 2 --variant pipelined --iters 5 --out $(DEMO_DIR)/gpu-pipeline-pipelined.json
	@echo
	./target/release/overlap diff $(DEMO_DIR)/gpu-pipeline-bulk.json $(DEMO_DIR)/gpu-pipeline-pipelined.json
	@echo
	@echo "Open the traces in Perfetto: go to https://ui.perfetto.dev, choose 'Open trace file'"
	@echo "and pick $(DEMO_DIR)/false-overlap-naive.json, then $(DEMO_DIR)/false-overlap-fixed.json."
	@echo "Each rank is a process; click an MPI_Isend to follow its arrow to the call that"
	@echo "completed the receive. Nothing leaves your machine: the UI runs in the browser."
	@echo "In the gpu-pipeline traces each rank has a track per GPU stream; click a D2H to"
	@echo "follow its packet: D2H -> MPI_Isend -> the receive's completion -> H2D."
	@echo "Or explore them here, in the terminal (? lists the keys, q quits):"
	@echo "  ./target/release/overlap tui $(DEMO_DIR)/false-overlap-naive.json $(DEMO_DIR)/false-overlap-fixed.json"

# scripts/import-cycles.py first: the analyzer's files import one another in one
# direction (ARCHITECTURE.md). The tests also need the mpi4py venv (target/mpi4py-venv,
# built once) and the perfetto venv (target/perfetto-venv: Perfetto's trace schema, for
# scripts/check-pftrace.sh), and the preload for each MPI besides the default: they are
# made beside the cargo build (which leaves a core idle much of its time), their lines
# printed after it, and the tests wait for them.
test: setup
	scripts/import-cycles.py
	mkdir -p target
	scripts/bootstrap.sh --mpi4py >target/venvs.log 2>&1 & venvs=$$!; \
	  scripts/build-preloads.sh --others >target/preloads.log 2>&1 & others=$$!; \
	  $(CARGO) build --workspace; built=$$?; \
	  wait $$venvs; made=$$?; wait $$others; preloads=$$?; \
	  cat target/venvs.log target/preloads.log; \
	  [ $$built -eq 0 ] && [ $$made -eq 0 ] && [ $$preloads -eq 0 ]
	@# Once more, all built: the default's link, and the others' copies made after the
	@# default library (a copy older than it reads as stale to the tests).
	scripts/build-preloads.sh
	OVERLAP_REQUIRE_OPEN_MPI=1 OVERLAP_REQUIRE_MPI4PY=1 $(CARGO) test --workspace
	OVERLAP_REQUIRE_PERFETTO=1 scripts/check-pftrace.sh
	scripts/ci-gate.sh
	scripts/faults.sh

# What tracing costs, side by side (docs/preload.md, "Cost"): the OSU loops untraced,
# under the preload, under mpiP (built once from its source release into target/mpip/;
# MPIP_LIB=/path/libmpiP.so uses another, MPIP_LIB=none none) and through the Rust layer
# (RUNS alternating rounds, default 5), bytes per event, the writer's throughput, the
# per-call overhead of the Rust layer, what the buffer watch costs per completion
# (docs/buffers.md), how suggest's time grows from 10^3 to 10^6 operations
# (docs/suggest.md), then the analyzer's speed, and the merged file's writers (protobuf
# and JSON side by side, against the disk's speed: docs/trace-format.md 7.10). Figures,
# not asserts.
bench: setup
	$(CARGO) build --release -p overlap -p overlap-preload
	$(CARGO) build --release -p overlap-kernels --example osu
	scripts/bench-mpi.sh
	@echo
	scripts/bench-buffers.sh
	@echo
	scripts/bench-suggest.sh
	@echo
	$(CARGO) bench -p overlap-instrument --bench writer
	@echo
	$(CARGO) bench -p overlap-instrument --bench overhead
	@echo
	$(CARGO) bench -p overlap-analyzer --bench analyze
	@echo
	$(CARGO) bench -p overlap-analyzer --bench scale
	@echo
	@echo "The merged file's two writers side by side, Perfetto's protobuf and Chrome JSON:"
	@echo "a preloaded run, then a generated 16-rank run, and this disk's write speed (dd)."
	scripts/bench-pftrace.sh
	$(CARGO) bench -p overlap-analyzer --bench scale -- --ranks 16 --events 2000000 --threads 1 --only writers,merge,merge-pftrace

clean:
	$(CARGO) clean
	rm -rf $(DEMO_DIR)
