# The README's two commands are `make demo` and `make test`; everything installs into .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# A demo step that shows a failure exits with the code it should (1: violations; 2: no verdict, e.g.
# a planted unreadable line) and says what was found; any other exit stops the demo.
# usage: COMMAND; $(call expect_exit,CODE,what was found)
expect_exit = rc=$$?; if [ $$rc -eq $(1) ]; then echo "   -> exit $(1), as expected: $(2)"; else echo "   -> exit $$rc, expected $(1) ($(2))"; exit 1; fi

.PHONY: demo test test-slow check-wheel bench docs fixtures tla-tables clean

$(STAMP): pyproject.toml setup.py rmkit/_linescan.pyx rmkit/_crc32.pxd rmkit/_plainstring.pxd rmkit/logclock.py rmkit/logclock.pxd rmkit/subjects.py rmkit/subjects.pxd rmkit/keystore.py rmkit/keystore.pxd conformance/rmb/_uidscan.pyx conformance/rmb/logjudge.pxd \
		conformance/rmb/handlers.py conformance/rmb/logjudge.py conformance/rmb/state.py conformance/rmb/checker.py conformance/rmb/sigreuse.py \
		conformance/corda/share.py conformance/corda/packing.py conformance/corda/facts.py conformance/corda/handlers.py \
		conformance/corda/spanning.py conformance/corda/_keyshares.pyx conformance/corda/state.py conformance/corda/state.pxd \
		conformance/remp/checker.py conformance/remp/handlers.py conformance/remp/state.py conformance/remp/state.pxd conformance/remp/metrics.py conformance/remp/metrics.pxd \
		conformance/remp/clocktrack.py conformance/remp/_clockscan.pyx
	@$(PY) -c 'import sys; sys.exit("rmkit needs Python 3.11+, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# (setuptools' note that an editable install resolves imports through a finder is not a problem here)
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install -q -e '.[test,spark]'
	@# the compiled line scanner of --jobs readers is optional (built where a C compiler is found)
	@$(BIN)/python -c 'import rmkit.linescan as s; print("rmkit: compiled line scanner", "built" if s.COMPILED else "not built (no C compiler): --jobs reads in Python, a little slower")'
	@# byte-compiled once here, so that no run of rmkit compiles its modules again (an environment
	@# that sets PYTHONDONTWRITEBYTECODE would otherwise pay ~0.15 s per process start)
	$(BIN)/python -m compileall -q -j 0 rmkit protocols conformance reference_impl spark_checks spec tla fixtures >/dev/null
	@# RMB: a real redis-server, and the public npm clients (pinned by interop/rmb-npm/package-lock.json)
	@command -v redis-server >/dev/null || (apt-get update -q && apt-get install -y -q redis-server)
	@command -v npm >/dev/null || (apt-get update -q && apt-get install -y -q nodejs npm)
	cd interop/rmb-npm && npm ci --no-audit --no-fund --loglevel=error
	@# `rmkit spec diagram` renders with Graphviz's dot; the HTML reports are opened by a headless
	@# browser in the slow tests (Debian's chromium)
	@command -v dot >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q graphviz >/dev/null) || echo "rmkit: could not install graphviz (apt-get); rmkit spec diagram can write DOT but not render SVG/PNG/PDF"
	@command -v chromium >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null) || echo "rmkit: could not install chromium (apt-get); the browser test of the HTML reports will be skipped"
	@# Corda: a real broker (ActiveMQ Classic, Debian's package)
	@[ -f /usr/share/activemq/bin/activemq.jar ] || (apt-get update -q >/dev/null && apt-get install -y -q activemq >/dev/null) || echo "rmkit: could not install activemq (apt-get); the Corda broker tests will be skipped"
	@touch $(STAMP)

