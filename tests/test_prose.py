"""No measured number is typed into the book's prose: every figure with a unit is glued, cited or allowed.

The book's rule (shared/STYLE.md): numbers measured in the book are glued from the notebook that
measured them, so that prose and plots cannot disagree. This test scans ``book/*.md`` and the
markdown cells of ``notebooks/*.ipynb`` (each cell on its own; code cells are code) for a number, or a
range of numbers, followed by a unit (``20 ms``, ``3.5x``, ``900 req/s``, ``16 KiB``, ``50-200 µs``...)
and fails on any that is not

- inside a role, a literal or a fenced block (``{glue:text}`...```, `` `...` ``, code, glue figures);
- a **published figure with its source**. The convention: the sentence, list item or table row that
  states the figure names where it comes from, as "source 00N", the source's file name
  (``001_9d3a491f4ee74cbd.txt``), a ``{cite}`` role, or "(published ...)"; a table whose header
  names a column "published" cites every row below it;
- in :data:`ALLOWED`: a number the book chooses, documents or derives rather than measures (a
  configured parameter such as "a 20 ms upstream", a constant of the kernel or of a runtime, a
  computation from such numbers), each with its reason. An entry names a chapter page, and then also
  covers the notebooks of that chapter (same two-digit prefix: ``11-measuring.md`` covers
  ``11-concurrency.ipynb``), or a notebook, and then covers that notebook only.

A second test keeps figures that need an optional tool (Go, Node.js, wrk, ab, nginx) out of numeric
formats: the notebooks glue them with ``plots.glue_optional`` as text, which reads "not measured here
(install X)" where the tool is missing, so the prose must paste them as text (``:s``), never as a number.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NOTEBOOKS = ROOT / "notebooks"

UNIT = r"(?:req/s|requests/s|requests per second|rps|ms|µs|us|ns|s|MiB|MB|GiB|GB|KiB|KB|x|×|%)"
NUMBER = r"\d[\d,]*(?:\.\d+)?"
# A number (1,000 or 0.25 or 3) or a range of two (50-200, 50–200), not part of a word or a name (p99,
# vm2, 000_...), then its unit. A range is one figure, reported with a hyphen whichever dash it was typed with.
FIGURE = re.compile(rf"(?<![\w.,/-])({NUMBER}(?:[-\u2013]{NUMBER})?)[ \u00a0]?({UNIT})(?![\w/])")
CITED = re.compile(r"source 00\d|00\d_[0-9a-f]{16}\.txt|\{cite[:\w]*\}|\(published", re.IGNORECASE)
FENCE = re.compile(r"^(```+|~~~+)")
ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
LITERAL = re.compile(r"``[^`]+``|`[^`]+`")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\"'])")
TABLE_RULE = re.compile(r"^\|[\s|:-]+\|$")
LIST_ITEM = re.compile(r"^([-*+]|\d+\.)\s")

CONFIGURED = "a parameter the notebook sets, not a measurement"
ALLOWED: list[tuple[str, str, str]] = [
    # (page or notebook, the figure as the scanner reports it, why it is no measurement of this book)
    ("instructors.md", "2 GiB", "the grader's default caps on memory and on a submission's folder (homework.caps), chosen"),
    ("instructors.md", "1 GiB", "the grader's default cap on one file (homework.caps), chosen"),
    ("instructors.md", "512 MiB", "the grader's default size of the sandbox's tmpfs (homework.caps), chosen"),
    ("instructors.md", "1 MiB", "the grader's default output kept per cell (homework.caps), and the pipe ex-02-bigger-pipe asks for: chosen"),
    ("instructors.md", "80 s", "the grader's allowance to start and stop a submission's processes, chosen"),
    ("instructors.md", "1 GB", "the memory mybinder.org guarantees a session (its FAQ, linked in the sentence)"),
    ("instructors.md", "2 GB", "the memory mybinder.org allows a session at most (its FAQ, linked in the sentence)"),
    ("01-processes.md", "4 KiB", "the x86-64 base page size, a constant of the hardware"),
    ("01-processes.md", "2 MiB", "the x86-64 huge page size (transparent huge pages), a constant of the hardware"),
    ("04-prefork.md", "100 ms", "the notebook's threshold for a slow tiny request (balance.behind_a_busy_worker)"),
    ("06-asyncio-trio.md", "50 ms", CONFIGURED + ": when the failing job fails"),
    ("07-upstreams.md", "1,000 req/s", CONFIGURED + ": source 001's arrival rate"),
    ("07-upstreams.md", "2,000 req/s", CONFIGURED + ": the spike's arrival rate"),
    ("10-c10k.md", "10 ms", CONFIGURED + ": the CPU part of the two-step request"),
    ("10-c10k.md", "1 ms", CONFIGURED + ": the faster CPU part"),
    ("11-measuring.md", "1 ms", CONFIGURED + ": the route's CPU cost (/julia?ms=1)"),
    ("11-measuring.md", "2 ×", CONFIGURED + ": pre-fork children from 1 to 2 x cores"),
    ("12-networks.md", "10 ms", CONFIGURED + ": the link's round trip in the loss experiment"),
    ("12-networks.md", "1%", CONFIGURED + ": the link's loss rate in the loss experiment"),
    ("12-networks.md", "1.5 s", CONFIGURED + ": the length of the keep-alive run (duration_s=1.5)"),
    ("12-networks.md", "100 ms", CONFIGURED + ": the slowloris and honest slow clients' time between bytes (byte_every_ms=100)"),
    ("01-processes.md", "2 ×", CONFIGURED + ": the Julia experiment runs 1 to 2 × cores processes"),
    ("02-blocking.md", "1 MiB", CONFIGURED + ": the size of each read() of the evicted file"),
    ("03-sockets.md", "60 s", "Linux's TIME_WAIT length, TCP_TIMEWAIT_LEN, fixed in the kernel"),
    ("03-sockets.md", "1 s", "Linux's initial SYN retransmission timeout, TCP_TIMEOUT_INIT (RFC 6298)"),
    ("03-sockets.md", "0.3 s", CONFIGURED + ": when the ACK-overflow server starts accepting (free_after_s)"),
    ("04-prefork.md", "2 x", CONFIGURED + ": 2 x cores children, and clients from 1 to 2 x cores"),
    ("04-prefork.md", "4 x", "source 000's published \"more than 4x\" claim, which the chapter tests"),
    ("04-prefork.md", "20 ms", CONFIGURED + ": the Julia route's CPU cost (/julia?ms=20)"),
    ("04-prefork.md", "50 ms", "an example wait, the one chapter 9's slow query configures (pg_sleep of 50 ms)"),
    ("05-event-loop.md", "8 MiB", "the usual `ulimit -s` (soft RLIMIT_STACK), which glibc uses as its default thread stack size"),
    ("05-event-loop.md", "1.5 GiB", CONFIGURED + ": the address space the thread-capacity child has to spare"),
    ("05-event-loop.md", "256 KiB", CONFIGURED + ": the small thread stack (--stack-kib 256)"),
    ("05-event-loop.md", "64 MiB", "glibc's documented address-space reservation per malloc arena on 64-bit (HEAP_MAX_SIZE)"),
    ("06-asyncio-trio.md", "0.1 s", CONFIGURED + ": the deadline of the second exercise"),
    ("06-asyncio-trio.md", "0.5 s", CONFIGURED + ": the stubborn jobs of the second exercise"),
    ("06-asyncio-trio.md", "4 ms", CONFIGURED + ": the consumer's time per item"),
    ("06-asyncio-trio.md", "150 ms", CONFIGURED + ": the upstream's answer time (/upstream?ms=150)"),
    ("06-asyncio-trio.md", "2 ms", CONFIGURED + ": the ticker's interval (looplag.INTERVAL_S)"),
    ("06-asyncio-trio.md", "20 ms", CONFIGURED + ": the CPU cost of each Julia-set job"),
    ("06-asyncio-trio.md", "5 ms", "CPython's default switch interval (sys.getswitchinterval())"),
    ("06-asyncio-trio.md", "100 ms", CONFIGURED + ": the wait of each fan-out job"),
    ("07-upstreams.md", "1,000 requests per second", CONFIGURED + ": source 001's arrival rate"),
    ("07-upstreams.md", "2,000 requests per second", CONFIGURED + ": the spike's arrival rate"),
    ("07-upstreams.md", "2,000 ×", "the law's arithmetic on the spike's configured rate"),
    ("07-upstreams.md", "3,000 req/s", CONFIGURED + ": the rate of the interpreter-lock exercise"),
    ("07-upstreams.md", "20 ms", CONFIGURED + ": the healthy upstreams' latency (source 001's 20ms*10)"),
    ("07-upstreams.md", "60 ms", CONFIGURED + ": the slow upstreams' latency"),
    ("07-upstreams.md", "0.06 s", "the slow upstreams' configured 60 ms, in the law's arithmetic"),
    ("07-upstreams.md", "30 s", CONFIGURED + ": the outage of source 001's 20ms*9,30s"),
    ("07-upstreams.md", "8 s", CONFIGURED + ": the outage at quick scale"),
    ("07-upstreams.md", "9 ×", "the law's arithmetic: nine healthy calls of ten"),
    ("07-upstreams.md", "3 s", "the law's mean call, computed from the configured latencies"),
    ("07-upstreams.md", "100 ms", CONFIGURED + ": the client timeout"),
    ("07-upstreams.md", "2 MiB", "Rust's documented default thread stack"),
    ("07-upstreams.md", "8 MiB", "glibc's default thread stack (ulimit -s) on most Linux systems"),
    ("08-locks.md", "5 ms", "CPython's default switch interval (sys.getswitchinterval())"),
    ("09-databases.md", "10 ms", CONFIGURED + ": the pool sweep's query, CPU part at full scale"),
    ("09-databases.md", "5 ms", CONFIGURED + ": the pool sweep's query, CPU part at quick scale"),
    ("09-databases.md", "90%", "the notebook's definition of the knee"),
    ("09-databases.md", "50 ms", CONFIGURED + ": the slow query's pg_sleep"),
    ("10-c10k.md", "64 KiB", CONFIGURED + ": the stack of each sleeper thread"),
    ("10-c10k.md", "16 KiB", "the block CPython allocates for a thread's frames, a constant of the interpreter"),
    ("10-c10k.md", "10 x", CONFIGURED + ": the CPU part goes from /julia?ms=10 to /julia?ms=1"),
    ("10-c10k.md", "1 MiB", "Ruby's documented default machine stack on 64-bit (RUBY_THREAD_MACHINE_STACK_SIZE)"),
    ("10-c10k.md", "8 MiB", "the usual `ulimit -s` (soft RLIMIT_STACK), which glibc uses as its default thread stack size"),
    ("11-measuring.md", "20 ms", CONFIGURED + ": the route's CPU cost (/julia?ms=20)"),
    ("12-networks.md", "50 ms", CONFIGURED + ": the link's round trip in the keep-alive and TLS experiments"),
    ("12-networks.md", "200 ms", "Linux's default minimum retransmission timeout (TCP_RTO_MIN), a kernel default"),
    ("05-event-loop.md", "50-150 ms", CONFIGURED + ": the wait before each word of the corpus (topics.event_loop.corpus.WAIT_MS)"),
    ("13-completion.md", "4 KiB", CONFIGURED + ": the block size of every read (files.BLOCK), also the page size O_DIRECT aligns to"),
    # The notebooks' markdown cells (their chapter page's entries cover them too).
    # 01-processes.ipynb
    ("01-processes.ipynb", "1 x", "arithmetic on the configured process counts: up to one per core, each job takes as long as alone"),
    ("01-processes.ipynb", "2 x", "arithmetic on the configured process counts: twice as many as cores, each gets half a core"),
    ("01-processes.ipynb", "256 MiB", CONFIGURED + ": the array the partial-write exercise's child inherits (fork_and_write(256, ...))"),
    ("01-processes.ipynb", "64 MiB", "arithmetic on the configured 256 MiB array: the quarter the child writes"),
    ("01-processes.ipynb", "1.5 x", "arithmetic on configured numbers: (cores + extra) / cores, one extra process on 2 cores"),
    ("01-processes.ipynb", "1.25 x", "arithmetic on configured numbers: (cores + extra) / cores, one extra process on 4 cores"),
    # 02-blocking.ipynb
    ("02-blocking.ipynb", "0.1 s", CONFIGURED + ": the interval at which watch.sample reads /proc"),
    ("02-blocking.ipynb", "0%", "the definition of a sleeping process's CPU use: the scheduler does not run it"),
    ("02-blocking.ipynb", "100%", "the definition of a running process's CPU use: a whole core"),
    ("02-blocking.ipynb", "64 KiB", "Linux's default pipe capacity (16 pages, PIPE_DEF_BUFFERS), a kernel constant"),
    ("02-blocking.ipynb", "4 KiB", "the x86-64 base page size, a constant of the hardware"),
    ("02-blocking.ipynb", "8 MiB", CONFIGURED + ": the data written through the pipe at quick scale"),
    ("02-blocking.ipynb", "32 MiB", CONFIGURED + ": the data written through the pipe at full scale"),
    ("02-blocking.ipynb", "1 ms", CONFIGURED + ": the polling waiter's sleep (time.sleep(0.001))"),
    ("02-blocking.ipynb", "10 ms", "the tick of the CPU times in /proc (USER_HZ = 100), a kernel constant"),
    # 03-sockets.ipynb
    ("03-sockets.ipynb", "2 s", "a SYN retry of Linux 6.5 and later, at 1, 2, 3 s (tcp_syn_linear_timeouts), a kernel constant"),
    ("03-sockets.ipynb", "3 s", "a SYN retry in both of Linux's schedules (1, 2, 3 s linear; 1, 3, 7 s doubled), a kernel constant"),
    ("03-sockets.ipynb", "200 ms", "Linux's longest delay of a held-back ACK (TCP_DELACK_MAX), a kernel constant"),
    # 04-prefork.ipynb
    ("04-prefork.ipynb", "1 x", "arithmetic: one asyncio process computes on one core, so its throughput stays one core's"),
    ("04-prefork.ipynb", "60 ms", CONFIGURED + ": the book's heavy_ms, the heavier Julia set of the exercise"),
    # 05-event-loop.ipynb
    ("05-event-loop.ipynb", "100 ms", "arithmetic on the configured 50-150 ms waits: their mean"),
    ("05-event-loop.ipynb", "25%", CONFIGURED + ": the tolerance of the prediction's check"),
    ("05-event-loop.ipynb", "10%", CONFIGURED + ": the noise band of the prediction's checks against the reader's runs"),
    ("05-event-loop.ipynb", "0.3 s", CONFIGURED + ": the longest of the book's three sleeps (0.3, 0.1, 0.2 s)"),
    ("05-event-loop.ipynb", "0.6 s", "arithmetic on the book's configured sleeps: their sum"),
    ("05-event-loop.ipynb", "2 MiB", CONFIGURED + ": the big stack the exercise compares against (2048 KiB)"),
    ("05-event-loop.ipynb", "128 KiB", CONFIGURED + ": the book's small_kib, the exercise's small stack"),
    # 06-asyncio-trio.ipynb
    ("06-asyncio-trio.ipynb", "10%", CONFIGURED + ": the noise band of the predictions' checks against the reader's runs"),
    ("06-asyncio-trio.ipynb", "0.08 s", CONFIGURED + ": the waits of the three gathered jobs (0.15, 0.01 and 0.08 s)"),
    ("06-asyncio-trio.ipynb", "240 ms", "arithmetic on the three configured waits: their sum"),
    ("06-asyncio-trio.ipynb", "250 ms", CONFIGURED + ": when the failing job's sibling c would answer"),
    ("06-asyncio-trio.ipynb", "300 ms", CONFIGURED + ": how long the caller lingers after the failure"),
    ("06-asyncio-trio.ipynb", "500 ms", CONFIGURED + ": the longest job of the deadline prediction"),
    ("06-asyncio-trio.ipynb", "1 s", CONFIGURED + ": the single job given to call_within"),
    ("06-asyncio-trio.ipynb", "3 ms", "arithmetic on the configured pace: the consumer's 4 ms per item less the producer's 1 ms"),
    ("06-asyncio-trio.ipynb", "4 x", "arithmetic: four items ahead, at the consumer's configured 4 ms each"),
    ("06-asyncio-trio.ipynb", "16 ms", "arithmetic: four items ahead, at the consumer's configured 4 ms each"),
    ("06-asyncio-trio.ipynb", "0.4 s", "arithmetic on the book's configured job_s and limit_s (0.5 s - 0.1 s)"),
    # 07-upstreams.ipynb
    ("07-upstreams.ipynb", "200 ms", CONFIGURED + ": the client timeout of the fault probes (timeout_s=0.2)"),
    ("07-upstreams.ipynb", "1 s", CONFIGURED + ": the latency from which an answer counts as failed, as in source 001's tool"),
    ("07-upstreams.ipynb", "11 s", CONFIGURED + ": when the sync run is stopped at quick scale (max_seconds)"),
    ("07-upstreams.ipynb", "65 s", CONFIGURED + ": when the sync run is stopped at full scale (max_seconds)"),
    ("07-upstreams.ipynb", "900 req/s", "arithmetic on the configured rate: the nine healthy tenths of 1,000 req/s"),
    ("07-upstreams.ipynb", "833 req/s", "the bandwidth law's arithmetic on configured numbers: 50 threads / 0.06 s"),
    ("07-upstreams.ipynb", "28 ms", "arithmetic on configured latencies: (9 × 20 ms + 100 ms) / 10"),
    ("07-upstreams.ipynb", "0.028 s", "arithmetic on configured latencies: the same 28 ms mean call, in seconds"),
    ("07-upstreams.ipynb", "50 ms", "arithmetic on configured numbers: 50 threads / 1,000 req/s"),
    ("07-upstreams.ipynb", "1,000 ×", "arithmetic on the configured rate of 1,000 req/s (rate × time)"),
    ("07-upstreams.ipynb", "10%", CONFIGURED + ": the margin the exercise adds to the law's thread count"),
    # 08-locks.ipynb
    ("08-locks.ipynb", "10 µs", CONFIGURED + ": the exercise's switch interval (sys.setswitchinterval(1e-5))"),
    ("08-locks.ipynb", "4 ×", CONFIGURED + ": the exercise's 4 threads of 50,003 increments"),
    # 09-databases.ipynb
    ("09-databases.ipynb", "160 requests/s", "the bandwidth law's arithmetic on configured numbers: 8 threads / 50 ms"),
    ("09-databases.ipynb", "1,280 requests/s", "the bandwidth law's arithmetic on configured numbers: 64 clients / 50 ms"),
    ("09-databases.ipynb", "20 ms", CONFIGURED + ": the exercise's waiting query (queries.slow(20))"),
    ("09-databases.ipynb", "10%", "the noise band of iolab.kit.verdicts (NOISE), within which the check calls a change 'about the same'"),
    # 10-c10k.ipynb
    ("10-c10k.ipynb", "50 ms", CONFIGURED + ": pred-10-gc's grading margin, the least two runs of one program differ by"),
    ("10-c10k.ipynb", "2%", CONFIGURED + ": pred-10-gc's grading margin, as a share of the run's wall time"),
    ("10-c10k.ipynb", "1 KiB", CONFIGURED + ": each read the Node.js fed program queues (Buffer.alloc(1024))"),
    ("10-c10k.ipynb", "10%", "arithmetic on configured numbers: the CPU part's share of the request, 10 ms of 100"),
    ("10-c10k.ipynb", "90 ms", CONFIGURED + ": the wait part of the two-step request (/upstream?ms=90)"),
    ("10-c10k.ipynb", "90%", "arithmetic on configured numbers: the wait part's share of the request, 90 ms of 100"),
    ("10-c10k.ipynb", "60 s", CONFIGURED + ": the sleep the blocked readers never reach"),
    ("10-c10k.ipynb", "4 KiB", "the guard page below each thread stack: one x86-64 base page, a constant of the hardware"),
    ("10-c10k.ipynb", "68 KiB", "arithmetic on configured numbers: the 64 KiB stack and its 4 KiB guard page"),
    ("10-c10k.ipynb", "400 MiB", CONFIGURED + ": the book's address_space_mb, the exercise's ulimit -v"),
    ("10-c10k.ipynb", "64 MiB", "glibc's documented address-space reservation per malloc arena on 64-bit (HEAP_MAX_SIZE)"),
    # 11-measuring.ipynb
    ("11-measuring.ipynb", "90%", "an example load in an aside on queueing theory's M/D/1 model"),
    ("11-measuring.ipynb", "10%", CONFIGURED + ": the noise band of the exercise's check"),
    # 11-shootout.ipynb
    ("11-shootout.ipynb", "2 x", "arithmetic: the ideal gain of two CPUs over one"),
    # 12-networks.ipynb
    ("12-networks.ipynb", "1.5 s", CONFIGURED + ": the length of the keep-alive run (duration_s=1.5)"),
    ("12-networks.ipynb", "5 s", "Apache's documented default KeepAliveTimeout, and the exercise's configured wait (wait_s=5.0)"),
    ("12-networks.ipynb", "100 ms", CONFIGURED + ": the slowloris client's time between bytes (byte_every_ms=100)"),
    ("12-networks.ipynb", "2 s", CONFIGURED + ": how long the honest slow heads take (head_takes_s=2.0), and the exercise's run"),
    ("12-networks.ipynb", "1 s", CONFIGURED + ": the shorter header timeout, and the book's keep-alive timeout in the exercise"),
    ("12-networks.ipynb", "3 s", CONFIGURED + ": the longer header timeout"),
    ("12-networks.ipynb", "60 s", "nginx's documented default client_header_timeout"),
    ("12-networks.ipynb", "2%", "arithmetic on the configured 1% loss: a request and its answer are two packets"),
    ("12-networks.ipynb", "1,000 requests/s", CONFIGURED + ": the book's target_rps in the exercise"),
    ("12-networks.ipynb", "10%", "the noise band of iolab.kit.verdicts (NOISE), the check's range for 'about the same'"),
    ("12-networks.ipynb", "2 x", "the prediction's choice \"about 2x\", named in the check's ranges"),
    ("12-networks.ipynb", "4.5 x", "the check's boundary between 'about 2x' and 'ten times or more' (about the geometric mean of 2 and 10)"),
]


def units_of_text(markdown: str) -> list[tuple[int, str]]:
    """The page as (first line, text) units: sentences of paragraphs and list items, and table rows.

    Fenced blocks (code, glue, literalinclude) are left out, except the caption of a ``{glued-figure}``
    (its lines after the options), which is prose. A row of a table whose header
    names a "published" column is marked "(published)", which cites it.
    """
    units: list[tuple[int, str]] = []
    paragraph: list[str] = []
    start = 0
    fence: str | None = None
    caption = False  # inside a {glued-figure}, whose caption lines are prose
    published_table = False

    def flush() -> None:
        units.extend((start, sentence) for sentence in SENTENCE_END.split(" ".join(paragraph)) if sentence)
        paragraph.clear()

    for number, line in enumerate(markdown.splitlines(), 1):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                flush()
                fence = caption = None
            elif caption and not stripped.startswith(":"):  # a figure's caption is prose: read it
                if not paragraph:
                    start = number
                paragraph.append(stripped)
            continue
        if match := FENCE.match(stripped):
            flush()
            fence, caption = match[1], stripped.startswith(match[1] + "{glued-figure}")
            continue
        if stripped.startswith("|"):
            flush()
            published_table = published_table or "published" in stripped.lower()
            if not TABLE_RULE.match(stripped):
                units.append((number, ("(published) " if published_table else "") + stripped))
            continue
        published_table = False
        if not stripped or stripped.startswith("#") or LIST_ITEM.match(stripped):
            flush()
            if not stripped:
                continue
        if not paragraph:
            start = number
        paragraph.append(stripped)
    flush()
    return units


def typed_figures(markdown: str) -> list[tuple[int, str, str]]:
    """Every (line, figure, sentence) of ``markdown`` that states a number with a unit, unglued and uncited."""
    found = []
    for line, text in units_of_text(markdown):
        if CITED.search(text):
            continue
        for match in FIGURE.finditer(LITERAL.sub(" ", ROLE.sub(" ", text))):
            found.append((line, f"{match[1]} {match[2]}".replace(" %", "%").replace("\u2013", "-"), text))
    return found


def markdown_cells(notebook: dict) -> list[tuple[int, str]]:
    """The (cell index, text) of every markdown cell of a notebook read as JSON; code cells are left out."""
    return [
        (index, "".join(cell["source"]))
        for index, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "markdown"
    ]


def chapter(name: str) -> str:
    """The chapter of a page or notebook file name: its two-digit prefix ("07" for "07-upstreams.ipynb")."""
    return name.split("-", 1)[0]


def covers(entry: str, name: str) -> bool:
    """Whether an :data:`ALLOWED` entry for ``entry`` explains a figure of the file ``name``.

    A page's entry covers the page and its chapter's notebooks; a notebook's entry, that notebook only.
    """
    if entry == name:
        return True
    return entry.endswith(".md") and name.endswith(".ipynb") and chapter(entry) == chapter(name)


def allowed_in(name: str) -> set[str]:
    """The figures :data:`ALLOWED` explains in the page or notebook ``name``."""
    return {figure for entry, figure, _ in ALLOWED if covers(entry, name)}


def unexplained(page: str, markdown: str) -> list[str]:
    """The typed-in figures of ``page`` that :data:`ALLOWED` does not explain, one line each."""
    allowed = allowed_in(page)
    return [
        f"{page}:{line}: {figure!r} in: {text[:160]}"
        for line, figure, text in typed_figures(markdown)
        if figure not in allowed
    ]


def unexplained_in_notebook(name: str, notebook: dict) -> list[str]:
    """The typed-in figures of the markdown cells of ``notebook`` (file ``name``) that :data:`ALLOWED` does not explain."""
    allowed = allowed_in(name)
    return [
        f"{name} cell {index}: {figure!r} in: {text[:160]}"
        for index, markdown in markdown_cells(notebook)
        for _, figure, text in typed_figures(markdown)
        if figure not in allowed
    ]


def figures_of(name: str) -> set[str]:
    """Every typed-in figure of the page or notebook ``name``."""
    if name.endswith(".md"):
        return {figure for _, figure, _ in typed_figures((BOOK / name).read_text())}
    notebook = json.loads((NOTEBOOKS / name).read_text())
    return {figure for _, markdown in markdown_cells(notebook) for _, figure, _ in typed_figures(markdown)}


@pytest.mark.parametrize(
    "page",
    sorted(BOOK.glob("*.md")),
    ids=lambda p: p.name,
)
def test_no_measured_figure_is_typed_into_the_prose(page):
    found = unexplained(page.name, page.read_text())
    assert not found, "typed-in figures (glue them, cite their source, or allow them with a reason):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "notebook",
    sorted(NOTEBOOKS.glob("*.ipynb")),
    ids=lambda p: p.name,
)
def test_no_measured_figure_is_typed_into_a_notebooks_markdown(notebook):
    found = unexplained_in_notebook(notebook.name, json.loads(notebook.read_text()))
    assert not found, "typed-in figures (glue or print them, cite their source, or allow them with a reason):\n" + "\n".join(found)


def test_every_allowed_figure_still_occurs_and_has_a_reason():
    files = sorted(p.name for p in [*BOOK.glob("*.md"), *NOTEBOOKS.glob("*.ipynb")])
    for entry, figure, reason in ALLOWED:
        assert reason, (entry, figure)
        assert entry in files, f"{entry}: ALLOWED names no page or notebook of the book"
        typed = set().union(*(figures_of(name) for name in files if covers(entry, name)))
        assert figure in typed, f"{entry}: {figure!r} is allowed but no longer typed: drop it from ALLOWED"


@pytest.mark.parametrize(
    "text",
    [
        "The server answered 1,234 req/s on this machine.",
        "Each thread added 16.5 KiB of resident memory.",
        "- the p99 was 283 ms in our run",
        "Pre-fork was 3.9x faster here.",
        "A context switch took 50-200 µs.",
        "A context switch took 50–200 µs.",
    ],
)
def test_the_scanner_finds_a_typed_in_figure(text):
    assert typed_figures(text), text


@pytest.mark.parametrize(
    ("text", "figures"),
    [
        ("A context switch took 50-200 µs.", ["50-200 µs"]),
        ("A context switch took 50–200 µs.", ["50-200 µs"]),
        ("Pre-fork was 1.2x to 1.5x faster.", ["1.2 x", "1.5 x"]),
        ("The 10,000-byte writes of 2026-11-27 took 3 s.", ["3 s"]),
    ],
)
def test_a_range_is_one_figure(text, figures):
    assert [figure for _, figure, _ in typed_figures(text)] == figures


def test_a_figure_typed_into_a_glued_figures_caption_is_found_and_its_options_are_not_read() -> None:
    page = "```{glued-figure} 07-fig-x\n:doc: ../notebooks/07.ipynb\n:alt: a line rising to 900 req/s\n\nThe sync service, at 812.5 req/s.\n```\n"
    assert [figure for _, figure, _ in typed_figures(page)] == ["812.5 req/s"]


@pytest.mark.parametrize(
    "text",
    [
        "The server answered {glue:text}`../notebooks/x.ipynb::rps:,.0f` req/s.",
        "Source 001 reports 14.670 req/s against 900.",
        "Its figures (`001_9d3a491f4ee74cbd.txt`) give 2.1 GB for 1,000 threads.",
        "Run `ab -t 30 -c 20000 -k` and read `Time per request: 0.044 [ms]`.",
        "```\nreal 0m31.7s 12 ms\n```",
        "| version | published requests/s |\n|---|---|\n| 1 sync | 52.47 req/s |",
        "A p99 of {glue:text}`nb::p99:.1f` ms, where the process pid 4321 ran.",
    ],
)
def test_glued_cited_and_code_figures_are_not_typed_in(text):
    assert not typed_figures(text), typed_figures(text)


def test_a_figure_planted_in_a_page_fails_it():
    page = (BOOK / "07-upstreams.md").read_text()
    assert unexplained("07-upstreams.md", page) == []
    planted = page + "\nOn the course machine the sync service answered 812.5 req/s.\n"
    [found] = unexplained("07-upstreams.md", planted)
    assert "812.5 req/s" in found


def test_a_figure_planted_in_a_notebooks_markdown_fails_it_and_one_in_its_code_does_not():
    name = "07-upstreams.ipynb"
    notebook = json.loads((NOTEBOOKS / name).read_text())
    assert unexplained_in_notebook(name, notebook) == []
    said = "On the course machine the sync service answered 812.5 req/s.\n"
    code = {"cell_type": "code", "id": "planted-code", "metadata": {}, "source": [f"# {said}"], "outputs": [], "execution_count": None}
    notebook["cells"].append(code)
    assert unexplained_in_notebook(name, notebook) == []
    notebook["cells"].append({"cell_type": "markdown", "id": "planted-text", "metadata": {}, "source": [said]})
    [found] = unexplained_in_notebook(name, notebook)
    assert found.startswith(f"{name} cell {len(notebook['cells']) - 1}: '812.5 req/s'"), found


# ``plots.glue_optional("KEY", ...)`` (or ``glue_where_available``: a Linux facility's figure) or with an
# f-string key: its {placeholders} match any text.
OPTIONAL_GLUE = re.compile(r"glue_(?:optional|where_available)\(\s*f?\"([^\"]+)\"")
GLUE_ROLE = re.compile(r"\{glue:text\}`[^`]*?::([\w-]+):([^`]*)`")


def optional_keys() -> list[re.Pattern]:
    keys = {key for nb in NOTEBOOKS.glob("*.ipynb") for key in OPTIONAL_GLUE.findall(nb.read_text().replace('\\"', '"'))}
    return [re.compile(re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(key)) + "$") for key in keys]


def test_figures_that_need_an_optional_tool_are_pasted_as_text():
    optional = optional_keys()
    assert optional, "the notebooks glue some figures with plots.glue_optional"
    wrong = [
        f"{page.name}: {key}:{spec}"
        for page in sorted(BOOK.glob("*.md"))
        for key, spec in GLUE_ROLE.findall(page.read_text())
        if any(p.match(key) for p in optional) and spec != "s"
    ]
    assert not wrong, "paste these with :s (a missing tool's words are no number):\n" + "\n".join(wrong)


def test_every_glue_text_reference_names_its_format() -> None:
    # myst-nb splits `{glue:text}` at the last colon: without a format, "path::key" loses its key and the
    # build fails with "No key '...ipynb:' found" only after every notebook has run.
    bare = [f"{page.name}: {ref}" for page in sorted(BOOK.glob("*.md"))
            for ref in re.findall(r"\{glue:text\}`([^`]*)`", page.read_text()) if not re.search(r"::[^:]+:[^:]+$", ref)]
    assert not bare, bare


# --- Counts of cores and of pre-fork children ---------------------------------------------------------
# "On two cores" is the machine's figure, not the book's: a reader's machine has its own. "A server with
# two children" is the book's only if a notebook of the chapter starts one with two; the pre-fork server's
# default (one child per core) would make it the machine's again. Both are checked against their source:
# a count of cores is never typed (unless cited or allowed below), a count of children or workers must be
# a literal the chapter's notebooks configure.
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16, "twenty": 20}
COUNT = re.compile(rf"(?<![\w.,/-])(\d[\d,]*|{'|'.join(NUMBER_WORDS)})[ \u00a0](cores|children|workers)\b", re.IGNORECASE)
# How a notebook configures a count of children or workers: workers=2, "workers": 2, a pre-fork Variant's
# third argument, a CHILDREN constant, or range(3) children forked by hand.
CONFIGURES = re.compile(r"(?:\bworkers\s*=\s*|[\"']workers[\"']\s*:\s*|Variant\(\s*\"prefork\",\s*\"[^\"]*\",\s*|CHILDREN\s*=\s*|\brange\()(\d+)\b")
ALLOWED_COUNTS: list[tuple[str, str, str]] = [
    ("02-blocking.ipynb", "Two children", "the two children the cell names, one blocked in read() and one looping"),
    ("11-measuring.md", "two cores", "the generator's default, one process per two cores (manager.default_workers)"),
    ("11-measuring.md", "two cores", "a conditional: on a two-core machine, the same load per core as the source's"),
    ("11-shootout.ipynb", "two cores", "a conditional: on a two-core machine, the same load per core as the source's"),
    ("11-measuring.ipynb", "two cores", "the generator's default, one process per two cores, and a conditional about such a machine"),
    ("08-locks.ipynb", "two cores", "two cores of different chips, against two hardware threads of one core: what sharing caches means"),
    ("08-locks.ipynb", "2 cores", "the same comparison, of a virtual machine's 2 cores"),
    ("01-processes.ipynb", "2 cores", "a worked example of the formula, for a two-core machine"),
]


def configured_counts(prefix: str) -> set[int]:
    """The counts of children or workers that the code cells of chapter ``prefix``'s notebooks configure."""
    return {
        int(match[1])
        for path in NOTEBOOKS.glob(f"{prefix}-*.ipynb")
        for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"
        for match in CONFIGURES.finditer("".join(cell["source"]))
    }


