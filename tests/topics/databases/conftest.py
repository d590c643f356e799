"""The databases tests' one PostgreSQL, started once per test module, from the pip wheel (not the reader's server)."""

from __future__ import annotations

import os

import pytest

from iolab.topics.databases.postgres import DATABASE_URL_ENV, open_postgres


@pytest.fixture(scope="module")
def db():
    previous = os.environ.pop(DATABASE_URL_ENV, None)
    try:
        with open_postgres() as database:
            yield database
    finally:
        if previous is not None:
            os.environ[DATABASE_URL_ENV] = previous