demo: $(STAMP)
	@echo "== 1. a simulated shard (7 validators, 2 faulty, lossy network, 60 s sessions): clean under the documents' profile"
	$(BIN)/rmkit check --lifetime 60 fixtures/remp/logs/sim-spec-clean.jsonl
	@echo
	@echo "== 2. the same kind of log with injected faults: every violation cites its rule, the receipts (file:line) and what to do"
	@$(BIN)/rmkit check --lifetime 60 fixtures/remp/logs/sim-spec-faults.jsonl; $(call expect_exit,2,the injected faults were found; its one planted unreadable line makes the run no verdict (exit 2) whatever else is found)
	@echo
	@echo "== 3. the real node's behaviour (a Kafka dump) under the ever-node profile: expired messages vanish silently (non-strict)"
	$(BIN)/rmkit check --lifetime 60 --profile ever-node fixtures/remp/logs/sim-ever-node-clean.jsonl
	@echo
	@echo "== 4. a rule, its source sentence and a live example"
	$(BIN)/rmkit explain REMP-REPLAY-002
	@echo
	@echo "== 5. signed receipts: a key set, a signed simulator log, its signatures verified (one receipt tampered with)"
	@mkdir -p build/demo && rm -rf build/demo/keys
	$(BIN)/rmkit keys gen --validators 7 --seed 1 --out build/demo/keys
	$(BIN)/rmkit simulate --messages 50 --seed 5 --keys build/demo/keys -o build/demo/signed.jsonl
	$(BIN)/rmkit check build/demo/signed.jsonl --validators build/demo/keys/validators.yaml | head -10
	@head -3 build/demo/signed.jsonl | sed '2s/"sent_to":[0-9]*/"sent_to":9/' > build/demo/tampered.jsonl
	@$(BIN)/rmkit receipt verify --validators build/demo/keys/validators.yaml build/demo/tampered.jsonl; $(call expect_exit,1,the tampered receipt's signature does not verify)
	@echo
	@echo "== 6. the TLA+ model checked by TLC (hand-over configuration; \`rmkit tlc\` runs the small one)"
	$(BIN)/rmkit tlc remp --config handover
	@echo
	@echo "== 7. driven conformance: a validator without replay protection is found, shrunk and saved (the reference passes)"
	@rm -rf build/demo/regressions
	$(BIN)/rmkit conform --role validator --impl-cmd "$(BIN)/python -m rmkit.reference_impl.remp.adapter ROLE" --max-examples 20 --derandomize --regressions build/demo/regressions | tail -3
	@$(BIN)/rmkit conform --role validator --impl-cmd "$(BIN)/python -m rmkit.conformance.remp.examples no_replay_protection ROLE" --max-examples 50 --derandomize --regressions build/demo/regressions > build/demo/conform.txt; $(call expect_exit,1,the replayed message was accepted twice); sed -n '/^failures:/,$$p' build/demo/conform.txt
	@echo
	@echo "== 8. a Spark audit: a two-file simulated log with violations planted (manifest.json says which) is audited"
	@echo "      by a local Spark started by the command; the operator's report and charts go to build/demo/audit"
	@rm -rf build/demo/big build/demo/audit
	$(BIN)/rmkit simulate --messages 3000 --seed 1 --lifetime 60 --files 2 --violations 0.004 -o build/demo/big/
	@$(BIN)/rmkit audit --master 'local[2]' --lifetime 60 --out build/demo/audit build/demo/big/part-00000.jsonl build/demo/big/part-00001.jsonl; $(call expect_exit,2,the planted violations were found; the planted unreadable line makes the run no verdict (exit 2))
	@ls build/demo/audit
	@echo
	@echo "== 9. RMB v1: the npm ts-rmb-redis-client through two reference daemons (each on its own redis-server, recorders"
	@echo "      between them) to the npm MessageBusServer and a Python handler; then a twin that is down, an expired backlog"
	@echo "      and a tampered signature. Logs in build/demo/rmb"
	@rm -rf build/demo/rmb
	$(BIN)/python -m rmkit.reference_impl.rmb.demo --npm interop/rmb-npm --dir build/demo/rmb
	@echo
	@echo "== 10. Corda P2P on real brokers (ActiveMQ Classic) and databases (SQLite): two nodes exchange messages, then"
	@echo "       the crash-point harness kills nodes, bridges and brokers (kill -9) and audits; a node that keeps its"
	@echo "       deduplication in memory only is caught"
	$(BIN)/rmkit corda up --flows 2 --messages 20
	$(BIN)/rmkit corda torture --seed 1 --cycles 6 --quiet
	@$(BIN)/rmkit corda torture --seed 1 --cycles 10 --variant memory_dedup --quiet; $(call expect_exit,1,the node that forgets its deduplication on a crash delivered a message twice)
	@echo
	@echo "== 11. your own node under the crash-point harness (the contract: spec/corda/node.md): a small node written from"
	@echo "       that document alone passes; its twin that keeps processed ids in memory only is caught"
	$(BIN)/rmkit corda torture --seed 7 --cycles 10 --quiet --node-cmd "$(BIN)/python -m rmkit.conformance.corda.examples.minimal_node"
	@mkdir -p build/demo; code=0; $(BIN)/rmkit corda torture --seed 29 --cycles 10 --quiet \
	  --node-cmd "$(BIN)/python -m rmkit.conformance.corda.examples.minimal_node --memory-dedup" > build/demo/corda-minimal-faulty.txt || code=$$?; \
	  grep -E '^(FAIL|  replay)' build/demo/corda-minimal-faulty.txt; \
	  if [ $$code -eq 1 ]; then echo "found (exit 1, as it must): effects committed twice after restarts; the report is build/demo/corda-minimal-faulty.txt"; \
	  else echo "expected the harness to catch the faulty node (exit 1), got exit $$code"; cat build/demo/corda-minimal-faulty.txt; exit 1; fi

# Two worker processes (TEST_WORKERS=1 for one), each given whole modules so that a module's
# redis-server, broker or Spark session starts once.
TEST_WORKERS ?= 2
test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-slow: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -m slow

# Build the wheel, install it into a fresh venv (not editable) and use it from outside the tree.
check-wheel: $(STAMP)
	rm -rf build/wheel build/wheel-venv
	$(BIN)/python -m pip wheel -q --no-deps -w build/wheel .
	$(PY) -m venv build/wheel-venv
	build/wheel-venv/bin/python -m pip install -q build/wheel/rmkit-*.whl
	cd build && ./wheel-venv/bin/rmkit --version
	cd build && ./wheel-venv/bin/python -c 'import rmkit.linescan as s; print("compiled line scanner:", s.COMPILED)'
	cd build && ./wheel-venv/bin/rmkit spec validate
	cd build && ./wheel-venv/bin/rmkit explain REMP-EXPIRY-001 > /dev/null
	cd build && ./wheel-venv/bin/python -c "import rmkit.reference_impl.remp as r; print('reference machines:', len(r.__all__), 'exports')"
	cd build && ./wheel-venv/bin/rmkit simulate --messages 200 --seed 3 -o wheel-sim.jsonl
	cd build && ./wheel-venv/bin/rmkit check wheel-sim.jsonl --format json --out wheel-report.json
	cd build && ./wheel-venv/bin/rmkit explain REMP-SIG-002 > /dev/null
	cd build && rm -rf wheel-keys && ./wheel-venv/bin/rmkit keys gen --validators 7 --seed 1 --out wheel-keys
	cd build && ./wheel-venv/bin/rmkit simulate --messages 100 --seed 4 --keys wheel-keys -o wheel-signed.jsonl
	cd build && ./wheel-venv/bin/rmkit check wheel-signed.jsonl --validators wheel-keys/validators.yaml > /dev/null
	cd build && head -3 wheel-signed.jsonl | ./wheel-venv/bin/rmkit receipt verify --validators wheel-keys/validators.yaml - > /dev/null
	cd build && ./wheel-venv/bin/rmkit tlc --list > /dev/null
	cd build && ./wheel-venv/bin/rmkit tlc remp --config handover
	@echo "check-wheel: the installed wheel works from outside the source tree"

# Each bench's output is shown as it comes and kept in $(BENCH_LOG) (its exit status too: a failed bench stops
# the run); after the last, bench/record_results.py appends one dated row of the ratios they
# printed to bench/RESULTS.md.
BENCH_LOG := bench/out/last-run.txt
bench_run = { PYTHONUNBUFFERED=1 $(BIN)/python $(1) 2>&1; echo $$? > bench/out/.status; } | tee -a $(BENCH_LOG); exit $$(cat bench/out/.status)

bench: $(STAMP)
	@mkdir -p bench/out && : > $(BENCH_LOG)
	$(call bench_run,bench/bench_check.py)
	$(call bench_run,bench/bench_corda_check.py)
	$(call bench_run,bench/bench_floor.py)
	$(call bench_run,bench/bench_tl.py)
	$(call bench_run,bench/bench_sign.py)
	$(call bench_run,bench/bench_tla.py)
	$(call bench_run,bench/bench_conform.py)
	$(call bench_run,bench/bench_rmb_conform.py --no-faulty)
	$(call bench_run,bench/bench_rmb_check.py)
	$(call bench_run,bench/bench_simulate.py)
	$(call bench_run,bench/bench_audit.py)
	$(BIN)/python bench/record_results.py $(BENCH_LOG)

docs: $(STAMP)
	$(BIN)/rmkit spec docs --protocol remp -o spec/remp/README.md
	$(BIN)/rmkit spec docs --protocol corda -o spec/corda/README.md
	$(BIN)/python -m rmkit.conformance.corda.recordschema > spec/schema/corda-record-line.schema.json.new && mv spec/schema/corda-record-line.schema.json.new spec/schema/corda-record-line.schema.json
	$(BIN)/rmkit spec docs --protocol rmb -o spec/rmb/README.md
	$(BIN)/python docs/rule_index.py

fixtures: $(STAMP)
	$(BIN)/python fixtures/remp/make_rule_fixtures.py
	$(BIN)/python fixtures/remp/tl/make_vectors.py
	$(BIN)/python fixtures/rmb/make_rule_fixtures.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
	rm -f rmkit/*.c rmkit/*.so conformance/rmb/*.c conformance/rmb/*.so conformance/corda/*.c conformance/corda/*.so conformance/remp/*.c conformance/remp/*.so  # what setup.py's extensions build in place

# The TLA+ model's tables (kinds, transitions, thresholds) are generated from spec/remp.
tla-tables: $(STAMP)
	$(BIN)/python -m rmkit.conformance.remp.tla_tables tla/remp/REMPTables.tla
	@# written beside the module and moved over it only when the generator succeeded
	$(BIN)/python -m rmkit.conformance.corda.tla_tables > tla/corda/CordaProfiles.tla.new && mv tla/corda/CordaProfiles.tla.new tla/corda/CordaProfiles.tla
	$(BIN)/python -m rmkit.conformance.rmb.tla_tables > tla/rmb/RMBProfiles.tla.new && mv tla/rmb/RMBProfiles.tla.new tla/rmb/RMBProfiles.tla
