# flowemu — `make demo` and `make test` set everything up from scratch.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# flowemu and what it needs to run, without the test and cluster tools (a faster first demo)
RUN_STAMP := $(VENV)/.installed-run
# ... plus the documentation tools (make docs)
DOCS_STAMP := $(VENV)/.installed-docs

# pip installs without byte-compiling (it would compile every file, tests included:
# ~30 s); then the modules a run imports are compiled once, on both cores, leaving
# out test directories (~10 s). Without .pyc files every command recompiles numpy,
# pandas and numba when it starts (Python writes none under PYTHONDONTWRITEBYTECODE,
# common in containers): a one-line error took 2 s instead of 0.7 s, more in each
# sweep worker. compileall writes them whatever that variable says. A file that does
# not compile (none today) only loses its speed-up, so it does not stop the install.
COMPILE = $(PY) -m compileall -q -j 0 -x '/tests?/' \
	  "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" flowemu \
	  >/dev/null || true

.PHONY: setup test test-all demo bench simgrid docs lint clean sweep figures paper whatif

$(RUN_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-compile --config-settings editable_mode=compat -e .
	$(COMPILE)
	@touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-compile --config-settings editable_mode=compat -e '.[dev]'
	$(COMPILE)
	@touch $(STAMP) $(RUN_STAMP)

$(DOCS_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-compile --config-settings editable_mode=compat -e '.[dev,docs]'
	$(COMPILE)
	@touch $(DOCS_STAMP) $(STAMP) $(RUN_STAMP)

setup: $(STAMP)

# The tests run in TEST_JOBS processes (pytest-xdist): each compiles the kernels
# its tests need on a fresh clone, and their cache serves the other; TEST_JOBS=0
# runs them in this process.
TEST_JOBS ?= 2

test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q --benchmark-disable -m "not slow" -n $(TEST_JOBS) tests

# every test, the slow ones included
test-all: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q --benchmark-disable -n $(TEST_JOBS) tests

demo: $(RUN_STAMP)
	$(PY) -m flowemu.cli.demo

# Real benchmark runs, saved under .benchmarks/; fails when a benchmark's median, in
# 1 GiB copies timed in the same run, grew by more than 50 % over the last saved run
# (tests/benchmarks/compare.py; raw times would follow the machine's speed).
bench: $(STAMP)
	$(PY) -m pytest tests/benchmarks --benchmark-only --benchmark-autosave \
	  --benchmark-columns=min,median,mean,max,rounds
	$(PY) -m tests.benchmarks.compare

# flowemu's solver against SimGrid's LMM solver on the same problems: finish times
# (tests/benchmarks/test_simgrid.py), then times on issue 25's event-driven workloads.
# make simgrid SIMGRID=DIR [WORKLOADS="taper2-split ..."] [LIMIT=300]; DIR: a SimGrid 4.1
# source tree built in DIR/build (docs/model.md, "Against SimGrid", gives the commands).
SIMGRID   ?=
WORKLOADS ?=
LIMIT     ?= 300
# (SIMGRID is checked before anything is installed)
simgrid:
	@test -n "$(SIMGRID)" || { echo "make simgrid: set SIMGRID=DIR, a SimGrid 4.1 source tree built in DIR/build (docs/model.md, 'Against SimGrid')" >&2; exit 2; }
	@test -e "$(SIMGRID)/build/lib/libsimgrid.so" || { echo "make simgrid: SIMGRID=$(SIMGRID) has no build/lib/libsimgrid.so; build SimGrid there first (docs/model.md, 'Against SimGrid')" >&2; exit 2; }
	@$(MAKE) -s --no-print-directory $(STAMP)
	FLOWEMU_SIMGRID=$(SIMGRID) $(PY) -m pytest -q -p no:cacheprovider --benchmark-disable \
	  tests/benchmarks/test_simgrid.py
	$(PY) -m tests.benchmarks.simgrid --simgrid $(SIMGRID) --limit $(LIMIT) $(WORKLOADS)

# The documentation site (docs/*.md, Sphinx) -> docs/_build/html/index.html; warnings are errors
docs: $(DOCS_STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

# Sweeps: make sweep CONFIG=configs/X.toml [JOBS=N] [SCHEDULER=tcp://host:8786]
# -> results/X/ (a parquet dataset; re-running resumes, computing only what is missing)
CONFIG    ?= configs/smoke.toml
RESULTS   ?= results
JOBS      ?=
SCHEDULER ?=
SWEEP_OPTS = $(if $(JOBS),--jobs $(JOBS)) $(if $(SCHEDULER),--scheduler $(SCHEDULER))

sweep: $(STAMP)
	$(PY) -m flowemu sweep $(CONFIG) --out $(RESULTS)/$(basename $(notdir $(CONFIG))) $(SWEEP_OPTS)

# goodput and gain figures (per group) of every dataset under results/, in <dataset>/_figures/,
# and the slowdown figure of datasets with what-if rows (results/whatif-failures/: make whatif)
figures: $(STAMP)
	@found=; for d in $(RESULTS)/*/; do \
	  if ls $$d/part-*.parquet >/dev/null 2>&1; then \
	    found=1; $(PY) -m flowemu plot $$d || exit 1; \
	  fi; \
	done; test -n "$$found" || echo "no datasets under $(RESULTS)/ (run make sweep first)"

# the Swing paper's torus evaluation (Fig. 6-8, 10, 11): configs/paper.toml -> results/paper/
# and Fig. 6's gain curve for per-message overheads of 0 to 2 us: configs/alpha.toml -> results/alpha/
# and the torus-like topologies of §5.4 (Fig. 12-14): configs/toruslike.toml -> results/toruslike/
# and the fat-tree / leaf-spine tapering what-if: configs/taper.toml -> results/taper/
# and the GenModel paper's GenTree study (§5.3, Tables 6-7): configs/gentree.toml -> results/gentree/
# and the HammingMesh paper's Table II (global and allreduce bandwidth): configs/tables/hammingmesh-table2.toml
# -> results/hammingmesh-table2/table2.csv
PAPER := $(RESULTS)/paper
PAPER_FIGS := $(PAPER)/_figures
ALPHA := $(RESULTS)/alpha
TORUSLIKE := $(RESULTS)/toruslike
TAPER := $(RESULTS)/taper
GENTREE := $(RESULTS)/gentree
BINE := $(RESULTS)/bine
# the Bine study's locality table: bytes between groups per byte of n at 128 MiB,
# per algorithm and placement (docs/reproductions.md)
define BINE_LOCALITY
import sys, flowemu.study.results as r
df = r.load(sys.argv[1]); df = df[(df.size_bytes == 2**27) & (df.group != "alltoall")]
t = df.pivot_table(index=["group", "topology", "label"], columns="placement",
                   values="cross_group_bytes") / 2**27
t.round(2).to_csv(sys.argv[2]); print(t.round(2).to_string())
endef
export BINE_LOCALITY
HMTABLE := $(RESULTS)/hammingmesh-table2
paper: $(STAMP)
	$(PY) -m flowemu sweep configs/paper.toml --out $(PAPER) $(SWEEP_OPTS)
	$(PY) -m flowemu plot $(PAPER)
	$(PY) -m flowemu plot $(PAPER) --group square --topology torus:64x64 \
	  --title "Fig. 6: 64x64 torus" --out $(PAPER_FIGS)/fig6-goodput-64x64.png
	$(PY) -m flowemu plot $(PAPER) --group square --kind gain \
	  --title "Fig. 7: Swing gain, square tori" --out $(PAPER_FIGS)/fig7-gain-square.png
	$(PY) -m flowemu plot $(PAPER) --group bandwidth --kind gain \
	  --title "Fig. 8: Swing gain, 8x8 torus" --out $(PAPER_FIGS)/fig8-gain-bandwidth.png
	$(PY) -m flowemu plot $(PAPER) --group rectangular \
	  --title "Fig. 10: rectangular tori" --out $(PAPER_FIGS)/fig10-goodput-rectangular.png
	$(PY) -m flowemu plot $(PAPER) --group ndim \
	  --title "Fig. 11: 2-D, 3-D, 4-D tori" --out $(PAPER_FIGS)/fig11-goodput-ndim.png
	$(PY) -m flowemu compare $(PAPER) --format csv --out $(PAPER)/_compare.csv
	$(PY) -m flowemu sweep configs/toruslike.toml --out $(TORUSLIKE) $(SWEEP_OPTS)
	$(PY) -m flowemu plot $(TORUSLIKE) --topology hx2mesh:32x32 \
	  --title "Fig. 12: Hx2Mesh, 4,096 nodes" --out $(PAPER_FIGS)/fig12-goodput-hx2mesh.png
	$(PY) -m flowemu plot $(TORUSLIKE) --topology hx4mesh:16x16 \
	  --title "Fig. 13: Hx4Mesh, 4,096 nodes" --out $(PAPER_FIGS)/fig13-goodput-hx4mesh.png
	$(PY) -m flowemu plot $(TORUSLIKE) --topology hyperx:64x64 \
	  --title "Fig. 14: 2-D HyperX, 4,096 nodes" --out $(PAPER_FIGS)/fig14-goodput-hyperx.png
	$(PY) -m flowemu plot $(TORUSLIKE) --kind gain \
	  --title "Swing gain: HyperX, Hx2Mesh, Hx4Mesh, 64x64 torus" \
	  --out $(PAPER_FIGS)/fig12-14-gain-toruslike.png
	$(PY) -m flowemu sweep configs/taper.toml --out $(TAPER) $(SWEEP_OPTS)
	$(PY) -m flowemu plot $(TAPER) --group fattree \
	  --title "fattree:k=16 (1,024 hosts), edge tier 1:1, 2:1, 4:1" \
	  --out $(PAPER_FIGS)/taper-goodput-fattree.png
	$(PY) -m flowemu plot $(TAPER) --group leafspine \
	  --title "leaf-spine 32 leaves x 32 hosts, 32/16/8 spines (1:1, 2:1, 4:1)" \
	  --out $(PAPER_FIGS)/taper-goodput-leafspine.png
	$(PY) -m flowemu sweep configs/gentree.toml --out $(GENTREE) $(SWEEP_OPTS)
	mkdir -p $(PAPER_FIGS)
	$(PY) -m flowemu plot $(GENTREE) --group single --kind time \
	  --title "GenModel Table 7: one switch, flow (solid) and GenModel (dashed)" \
	  --out $(PAPER_FIGS)/gentree-time-single.png
	$(PY) -m flowemu plot $(GENTREE) --group hierarchical --kind time \
	  --title "GenModel Table 7: SYM384, SYM512, ASY384, CDC384" \
	  --out $(PAPER_FIGS)/gentree-time-hierarchical.png
	$(PY) -m flowemu plot $(GENTREE) --group hierarchical --kind gain --algorithm gentree \
	  --where "model == 'flow' and label != 'gentree:rearrange=no'" \
	  --title "GenTree's gain over the best of ring, RHD and CPS" \
	  --out $(PAPER_FIGS)/gentree-gain-hierarchical.png
	$(PY) -m flowemu compare $(GENTREE) --by model --format csv --out $(GENTREE)/_compare-models.csv
	$(PY) -m flowemu sweep configs/alpha.toml --out $(ALPHA) $(SWEEP_OPTS)
	$(PY) -m flowemu plot $(ALPHA) --kind gain-curve --by alpha_s \
	  --title "Swing's gain over the best other, 64x64 torus, per-message overhead alpha" \
	  --out $(PAPER_FIGS)/alpha-sensitivity-64x64.png
	mkdir -p $(HMTABLE)
	$(PY) -m flowemu global configs/tables/hammingmesh-table2.toml --out $(HMTABLE)/table2.csv
	$(PY) -m flowemu sweep configs/bine.toml --out $(BINE) $(SWEEP_OPTS)
	$(PY) -m flowemu plot $(BINE) --group alltoall \
	  --title "All-to-all: Bine, Bruck, pairwise, linear" --out $(PAPER_FIGS)/bine-alltoall.png
	$(PY) -m flowemu compare $(BINE) --format csv --out $(BINE)/_compare.csv
	$(PY) -c "$$BINE_LOCALITY" $(BINE) $(BINE)/_locality.csv

# the failure study: Swing, bucket, ring and recursive doubling on torus:64x64 and
# fattree:k=16 with 0, 1, 4, 16 random failed links over 20 seeds (configs/whatif-failures.toml)
# -> results/whatif-failures/, its figures (_figures/slowdown.png) and the slowdown table
WHATIF := $(RESULTS)/whatif-failures
whatif: $(STAMP)
	$(PY) -m flowemu sweep configs/whatif-failures.toml --out $(WHATIF) $(SWEEP_OPTS)
	$(PY) -m flowemu plot $(WHATIF)
	$(PY) -m flowemu plot $(WHATIF) --kind slowdown --size 1MiB \
	  --title "random link failures, 20 seeds" --out $(WHATIF)/_figures/slowdown-1MiB.png
	$(PY) -m flowemu plot $(WHATIF) --kind slowdown --size 1KiB \
	  --title "random link failures, 20 seeds" --out $(WHATIF)/_figures/slowdown-1KiB.png
	$(PY) -m flowemu compare $(WHATIF) --by whatif --format csv --out $(WHATIF)/_compare-whatif.csv

lint: $(STAMP)
	$(VENV)/bin/ruff check flowemu tests

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks build *.egg-info docs/_build
	find flowemu -name '*.nbi' -delete -o -name '*.nbc' -delete
