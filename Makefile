# `make test` and `make run` each do their whole set-up from a fresh clone. Every install takes
# its exact versions from a constraints file (constraints.txt; .venv-rllib: constraints-rllib.txt):
# the versions the lab is tested with, among them torch's CPU build (unconstrained, pip would pick
# a CUDA build of several GB). `make constraints` renews them from the environments make built.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# --no-compile: a module is byte-compiled when first imported, not every file of every package
# at install time (most are never imported; this halves the install of `make run`).
INSTALL := $(PY) -m pip install -q --no-compile -c constraints.txt
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed
RLLIB_STAMP := .venv-rllib/.installed
CHROMIUM := /usr/bin/chromium
SOURCES := odin_env agents odin_lab benchmarks research examples tests evaluate.py train.py play.py

.PHONY: test warm run bench lint clean web screenshot net_4p constraints docs

$(PY):
	$(PYTHON) -m venv $(VENV)

# `make run`: the core and the evaluation extra, no more.
$(RUN_STAMP): pyproject.toml constraints.txt | $(PY)
	$(INSTALL) -e ".[eval]"
	touch $@

# Everything the tests use, byte-compiled once: where PYTHONDONTWRITEBYTECODE is set (this
# workplace sets it) no .pyc is written at import, so every process the tests start (hundreds)
# compiled every module it imports from its source: 8.7 s for a two-game `evaluate.py
# tournament`, 2.9 s compiled. About a minute here, once. A few files of the packages' own tests
# are for newer Pythons and do not compile (torch's py312_intrinsics.py): that is no error here.
$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(INSTALL) -e ".[all,dev]"
	$(PY) -m compileall -q -j 0 $(VENV)/lib > /dev/null 2>&1 || true
	touch $@

# RLlib pins another gymnasium than the lab's: its example runs in an environment of its own.
.venv-rllib: $(RLLIB_STAMP)
$(RLLIB_STAMP): pyproject.toml constraints-rllib.txt
	$(PYTHON) -m venv .venv-rllib
	.venv-rllib/bin/python -m pip install -q --upgrade pip
	.venv-rllib/bin/python -m pip install -q --no-compile -c constraints-rllib.txt -e ".[rllib]"
	touch $@

# After upgrading a package in .venv or .venv-rllib (and the tests pass): write down its versions.
constraints:
	(echo "# The exact versions the lab is tested with (written by make constraints; see Makefile)"; \
	 $(PY) -m pip freeze --exclude-editable | sed 's/+cpu$$//') > constraints.txt
	(echo "# .venv-rllib's exact versions (RLlib pins its own gymnasium; see Makefile)"; \
	 .venv-rllib/bin/python -m pip freeze --exclude-editable | sed 's/+cpu$$//') > constraints-rllib.txt

# The web app's browser test drives Debian's Chromium (Playwright downloads no browser of its
# own; the machine may have no network but the package mirrors). Skipped once it is installed.
$(CHROMIUM):
	export DEBIAN_FRONTEND=noninteractive; SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	$$SUDO apt-get install -y -q chromium || ($$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium)

# The set-up's parts run side by side (-j): RLlib's environment and Chromium install while the
# lab's environment installs, then numba's cache fills (tests/conftest.py; the tests' first
# process would do it otherwise) and our modules are byte-compiled.
test:
	$(MAKE) -j 3 $(RLLIB_STAMP) $(CHROMIUM) warm
	$(PY) -m pytest -n 2 --dist loadgroup -q

warm: $(STAMP)
	$(PY) -m compileall -q -j 0 $(SOURCES) > /dev/null  # ours too (see $(STAMP))
	$(PY) tests/conftest.py

# The rules engine's speed; docs/benchmarks.md has the other speed benchmarks' commands.
bench: $(STAMP)
	$(PY) benchmarks/env_throughput.py

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .venv-rllib .pytest_cache .hypothesis

web: $(STAMP)
	$(PY) -m odin_lab.webapp $(ARGS)

# Renew the README's picture of the web app (the browser test takes it; tests never write docs/).
screenshot: $(STAMP) $(CHROMIUM)
	ODIN_SCREENSHOT=docs/webapp.png $(PY) -m pytest -q tests/test_webapp_browser.py

run: $(RUN_STAMP)
	$(PY) evaluate.py showcase --out results/showcase

# The docs site (mkdocs.yml, docs/; docs/hooks.py generates the figures' tables from the JSON
# of benchmarks/results/ and research/results/, the models page from agents/models/*.json) into
# site/, strict: a broken link or a page left out of the nav fails. `$(VENV)/bin/mkdocs serve`
# to edit live.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): pyproject.toml constraints.txt | $(PY)
	$(INSTALL) -e ".[docs]"
	touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The bundled network-only model, agents/models/net_4p.* (docs/models.md, net_4p): imitation
# of planner, then PPO against three planner; the model is the run's runs/net_ppo/soup.safetensors,
# the average of its last ten checkpoints. About 3 hours on one core.
net_4p: $(STAMP)
	$(PY) train.py --algo ppo --name imit_big --imitate planner --imitate-games 10000 --imitate-epochs 6 --net-pi 512 256 --net-vf 512 256 --total-steps 0 --eval-every 0 --seed 5
	$(PY) train.py --algo ppo --name net_ppo --init runs/imit_big/imitation.safetensors --net-pi 512 256 --net-vf 512 256 --opponents planner --learning-rate 1e-4 --ent-coef 0.0 --n-steps 2048 --n-envs 4 --batch-size 1024 --total-steps 30000000 --eval-every 2000000 --eval-deals 100 --eval-opponents planner --checkpoint-every 1000000 --soup 10 --seed 7
