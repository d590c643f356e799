"""An adversarial corpus: submissions of notebook 02 that try to score without solving anything.

Each cheat is the source of the edition's first answer cell; every other answer cell is left as
handed out (``raise NotImplementedError()``), unless the cheat says otherwise. The first three are
the ones a dishonest student tried against the same-process grader, which gave each 13 of 13.
``{marker!r}`` in a cheat's source becomes a path in the test's temporary folder, where a cheat that
escaped would leave its trace, and ``{port!r}`` the port of a server on the grader's loopback.
"""

from __future__ import annotations

# Makes every later cell of the kernel run as an empty cell: the checks "pass" by never running.
EMPTY_LATER_CELLS = """
ip = get_ipython()
ip.input_transformers_post.append(lambda lines: [])
"""

# Swallows every exception the kernel would report: failing asserts look like passing ones.
SWALLOW_EXCEPTIONS = """
get_ipython().set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: None)
"""

# Reads the instructor notebook through the installed kit's path and runs its solutions.
READ_THE_KEY = """
import json, pathlib, iolab
key = pathlib.Path(iolab.__file__).resolve().parents[2] / "notebooks" / "02-blocking.ipynb"
for cell in json.loads(key.read_text())["cells"]:
    if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
        exec("".join(cell["source"]), globals())
"""

# Double-forks a daemon that would outlive the kernel: `sleep DAEMON_SECONDS`, easy to look for afterwards.
DAEMON_SECONDS = "613.25"
DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "%s"])
    os._exit(0)
time.sleep(0.5)
""" % DAEMON_SECONDS

# Tries to reach a server on the grader's loopback (another submission's, or the instructor's).
REACH_THE_HOST = """
import socket
try:
    socket.create_connection(("127.0.0.1", {port!r}), timeout=2).sendall(b"answers, please")
except OSError:
    pass
"""

# Answers that say yes to any comparison: a str whose == always holds, for every answer asked.
ALWAYS_EQUAL = """
class Yes(str):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = str.__hash__
class YesNumber(float):
    def __eq__(self, other): return True
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    __hash__ = float.__hash__
reader_state = looper_state = Yes("S")
reader_cpu_percent = looper_cpu_percent = YesNumber(0)
"""

# Patches the kit's checker and answer code in its own kernel, and tries to write to the kit's source.
PATCH_THE_GRADER = """
import iolab.homework.checks as checks, iolab.homework.answers as answers, pathlib
checks.run_parts = lambda found, namespace, filename: [checks.Outcome(p.hidden, True, "") for p in found]
checks.score = lambda outcomes, points: (points, "passed")
try:
    pathlib.Path(checks.__file__).write_text("def score(outcomes, points): return points, 'passed'")
except OSError:
    pass
"""

# Tries to write the grades and to read other students' folders and the host's files.
REACH_OUTSIDE = """
import pathlib
for target in [pathlib.Path({marker!r}), pathlib.Path({marker!r}).parent / "grades.csv"]:
    try:
        target.write_text("student,points\\nme,180")
    except OSError:
        pass
"""

# Replaces how the kernel runs code: the grader's cells then run nothing.
REPLACE_RUN_CELL = """
ip = get_ipython()
ip.run_cell = lambda *args, **kwargs: None
"""

# Breaks a builtin that the grader's code might use, so that it fails in the student's favour.
BREAK_BUILTINS = """
import builtins, json
builtins.globals = lambda: {"reader_state": "S"}
json.dump = lambda obj, f, **kw: f.write('{"reader_state": {"$value": "S"}}')
"""

# Ends the kernel in the first answer cell.
EXIT_KERNEL = """
import os
os._exit(0)
"""

# The next four write answers files that no grader's cell writes, by replacing the kit's answer writer in
# their own kernel. The first two crashed the checker's decoding (every row the grader's own "error"),
# the FIFO hung the grader for good, the link had it read the instructor's notebook as answers.
FORGED_ANSWERS = """
import json, iolab.homework.answers as answers
def dump(names, namespace, path):
    with open(path, "w") as f:
        json.dump({name: {"$value": {"$dict": [[[1], {"$set": [[2]]}]]}} for name in names}, f)
answers.dump = dump
"""

NESTED_ANSWERS = """
import iolab.homework.answers as answers
def dump(names, namespace, path):
    with open(path, "w") as f:
        f.write('{"reader_state": {"$value": ' + "[" * 100_000 + "]" * 100_000 + "}}")
answers.dump = dump
"""

FIFO_ANSWERS = """
import os, iolab.homework.answers as answers
answers.dump = lambda names, namespace, path: os.mkfifo(path)
"""

LINKED_ANSWERS = """
import os, pathlib, iolab, iolab.homework.answers as answers
key = pathlib.Path(iolab.__file__).resolve().parents[2] / "notebooks" / "02-blocking.ipynb"
answers.dump = lambda names, namespace, path: os.symlink(key, path)
"""

# Takes more memory than a submission may (caps.Caps.memory_bytes, 2 GiB): stopped, the batch goes on.
MEMORY_HOG = """
hog = bytearray(3 << 30)
hog[::4096] = b"x" * len(hog[::4096])
"""

# Starts processes until refused or 20,000 (each a small `sleep 30`): stopped at the process cap.
FORK_BOMB = """
import os, time
for _ in range(20_000):
    try:
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "30"])
    except OSError:
        break
time.sleep(5)
"""

CHEATS = {
    "empty-later-cells": EMPTY_LATER_CELLS,
    "swallow-exceptions": SWALLOW_EXCEPTIONS,
    "read-the-key": READ_THE_KEY,
    "daemon": DAEMON,
    "always-equal": ALWAYS_EQUAL,
    "patch-the-grader": PATCH_THE_GRADER,
    "reach-outside": REACH_OUTSIDE,
    "reach-the-host": REACH_THE_HOST,
    "replace-run-cell": REPLACE_RUN_CELL,
    "break-builtins": BREAK_BUILTINS,
    "exit-kernel": EXIT_KERNEL,
    "forged-answers": FORGED_ANSWERS,
    "nested-answers": NESTED_ANSWERS,
    "fifo-answers": FIFO_ANSWERS,
    "linked-answers": LINKED_ANSWERS,
    "memory-hog": MEMORY_HOG,
    "fork-bomb": FORK_BOMB,
}
# The cheats whose answers are not data: tampered, each exercise with the reason.
NOT_DATA = ("forged-answers", "nested-answers", "fifo-answers", "linked-answers")
