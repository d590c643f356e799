# The course's commands. `make book` and `make test` are the two a reader needs;
# both set up .venv first (quickly, when it is already up to date).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
UV_VERSION := $(shell sed -n 's/^uv==//p' requirements.lock)
BUILD  := _build
# The guard runs a command as a "subreaper": anything it leaves running is reported, killed, and
# turns the run red, so neither target can leave a server or kernel behind.
GUARD  := $(BIN)/python -m iolab guard --

.PHONY: env book book-clean site check-site pdf test unit notebooks honest lab clean lock reference quick-reference homework grade gradescope base-image image test-image

env: $(STAMP)

# The environment is installed compiled to bytecode (uv does not compile unless asked), and so is the lab kit:
# where PYTHONDONTWRITEBYTECODE is set (as on the machine CI runs on), Python writes no cache of its own, and every
# process would compile what it imports from source again (the kit's plotting imports: 7.1 s, compiled 2.0 s).

$(STAMP): requirements.lock pyproject.toml
	@$(PYTHON) .ci/check_python.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --editable .
	$(BIN)/python -m compileall -q -j 0 src/iolab
	@touch $@
	@echo "environment ready: $(VENV) (activate with: source $(BIN)/activate)"

# Executes the notebooks (full scale unless IOLAB_SCALE says otherwise) and renders the HTML. Executed
# notebooks are cached under a key of the kit, data, lock, scale and student id: a rebuild runs only
# the notebooks that changed (all of them when the key did); `make book-clean` forgets everything.
# EDITION=student renders the edition a class is sent to (book/_ext/editions.py) into $(BUILD)/student/html:
# the readers' book is built first (its executed notebooks are what the student pages show).
EDITION ?= readers
ifeq ($(filter $(EDITION),readers student),)
$(error EDITION=$(EDITION): the book has two editions, readers (the default) and student)
endif

book: env
	IOLAB_EDITION=readers $(GUARD) $(BIN)/jupyter-book build --warningiserror --keep-going --path-output . .
	@echo "book rendered: file://$(CURDIR)/$(BUILD)/html/index.html"
ifeq ($(EDITION),student)
	IOLAB_EDITION=student $(if $(HUB),IOLAB_HUB=$(HUB)) $(GUARD) $(BIN)/jupyter-book build --warningiserror --keep-going --path-output $(BUILD)/student .
	rm -rf $(BUILD)/student/html && mv $(BUILD)/student/_build/html $(BUILD)/student/html
	@echo "student edition rendered: file://$(CURDIR)/$(BUILD)/student/html/index.html"
endif

