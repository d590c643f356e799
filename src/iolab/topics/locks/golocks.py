"""Source 001's counter benchmark with real atomics: a small Go program, written, built and run here.

Python has no atomic integers, so the batched / atomic / mutex comparison of source 001 (Rust) is
run in Go, where goroutines run on every core at once: ``sync/atomic`` is the atomic add and
``sync.Mutex`` the lock. :data:`GO_SOURCE` is the whole program; :func:`counter_costs` writes it to a
temporary folder, builds it with the ``go`` tool and runs it. Go is optional: without it,
:class:`GoMissing` says so and what to install.

Go's build cache goes to the kit's cache folder (``~/.cache/iolab/go-build``), not to the course's
repository; the first build compiles Go's standard library into it (seconds), later ones reuse it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from iolab.kit.cache import cache_dir
from iolab.kit.procs import open_process

# Where the official Go tarball installs the tool, for a kernel whose PATH lacks it.
GO_FALLBACK_DIR = "/usr/local/go/bin"
BUILD_TIMEOUT_S = 300.0  # a cold build cache compiles the runtime and fmt: tens of seconds on a slow machine
RUN_TIMEOUT_S = 300.0
STRATEGIES = ("batched", "atomic", "mutex")

GO_SOURCE = """\
// Counters shared by goroutines: batched, sync/atomic, sync.Mutex (after source 001's Rust benchmark).
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Each function makes n increments of a counter all goroutines share. As in the source, the
// increment alternates 1, 0, 1, 0, so that the compiler cannot replace the loop by one addition.
func batched(n int, counter *atomic.Int64) {
	var batch, increment int64
	for i := 0; i < n; i++ {
		increment ^= 1
		batch += increment
	}
	counter.Add(batch)
}

func atomicAdd(n int, counter *atomic.Int64) {
	var increment int64
	for i := 0; i < n; i++ {
		increment ^= 1
		counter.Add(increment)
	}
}

type lockedCounter struct {
	mu    sync.Mutex
	value int64
}

func mutexAdd(n int, counter *lockedCounter) {
	var increment int64
	for i := 0; i < n; i++ {
		increment ^= 1
		counter.mu.Lock()
		counter.value += increment
		counter.mu.Unlock()
	}
}

// run releases `goroutines` goroutines at once, each making perG increments: wall time, final count.
func run(strategy string, goroutines, perG int) (time.Duration, int64) {
	var shared atomic.Int64
	var locked lockedCounter
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(goroutines)
	done.Add(goroutines)
	for g := 0; g < goroutines; g++ {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			switch strategy {
			case "batched":
				batched(perG, &shared)
			case "atomic":
				atomicAdd(perG, &shared)
			case "mutex":
				mutexAdd(perG, &locked)
			}
		}()
	}
	ready.Wait()
	began := time.Now()
	close(start)
	done.Wait()
	return time.Since(began), shared.Load() + locked.value
}

func main() {
	ops := flag.Int("ops", 10000000, "increments per run, split among the goroutines")
	threads := flag.String("threads", "1,2,4,8", "goroutine counts, comma-separated")
	repeats := flag.Int("repeats", 3, "runs per strategy and goroutine count")
	flag.Parse()
	for r := 0; r < *repeats; r++ {
		for _, field := range strings.Split(*threads, ",") {
			goroutines, err := strconv.Atoi(field)
			if err != nil || goroutines < 1 {
				fmt.Fprintf(os.Stderr, "bad goroutine count %q\\n", field)
				os.Exit(2)
			}
			perG := *ops / goroutines
			for _, strategy := range []string{"batched", "atomic", "mutex"} {
				elapsed, total := run(strategy, goroutines, perG)
				fmt.Printf("{\\"strategy\\": %q, \\"threads\\": %d, \\"ops\\": %d, \\"seconds\\": %.9f, \\"total\\": %d, \\"repeat\\": %d}\\n",
					strategy, goroutines, perG*goroutines, elapsed.Seconds(), total, r)
			}
		}
	}
}
"""


class GoMissing(RuntimeError):
    """The ``go`` tool is not installed; the message says where to get it."""


def find_go() -> str | None:
    """The path of the ``go`` tool, or None if it is not installed."""
    return shutil.which("go") or shutil.which("go", path=GO_FALLBACK_DIR)


def missing_note() -> str:
    """One line for the reader whose machine has no Go."""
    return ("skipped: the `go` tool is not installed (https://go.dev/dl/, or apt install golang-go); "
            "the Python measurements stand alone.")


def go_env() -> dict[str, str]:
    """Environment for ``go build``: caches in the kit's cache folder, this toolchain, no go.env file."""
    folder = cache_dir()
    return {
        "GOCACHE": str(folder / "go-build"),
        "GOPATH": str(folder / "gopath"),
        "GOTOOLCHAIN": "local",  # never download another toolchain
        "GOENV": "off",  # ignore the reader's `go env -w` settings
        "GOFLAGS": "",
        "GOWORK": "off",
    }


def build(folder: Path, go: str) -> Path:
    """Write :data:`GO_SOURCE` to ``folder`` and build it; the executable's path."""
    (folder / "counters.go").write_text(GO_SOURCE)
    binary = folder / "counters"
    with open_process([go, "build", "-o", str(binary), "counters.go"], env=go_env(), cwd=str(folder)) as building:
        if building.wait(BUILD_TIMEOUT_S) != 0:
            raise RuntimeError(f"go build failed:\n{building.tail(20)}")
    return binary


def counter_costs(threads: list[int], ops: int, repeats: int = 3, go: str | None = None) -> pd.DataFrame:
    """Run the Go program: one row per run, with the columns of :func:`iolab.topics.locks.counters.counter_costs`.

    ``go`` is the tool's path (default: :func:`find_go`); :class:`GoMissing` if there is none.
    """
    go = go or find_go()
    if go is None or not Path(go).exists():
        raise GoMissing(missing_note())
    if min(threads) < 1:
        raise ValueError(f"goroutine counts must be >= 1, not {min(threads)}")
    expected_lines = repeats * len(threads) * len(STRATEGIES)
    rows = []
    with tempfile.TemporaryDirectory(prefix="iolab-go-") as tmp:
        binary = build(Path(tmp), go)
        argv = [str(binary), "-ops", str(ops), "-threads", ",".join(map(str, threads)), "-repeats", str(repeats)]
        with open_process(argv) as program:
            for _ in range(expected_lines):  # one JSON line per run; a crash or a hang raises
                rows.append(json.loads(program.wait_for_line(r"^\{.*\}$", timeout=RUN_TIMEOUT_S).group(0)))
            program.wait(timeout=10)
    runs = pd.DataFrame(rows)
    per_goroutine = runs.ops // runs.threads
    return pd.DataFrame({
        "runtime": "Go goroutines", "strategy": runs.strategy, "threads": runs.threads, "ops": runs.ops,
        "seconds": runs.seconds, "ns_per_op": runs.seconds / runs.ops * 1e9,
        # increments alternate 1, 0, 1, ...: each goroutine adds ceil(n / 2)
        "correct": runs.total == runs.threads * ((per_goroutine + 1) // 2), "repeat": runs["repeat"],
    })
