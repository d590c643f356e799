"""iolab.topics.databases.variants, protocol, service and runner: every variant answers the same bytes; the runner and CLI measure them."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import psycopg
import pytest

from iolab.kit import procs
from iolab.topics.databases import queries, runner
from iolab.topics.databases.postgres import DATABASE_URL_ENV
from iolab.topics.databases.service import DbServiceSpec, open_service
from iolab.topics.databases.variants import SERVICES, VARIANTS, service_name


@pytest.fixture(scope="module")
def expected_body(db) -> bytes:
    with psycopg.connect(db.url, autocommit=True) as conn:
        cur = conn.execute(queries.QUERIES["catalog"])
        body = queries.encode([c.name for c in cur.description], cur.fetchall())
    db.wait_backends(0)
    return body


def _dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out
        out, rest = out + rest[:size], rest[size + 2 :]


def test_the_six_variants_are_numbered_as_in_source_002():
    assert sorted(VARIANTS) == [1, 2, 3, 4, 5, 6]
    assert VARIANTS[1].blocking and VARIANTS[3].blocking and not VARIANTS[5].blocking
    assert VARIANTS[6].prepare and not any(VARIANTS[n].prepare for n in range(1, 6))


def test_catalog_answer_is_about_19_kb_and_ten_rows_about_1_kb(expected_body, db):
    assert 17_000 < len(expected_body) < 22_000
    assert len(json.loads(expected_body)) == queries.CATALOG_ROWS
    with psycopg.connect(db.url, autocommit=True) as conn:
        cur = conn.execute(queries.QUERIES["ten"])
        assert 800 < len(queries.encode([c.name for c in cur.description], cur.fetchall())) < 1_600
    db.wait_backends(0)


def test_every_service_answers_the_same_bytes(db, expected_body):
    answers = {}
    for name in SERVICES:
        with open_service(db, name, queries.QUERIES["catalog"], size=2) as service:
            answers[name] = [runner.get(service.url), runner.get(service.url)]
    buffered = {name: a for name, a in answers.items() if not SERVICES[name].streams}
    raws = {a.raw for pair in buffered.values() for a in pair}
    assert len(raws) == 1, "the buffered services answered different bytes"
    head, _, body = raws.pop().partition(b"\r\n\r\n")
    assert body == expected_body and b"200 OK" in head
    for name, pair in answers.items():
        if SERVICES[name].streams:
            head, _, chunked = pair[0].raw.partition(b"\r\n\r\n")
            assert b"Transfer-Encoding: chunked" in head
            assert _dechunk(chunked) == expected_body


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def test_bad_requests_get_a_4xx_and_the_service_goes_on(db):
    with open_service(db, 5, queries.QUERIES["ten"]) as service:
        assert _exchange(service.port, b"BLAH\r\n\r\n").startswith(b"HTTP/1.1 400")
        assert _exchange(service.port, b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").startswith(b"HTTP/1.1 405")
        assert _exchange(service.port, b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").startswith(b"HTTP/1.1 404")
        assert runner.get(service.url).status == 200


def test_a_failing_query_is_a_500_not_a_crash(db):
    with open_service(db, 3, "select * from no_such_table") as service:
        assert runner.get(service.url).status == 500
        assert service.process.poll() is None


def test_a_stopped_service_leaves_no_process_and_no_backend(db):
    with open_service(db, 5, queries.QUERIES["ten"], size=4) as service:
        assert len(db.backends()) == 4
        pid = service.pid
    assert service.process.poll() is not None
    assert db.backends() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_unknown_variants_are_refused_with_the_valid_ones():
    assert runner.parse_variants("1-3,6") == [1, 2, 3, 6]
    for bad in ("0", "7", "1-9", "x"):
        with pytest.raises(ValueError, match="1"):
            runner.parse_variants(bad)
    with pytest.raises(ValueError, match="variants 1 to 6"):
        service_name(7)
    with pytest.raises(ValueError, match="sync-connect"):
        service_name("no-such-service")


def test_a_service_spec_is_checked_in_the_caller_and_crosses_as_json():
    spec = DbServiceSpec("async-pool", "postgresql://postgres@/postgres?host=/tmp/x", "select 1", size=3)
    assert DbServiceSpec.from_json(spec.to_json()) == spec
    with pytest.raises(ValueError, match="sync-connect"):
        DbServiceSpec("5", spec.url, spec.sql)  # a name, not the source's number
    with pytest.raises(ValueError, match="at least 1"):
        DbServiceSpec("async-pool", spec.url, spec.sql, size=0)


@pytest.mark.solo  # compares two throughputs
def test_pool_with_prepared_statements_beats_connect_per_request(db):
    df = runner.compare_variants(db, queries.QUERIES["catalog"], [1, 6], requests=150)
    assert df["answer_sha"].nunique() == 1
    assert (df["errors"] == 0).all()
    rps = df.set_index("variant")["rps"]
    assert rps[6] > 1.5 * rps[1], f"variant 6 {rps[6]:.0f} rps vs variant 1 {rps[1]:.0f} rps"


def test_cli_prints_a_json_list_and_uses_the_database_url(db):
    env = {**os.environ, DATABASE_URL_ENV: db.url}
    argv = procs.python_argv("-m", "iolab", "db", "--variants", "3", "--requests", "50", "--json")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=True)
    # The CLI cannot see the backends of a server it did not start, so it does not wait for them to
    # exit after its service stopped; they are the fixture server's children: wait for them here.
    assert db.wait_backends(0) == 0
    rows = json.loads(done.stdout)
    assert [r["variant"] for r in rows] == [3]
    assert {"variant", "rps", "p99_ms", "response_bytes"} <= rows[0].keys()
    assert rows[0]["rps"] > 0 and rows[0]["response_bytes"] > 17_000


def test_repeats_run_the_variants_in_turns(db):
    df = runner.compare_variants(db, queries.QUERIES["ten"], [3, 5], requests=10, repeats=2)
    assert list(zip(df["repeat"], df["variant"])) == [(0, 3), (0, 5), (1, 3), (1, 5)]
    assert (df["errors"] == 0).all() and df["answer_sha"].nunique() == 1
