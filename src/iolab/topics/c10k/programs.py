"""The Go, JavaScript and Ruby sleepers, as source text, and how to build and run them.

Each speaks ``protocol``'s lines and takes ``MODE COUNT SECONDS [FIFO]`` like the Python programs.
They are source 003's programs with two changes: they count finished sleepers instead of printing a
line each, and the readers get a FIFO instead of stdin: one nobody writes to (``pipe``, blocked for
good), or, for Node's ``fed`` mode, one the runner keeps full as source 003's ``yes |`` did.

The Go program's ``pipe`` mode calls ``read(2)`` directly (``syscall.Read``), as every Go read of a
file did when source 003 was written. Go's ``os.File`` now puts the pipes it opens into its netpoller
instead, which would change what this mode measures: a read that blocks in the kernel.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from iolab.kit.procs import open_process

GO_SOURCE = r"""// Sleepers in goroutines: sleep, or block in read(2) on a pipe, or wait on a socket.
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	mode := os.Args[1]
	count, _ := strconv.Atoi(os.Args[2])
	seconds, _ := strconv.ParseFloat(os.Args[3], 64)
	hold := time.Duration(seconds * float64(time.Second))
	if mode == "sleep" {
		var wg sync.WaitGroup
		var completed atomic.Int64
		wg.Add(count)
		for i := 0; i < count; i++ {
			go func() {
				defer wg.Done()
				time.Sleep(hold) // a timer in the scheduler: no thread waits
				completed.Add(1)
			}()
		}
		fmt.Printf("READY %d\n", count)
		wg.Wait()
		fmt.Printf("DONE %d\n", completed.Load())
		return
	}
	var fifo int
	if mode == "pipe" {
		var err error
		fifo, err = syscall.Open(os.Args[4], syscall.O_RDWR, 0) // RDWR: never end-of-file
		if err != nil {
			fmt.Printf("FAILED 0 {\"error\": %q}\n", err.Error())
			os.Exit(3)
		}
	}
	var keep []any
	for i := 0; i < count; i++ {
		if mode == "pipe" {
			go func() {
				buf := make([]byte, 1)
				syscall.Read(fifo, buf) // read(2) itself, not through the netpoller
			}()
			continue
		}
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			fmt.Printf("FAILED %d {\"error\": %q}\n", i, err.Error())
			os.Exit(3)
		}
		file := os.NewFile(uintptr(fds[0]), "socket")
		conn, _ := net.FileConn(file) // a non-blocking copy, registered with the netpoller
		file.Close()
		keep = append(keep, conn, fds[1]) // the peer stays open and silent
		go func() {
			buf := make([]byte, 1)
			conn.Read(buf) // parks the goroutine; epoll watches the socket
		}()
	}
	fmt.Printf("READY %d\n", count)
	time.Sleep(hold)
	fmt.Println("DONE 0")
	_ = keep
}
"""

NODE_SOURCE = r"""// Sleepers as Node.js callbacks: timers, or reads of a pipe through fs.read (a pipe
// nobody writes to, or one fed without end).
const fs = require("fs");
const [mode, countText, secondsText, fifo] = process.argv.slice(2);
const count = Number(countText);
const ms = Number(secondsText) * 1000;

if (mode === "sleep") {
  let completed = 0;
  for (let i = 0; i < count; i++) {
    setTimeout(() => {
      completed += 1;
      if (completed === count) console.log(`DONE ${completed}`);
    }, ms);
  }
  console.log(`READY ${count}`);
  if (count === 0) console.log("DONE 0");
} else if (mode === "pipe") {
  const fd = fs.openSync(fifo, "r+"); // read-write: the pipe never reaches end-of-file
  for (let i = 0; i < count; i++) {
    fs.read(fd, Buffer.alloc(1), 0, 1, null, () => {}); // one byte; the callback runs when the read completes
  }
  console.log(`READY ${count}`);
  // process.exit() would wait for the pool's threads, stuck in read() for good: end abruptly.
  setTimeout(() => {
    console.log("DONE 0");
    process.kill(process.pid, "SIGKILL");
  }, ms);
} else if (mode === "fed") {
  // Source 003's program with /bin/yes piped in: every read is answered, and the program ends when
  // the last callback has run.
  const fd = fs.openSync(fifo, "r");
  let completed = 0;
  for (let i = 0; i < count; i++) {
    fs.read(fd, Buffer.alloc(1024), 0, 1024, null, () => {
      completed += 1;
      if (completed === count) {
        console.log(`DONE ${completed}`);
        process.exit(0);
      }
    });
  }
  console.log(`READY ${count}`);
  if (count === 0) console.log("DONE 0");
} else {
  console.error(`mode ${mode}: this program knows sleep, pipe and fed`);
  process.exit(2);
}
"""

RUBY_SOURCE = r"""# Sleepers as Ruby threads, as in source 003 (one OS thread each since Ruby 1.9).
mode, count, seconds = ARGV[0], ARGV[1].to_i, ARGV[2].to_f
abort "mode #{mode}: this program knows sleep" unless mode == "sleep"
started = 0
threads = []
begin
  count.times do
    threads << Thread.new { sleep seconds }
    started += 1
  end
rescue ThreadError, NoMemoryError => e
  puts "FAILED #{started} {\"error\": #{e.message.inspect}}"
  $stdout.flush
  exit! 3
end
puts "READY #{started}"
threads.each(&:join)
puts "DONE #{threads.size}"
"""

# A built Go program is kept between runs, named by its source's hash: building takes seconds.
BUILD_SECONDS = 300.0


def _workdir(name: str, source: str) -> Path:
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"iolab-sleepers-{name}-{digest}"
    folder.mkdir(exist_ok=True)
    return folder


def write_source(name: str, source: str, filename: str) -> Path:
    """Write ``source`` to a temp folder of its own (reused while the source is unchanged); its path."""
    path = _workdir(name, source) / filename
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    return path


def build_go(go: str) -> Path:
    """Build the Go program with the ``go`` tool at path ``go`` (once per source); the executable."""
    source = write_source("go", GO_SOURCE, "sleepers.go")
    binary = source.with_name("sleepers-go")
    if binary.exists():
        return binary
    env = {}
    if "HOME" not in os.environ and "GOCACHE" not in os.environ:  # go needs a cache folder
        env["GOCACHE"] = str(source.parent / "cache")
    partial = binary.with_name(f"sleepers-go.{os.getpid()}")  # no half-written binary is ever run
    # The go tool starts compilers of its own: open_process ends the whole group if we are interrupted.
    with open_process([go, "build", "-o", str(partial), source.name], cwd=str(source.parent), env=env) as build:
        if build.wait(BUILD_SECONDS) != 0:
            raise RuntimeError(f"go build failed:\n{build.tail(30)}")
    partial.replace(binary)
    return binary


def go_argv(go: str | None) -> list[str]:
    """The built Go program."""
    return [str(build_go(go or "go"))]


def node_argv(node: str | None) -> list[str]:
    """``node`` with the JavaScript program."""
    return [node or "node", str(write_source("node", NODE_SOURCE, "sleepers.js"))]


def ruby_argv(ruby: str | None) -> list[str]:
    """``ruby`` with the Ruby program."""
    return [ruby or "ruby", str(write_source("ruby", RUBY_SOURCE, "sleepers.rb"))]
