"""Homework: the student edition of every notebook, and a grader for what students hand in.

The exercises are marked up once, in the instructor notebooks in ``notebooks/``, with nbgrader's
conventions (``markup``): an nbgrader course can use the notebooks as they are, and this package
is a small, offline grader that reads the same markup. ``editions`` writes what students get;
``execution`` runs a notebook's cells under a time limit; ``grading`` scores submissions into rows
of a CSV. Per-student parameters come from ``iolab.kit.student``.

It imports only from ``kit``; ``python -m iolab homework`` is its command line.
"""
