"""iolab.servers.node: the optional Node.js server serves the kit's tiny and static routes."""

from __future__ import annotations

import contextlib

import psutil
import pytest

from iolab.servers import node
from iolab.topics.prefork import occupancy
from iolab.web import app

pytestmark = pytest.mark.skipif(not node.have_node(), reason=node.MISSING_NOTE)


def test_node_serves_the_tiny_route_and_the_sprite_and_is_gone_afterwards() -> None:
    with node.open_node_server() as server:
        with contextlib.closing(occupancy.connect(server.url)) as conn:
            assert occupancy.get_worker(conn, "/") == server.pid
            conn.request("GET", "/static/sprite.png")
            reply = conn.getresponse()
            assert reply.status == 200 and reply.read() == (app.STATIC_DIR / app.SPRITE_NAME).read_bytes()
            conn.request("GET", "/nope")
            reply = conn.getresponse()
            reply.read()
            assert reply.status == 404
        pid = server.pid
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