# The published book: the readers' edition at full scale (SITE_SCALE=quick for a trial), as static files
# in $(BUILD)/site and $(BUILD)/site.tar.gz for GitHub Pages or any web server. Every page's banner names
# the machine it was measured on; the repository and issues buttons lead to REPOSITORY (by default the
# origin remote, if it is on the web; without one they are left out). HUB=https://hub.example.edu adds a
# launch button to every notebook page: the readers' edition pulls the repository there (nbgitpuller), the
# student edition (make book EDITION=student HUB=...) opens the student's own copy in their homework folder.
# When REPOSITORY is on GitHub, every notebook page of the readers' edition has a Binder button too
# (repo2docker builds binder/): BINDER names the BinderHub (mybinder.org), BINDER=none leaves it out.
SITE_SCALE ?= full
REPOSITORY ?= $(shell git remote get-url origin 2>/dev/null | sed -n -e 's|^git@github.com:|https://github.com/|' -e 's|\.git$$||' -e '\|^https://|p')
BINDER ?= https://mybinder.org
BINDER_BUTTON = $(if $(filter https://github.com/%,$(REPOSITORY)),$(filter-out none,$(BINDER)))

site: env
	@test -n "$(REPOSITORY)" || echo "note: no REPOSITORY= and no https origin remote: the site has no repository or issues button"
	@test -n "$(BINDER_BUTTON)" || echo "note: no Binder button (REPOSITORY is not a https://github.com/ address, or BINDER=none)"
	IOLAB_SCALE=$(SITE_SCALE) IOLAB_REPOSITORY=$(REPOSITORY) IOLAB_HUB=$(HUB) IOLAB_BINDER=$(BINDER_BUTTON) $(MAKE) --no-print-directory book EDITION=readers
	rm -rf $(BUILD)/site && cp -r $(BUILD)/html $(BUILD)/site && touch $(BUILD)/site/.nojekyll
	tar -C $(BUILD) -czf $(BUILD)/site.tar.gz site
	@echo "site: $(BUILD)/site and $(BUILD)/site.tar.gz ($$(du -sh $(BUILD)/site | cut -f1)); try it: python3 -m http.server -b 127.0.0.1 -d $(BUILD)/site"

# Links, banners and buttons of the built site, and screenshots of two pages (headless Chromium, if installed).
check-site: env
	$(BIN)/python .ci/check_site.py $(BUILD)/site $(if $(REPOSITORY),--repository $(REPOSITORY)) $(if $(HUB),--hub $(HUB)) \
	  $(if $(BINDER_BUTTON),--binder $(BINDER_BUTTON))

# The book as a PDF through LaTeX (apt install texlive-latex-extra texlive-xetex latexmk fonts-freefont-otf), from
# the same executed notebooks as `make book` at this scale.
pdf: env
	IOLAB_EDITION=readers $(GUARD) $(BIN)/jupyter-book build --builder pdflatex --keep-going --path-output . .
	@echo "PDF: $(BUILD)/latex/book.pdf"

book-clean:
	rm -rf $(BUILD)/.jupyter_cache $(BUILD)/jupyter_execute $(BUILD)/.doctrees $(BUILD)/html $(BUILD)/student

# actionlint checks the GitHub Actions workflow (tests/test_workflow.py). It is built from the Go module
# proxy into .venv when Go is installed (the image has it built in); without Go, or without the proxy,
# that test skips with a note.
# 1.7.7 builds with Debian bookworm's Go 1.19, the image's (1.7.12 needs Go 1.25).
ACTIONLINT_VERSION := 1.7.7
ACTIONLINT := $(BIN)/actionlint

$(ACTIONLINT):
	@if command -v go >/dev/null; then echo "building actionlint $(ACTIONLINT_VERSION) with Go"; \
	  GOBIN=$(abspath $(BIN)) go install github.com/rhysd/actionlint/cmd/actionlint@v$(ACTIONLINT_VERSION) \
	  || echo "note: could not build actionlint (is the Go module proxy reachable?): tests/test_workflow.py skips"; \
	else echo "note: no Go here: the GitHub Actions workflow is not checked (tests/test_workflow.py skips)"; fi

# Tests marked solo measure CPU time or timing: they run after the others, one at a time. mypy first
# checks the grader (iolab.homework) strictly: its processes pass one typed contract (pyproject's [tool.mypy]).
UNIT_SHARED := IOLAB_SCALE=quick $(GUARD) $(BIN)/pytest -n 2 --durations=10 -m "not solo and not honest" tests
UNIT_SOLO := IOLAB_SCALE=quick $(GUARD) $(BIN)/pytest --durations=10 -m "solo and not honest" tests
unit: env $(ACTIONLINT)
	$(BIN)/mypy
	$(UNIT_SHARED)
	$(UNIT_SOLO)

# Honest work scores full every time: every graded notebook's solutions, handed in IOLAB_HONEST_ROUNDS
# times (2) by as many students, graded at --jobs 2 beside a CPU-burning process; one lost point fails.
# The student editions, handed in blank in the same batch, score 0 (tests/homework/test_homework.py;
# 10 to 16 minutes on 2 cores alone).
HONEST := IOLAB_SCALE=quick $(GUARD) $(BIN)/pytest -p no:cacheprovider -m honest tests/homework
honest: env
	$(HONEST)

# The unit tests that share the machine and the honest stage run side by side: the unit stage's two
# workers are the busy machine the honest gradings need, so the honest test's CPU burner waits until
# that stage has ended (IOLAB_HONEST_BESIDE names its process) instead of taking a core from the start.
# The honest stage's output is kept in $(HONEST_LOG) and printed after the unit stage's. It hands in one
# round here (`make honest` two): the two stages keep both cores busy, so they take the sum of their times,
# and a second round cost about 7 of make test's minutes on 2 cores (the two stages: 22:13 with it, 15:15 without;
# IOLAB_HONEST_ROUNDS=2 make test restores it).
# This rule comes after ACTIONLINT's definition: make expands a rule's prerequisites where it reads the rule.
HONEST_LOG := $(BUILD)/honest.log
IOLAB_HONEST_ROUNDS ?= 1
test: env $(ACTIONLINT)
	$(BIN)/mypy
	@mkdir -p $(BUILD)
	$(UNIT_SHARED) & unit=$$!; \
	  IOLAB_HONEST_BESIDE=$$unit IOLAB_HONEST_ROUNDS=$(IOLAB_HONEST_ROUNDS) $(HONEST) > $(HONEST_LOG) 2>&1; honest=$$?; \
	  wait $$unit; shared=$$?; echo "== the honest stage, beside it ($(HONEST_LOG)):"; cat $(HONEST_LOG); \
	  test $$shared = 0 && test $$honest = 0
	$(UNIT_SOLO)
	$(MAKE) --no-print-directory notebooks

# Notebooks that measure CPU scaling or throughput, or fill a per-user kernel limit (02's pipes), need
# the machine to themselves: their metadata says "iolab": {"solo": true}, and they run one at a time,
# first. `python -m iolab homework solo` lists them by the grader's own rule (iolab.homework.batch.solo).
# It is asked once, when the list is first needed (the `eval` keeps the answer): by then `env` has made .venv.
# The rest run two at a time; nbval in parallel needs --dist loadfile (plain -n 2 would split one
# notebook's cells across workers).
SOLO_NOTEBOOKS = $(eval SOLO_NOTEBOOKS := $(shell $(BIN)/python -m iolab homework solo $(sort $(wildcard notebooks/*.ipynb))))$(SOLO_NOTEBOOKS)
SHARED_NOTEBOOKS = $(filter-out $(SOLO_NOTEBOOKS),$(wildcard notebooks/*.ipynb))
NBVAL := IOLAB_SCALE=quick $(GUARD) $(BIN)/pytest -p no:cacheprovider --nbval-lax --nbval-current-env
# Chapter 13 also runs as on a machine where io_uring is switched off (its cells then say why and show
# the reference run), so that both of its paths are tested on every run; that run comes first, so that
# the claims the stage leaves are the ones measured with io_uring.
WITHOUT_IO_URING := notebooks/13-completion.ipynb
# Chapter 2 also runs as on macOS (IOLAB_FAKE_PLATFORM=darwin: no /proc, epoll, pipe sizes or page-cache
# eviction, iolab.kit.platforms), so that its Linux-only cells are seen to skip with their note; first too.
# The two run side by side: both mostly skip what they would measure, and their claims are overwritten by
# the runs after them, so sharing the cores costs them nothing that is checked.
AS_ON_MACOS := notebooks/02-blocking.ipynb
# Each notebook saves its claims' verdicts (data/measured/NN-claims.csv, iolab.kit.claims). The last run's
# are set aside first; a claim this run decided the other way (higher then lower) from that run, or from
# the quick run recorded on the reference machine (data/reference/quick), at the same scale on the same
# kind of machine (processor and cores), fails the stage (`python -m iolab claims`). So a fresh clone on
# CI's machine is compared too; a reader's other machine is compared only with its own last run.
# `make quick-reference` records this run's verdicts as that quick run (after a quiet `make notebooks`).
CLAIMS_EARLIER := data/measured/earlier
CLAIMS_QUICK := data/reference/quick

notebooks: env
	rm -rf $(CLAIMS_EARLIER) && mkdir -p $(CLAIMS_EARLIER)
	for f in data/measured/*-claims.csv data/measured/*-claims.json; do if [ -e "$$f" ]; then mv "$$f" $(CLAIMS_EARLIER)/; fi; done
	IOLAB_NO_IO_URING=1 $(NBVAL) $(WITHOUT_IO_URING) & other=$$!; \
	  IOLAB_FAKE_PLATFORM=darwin $(NBVAL) $(AS_ON_MACOS); mine=$$?; wait $$other && test $$mine = 0
	$(NBVAL) $(SOLO_NOTEBOOKS)
	$(if $(SHARED_NOTEBOOKS),$(NBVAL) -n 2 --dist loadfile $(SHARED_NOTEBOOKS))
	$(BIN)/python -m iolab claims data/measured --earlier $(CLAIMS_EARLIER) --earlier $(CLAIMS_QUICK)

quick-reference:
	cp data/measured/*-claims.csv data/measured/*-claims.json $(CLAIMS_QUICK)/

# LAB=folder opens another folder of notebooks, such as a student edition (`make homework`);
# JUPYTER_ARGS passes options on (the container image's: --ip=0.0.0.0 --no-browser). Kernels talk
# to JupyterLab over Unix sockets (ipc), not TCP on the loopback, which every user of the machine can reach
# (and which made each kernel warn that it was running "over TCP without encryption").
LAB ?= notebooks

lab: env
	$(BIN)/jupyter lab --notebook-dir=$(LAB) --KernelManager.transport=ipc $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) $(JUPYTER_ARGS)

# Homework (README, "Homework"): the student edition of every notebook, and the autograder (a notebook
# already in $(HOMEWORK) with answers in it is kept, and the target fails saying so; FORCE=1 replaces it). The
# grader runs each submission at quick scale with IOLAB_STUDENT set to its folder's name; the grades
# go next to the submissions (not into $(BUILD), which `make clean` removes).
HOMEWORK ?= $(BUILD)/homework
GRADES   ?= $(SUBMISSIONS)/grades.csv

homework: env
	$(GUARD) $(BIN)/python -m iolab homework student $(HOMEWORK) $(if $(FORCE),--force)

# JOBS=N grades N submissions at once; RERUNS=N grades a notebook up to N times more (1 unless given) while it
# loses points on a hidden check alone, every answer accepted, and counts its best grading;
# NO_SANDBOX=1 grades without bubblewrap (trusted code only);
# RELEASE_HIDDEN=1 quotes hidden checks' messages in the feedback (they state the answers);
# CHECKS=dir adds the instructor's own checks and course secret (iolab.homework.private);
# CANVAS_GRADEBOOK=file titles gradebook.csv's columns as that Canvas export's assignments;
# MOODLE_WORKSHEET=file writes Moodle's grading worksheet back filled, beside $(GRADES), to upload.
# Late work: DUE=2026-11-20T23:59 LATE_POLICY=10-per-day LATE_CAP=50 EXTENSIONS=file (book/instructors.md).
# STUDENTS=ada,bob regrades only them, merged into $(GRADES); REASON="..." goes into history.csv.
# Written answers: each is exported beside $(GRADES) for a TA (NN-name-LABEL-answers.html, and -scores.csv to fill);
# SCORES_ONLY=1 merges the filled scores into the grades, gradebook and feedback without grading again.
grade: env
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=dir (one folder per student id, holding their notebooks)"; exit 2; }
	$(GUARD) $(BIN)/python -m iolab homework grade $(SUBMISSIONS) --out $(GRADES) $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
	  $(if $(JOBS),--jobs $(JOBS)) $(if $(RERUNS),--reruns $(RERUNS)) $(if $(NO_SANDBOX),--no-sandbox) $(if $(RELEASE_HIDDEN),--release-hidden) \
	  $(if $(NAMES),--names $(NAMES)) $(if $(CHECKS),--checks $(CHECKS)) \
	  $(if $(CANVAS_GRADEBOOK),--canvas-gradebook $(CANVAS_GRADEBOOK)) $(if $(MOODLE_WORKSHEET),--moodle-worksheet $(MOODLE_WORKSHEET)) \
	  $(if $(DUE),--due $(DUE)) \
	  $(if $(LATE_POLICY),--late-policy $(LATE_POLICY)) $(if $(LATE_CAP),--late-cap $(LATE_CAP)) \
	  $(if $(EXTENSIONS),--extensions $(EXTENSIONS)) $(if $(STUDENTS),--students $(STUDENTS)) \
	  $(if $(REASON),--reason "$(REASON)") $(if $(SCORES_ONLY),--scores-only)

# Gradescope: an autograder.zip for one notebook (NOTEBOOK=02-blocking) or for all of them; ROSTER=roster.csv
# gives each submitter their course id, VISIBILITY=after_published|after_due_date|visible when hidden checks show.
gradescope: env
	$(BIN)/python -m iolab homework gradescope $(NOTEBOOK) --out $(BUILD)/gradescope $(if $(CHECKS),--checks $(CHECKS)) \
	  $(if $(ROSTER),--roster $(ROSTER)) $(if $(VISIBILITY),--visibility $(VISIBILITY))

# Re-resolves the lock from pyproject.toml (needs the registry); environment.yml and the image's JupyterHub
# lock (container/hub.lock, constrained by the course's lock) follow it.
# The lock is resolved for x86-64 Linux; the io_uring binding has wheels for nothing else, so its pin keeps
# pyproject's marker (uv writes markers only in --universal mode), and other machines skip it.
lock: env
	$(BIN)/uv pip compile --quiet pyproject.toml --extra course --python-version 3.11 -o requirements.lock
	sed -i -E 's/^(liburing==[^ ;]+)$$/\1 ; sys_platform == "linux" and platform_machine == "x86_64"/' requirements.lock
	$(BIN)/python .ci/envfile.py requirements.lock > environment.yml
	$(BIN)/uv pip compile --quiet container/hub.in -c requirements.lock --python-version 3.11 -o container/hub.lock

# A full-scale run of every notebook, kept as the reference overlaid on readers' plots.
reference: env
	rm -f data/measured/*.csv data/measured/*.json
	IOLAB_SCALE=full $(GUARD) $(BIN)/pytest -p no:cacheprovider --nbval-lax --nbval-current-env notebooks
	cp data/measured/*.csv data/measured/*.json data/reference/
	# This run's own verdicts (NN-claims) are the reference's; the ones it drew from the old reference data are not.
	rm -f data/reference/*-claims-on-reference.csv data/reference/*-claims-on-reference.json

clean:
	rm -rf $(BUILD) data/measured/*.csv data/measured/*.json

# The course as a container image (Containerfile; README, "Which way should I run it?"). podman or docker,
# whichever is here (ENGINE=... to choose); container/engine.sh says which and with what options.
IMAGE ?= localhost/iolab-course:latest
BASE  ?= docker.io/library/debian:bookworm-slim
ENGINE_SH := container/engine.sh

# A Debian base made from Debian's packages, for a host that reaches no image registry:
# make base-image && make image BASE=localhost/debian-local:bookworm
base-image:
	@command -v debootstrap >/dev/null || { echo "base-image needs debootstrap (apt install debootstrap) and root"; exit 2; }
	rm -rf $(BUILD)/debian-root && mkdir -p $(BUILD) && debootstrap --variant=minbase bookworm $(abspath $(BUILD))/debian-root http://deb.debian.org/debian
	tar -C $(BUILD)/debian-root -c . | $$($(ENGINE_SH) engine) import - localhost/debian-local:bookworm
	rm -rf $(BUILD)/debian-root

image:
	$$($(ENGINE_SH) engine) build $$($(ENGINE_SH) build-options) --build-arg BASE=$(BASE) -t $(IMAGE) -f Containerfile .
	@echo "image built: $(IMAGE) ($$($(ENGINE_SH) engine 2>/dev/null))"

# Inside the image, as its non-root user: two notebooks under nbval, and notebook 12 without the
# capabilities its lab needs (its lab cells skip, its exercise checks what it can); that JupyterHub's
# single-user server is there; then the lab itself as root with the capabilities (`networks rtt`, which
# fails when no lab can be made). Slow (minutes); not part of `make test`.
IMAGE_RUN = $$($(ENGINE_SH) engine) run --rm $$($(ENGINE_SH) run-options) $(IMAGE)
NBVAL_IN_IMAGE = env IOLAB_SCALE=quick pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env

test-image:
	$(IMAGE_RUN) $(NBVAL_IN_IMAGE) notebooks/03-sockets.ipynb notebooks/08-locks.ipynb notebooks/12-networks.ipynb
	$(IMAGE_RUN) jupyterhub-singleuser --version
	$$($(ENGINE_SH) engine) run --rm $$($(ENGINE_SH) run-options) --user 0 --cap-add NET_ADMIN,SYS_ADMIN --device /dev/net/tun $(IMAGE) \
	  python -m iolab networks rtt --rtt-ms 10 50 --samples 5