def unexplained_counts(name: str, markdown: str, configured: set[int], where: str = "") -> list[str]:
    """Counts of cores, children or workers in ``markdown`` (of file ``name``, at ``where``) that nothing explains."""
    allowed = {count for entry, count, _ in ALLOWED_COUNTS if covers(entry, name)}
    found = []
    for line, text in units_of_text(markdown):
        if CITED.search(text):
            continue
        for match in COUNT.finditer(LITERAL.sub(" ", ROLE.sub(" ", text))):
            number = NUMBER_WORDS.get(match[1].lower()) or int(match[1].replace(",", ""))
            if match[0] in allowed or (match[2].lower() != "cores" and number in configured):
                continue
            why = "a machine's core count" if match[2].lower() == "cores" else "a count no notebook of the chapter configures"
            found.append(f"{name}{where}:{line}: {match[0]!r} ({why}) in: {text[:160]}")
    return found


@pytest.mark.parametrize("path", sorted([*BOOK.glob("*.md"), *NOTEBOOKS.glob("*.ipynb")]), ids=lambda p: p.name)
def test_no_count_of_cores_or_children_is_the_machines(path: Path) -> None:
    configured = configured_counts(chapter(path.name))
    texts = [("", path.read_text())] if path.suffix == ".md" else \
        [(f" cell {index}", markdown) for index, markdown in markdown_cells(json.loads(path.read_text()))]
    found = [problem for where, markdown in texts for problem in unexplained_counts(path.name, markdown, configured, where)]
    assert not found, "counts of the machine typed into the prose (say 'the machine's cores', glue, or configure it):\n" + "\n".join(found)


def test_every_allowed_count_still_occurs() -> None:
    for entry, count, reason in ALLOWED_COUNTS:
        assert reason
        path = BOOK / entry if entry.endswith(".md") else NOTEBOOKS / entry
        assert count in path.read_text(), f"{entry}: {count!r} is allowed but no longer typed"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("The server ran on two cores, which the load generator shared.", 1),
        ("A pre-fork server with 4 children answered every client.", 1),  # configured here: 2 and 3
        ("A pre-fork server with two children answered two clients.", 0),  # chapter 4 starts one with 2
        ("Source 000's laptop had four cores.", 0),  # cited
        ("It runs one process per core, on the machine's cores.", 0),
    ],
)
def test_a_typed_count_is_checked_against_the_machine_and_the_chapters_configuration(text: str, found: int) -> None:
    assert len(unexplained_counts("04-prefork.md", text, {2, 3})) == found
