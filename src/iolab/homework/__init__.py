"""Homework: the student edition of every notebook, and a grader a class can trust.

The exercises are marked up once, in the instructor notebooks in ``notebooks/``, with nbgrader's
conventions (``markup``): an nbgrader course can use the notebooks as they are, and this package
is a small, offline grader that reads the same markup. ``editions`` writes what students get.

Grading one submission (``grading``) runs it in two processes that share nothing but answers:
the submission's kernel (``execution``), in a sandbox (``sandbox``: bubblewrap, or user nobody in
a container), writes the values its checks read (``answers``); the ``checker``, a process that
runs none of the student's code, runs the instructor's check cells on them, part by part
(``checks``: public asserts gate, each hidden assert scores a share). What the two hand each other
over the checker's pipes (the job, the answers, the verdict) and the words a row may use are one
typed ``contract``; a value the student's run says it measured must be ``plausible`` beside
the checker's own measurement. Both work in folders from ``scratch``, removed without following a
link a submission left there. ``caps`` holds each submission to caps on its processes, memory,
files and output (with a cgroup of its own, ``cgroups``, where the machine gives one), so that what
passes a cap costs that submission its rows. ``batch`` grades a class,
several at a time, grading again (``reruns``) a notebook that lost points on a hidden check alone;
``classes`` is the whole of ``homework grade``: the settings checked before any grading, then ``batch``,
the reports and the totals; ``untrusted`` reads the files a submission controls (its notebook, its
answers) as data, a regular file within a limit and never through a link; ``reports`` writes the gradebook,
pass rates and feedback, with the penalties ``lateness`` reckons (due date, policy, extensions, Canvas's
late mark); ``regrade`` regrades a few students into the class's files and keeps their ``history.csv``;
``written`` exports the written answers a TA scores by hand (a page each and a scores CSV)
and merges the filled scores back;
``measurements`` keeps what each submission's run measured (``class-measurements.csv``) and
``measurements_page`` draws it, a figure per measured name beside the reference run, naming no student;
``intake`` unpacks an LMS's download; ``canvas_feedback`` zips the feedback pages under the names Canvas's
re-upload reads back; ``moodle`` fills Moodle's grading worksheet from the grades; ``gradescope`` packages the grader
in Gradescope's format; ``notes`` and ``times`` feed the book's instructor notes. ``leaks`` finds a graded answer a student could read before its
question; ``private`` reads an instructor's own checks and course secret, kept outside the
repository. Per-student parameters come from ``iolab.kit.student``.

It imports only from ``kit``; ``python -m iolab homework`` is its command line.
"""
