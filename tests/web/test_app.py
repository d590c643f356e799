"""iolab.web.app: the routes, their effects, and the static folder's safety rule."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from iolab.web import app, http


@pytest.fixture(scope="module")
def the_app() -> app.App:
    return app.App()


def get(the_app: app.App, target: str, method: str = "GET") -> app.Outcome:
    return the_app.handle(http.Request(method, target))


def test_the_tiny_route_answers_hello(the_app: app.App) -> None:
    response = get(the_app, "/")
    assert isinstance(response, http.Response)
    assert (response.status, response.body) == (200, b"Hello, world!\n")


def test_the_sprite_is_served_as_png_with_the_file_bytes(the_app: app.App) -> None:
    response = get(the_app, "/static/sprite.png")
    assert isinstance(response, http.Response)
    assert response.status == 200 and response.content_type == "image/png"
    assert response.body == (app.STATIC_DIR / "sprite.png").read_bytes()


def test_the_sprite_is_a_valid_png_of_13263_bytes() -> None:
    data = (app.STATIC_DIR / app.SPRITE_NAME).read_bytes()
    assert len(data) == app.SPRITE_BYTES == 13_263
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    kinds, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        assert struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])[0] == zlib.crc32(kind + body)
        kinds.append(kind)
        offset += 12 + length
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds


def test_sprite_png_makes_exactly_the_asked_size() -> None:
    assert len(app.sprite_png(app.SPRITE_BYTES, 80, 60)) == app.SPRITE_BYTES


@pytest.mark.parametrize(
    "target",
    [
        "/static/../../pyproject.toml",
        "/static/%2e%2e/%2e%2e/pyproject.toml",
        "/static/%2E%2E%2F%2E%2E%2Fpyproject.toml",
        "/static//etc/passwd",
        "/static/%2Fetc%2Fpasswd",
        "/static/./sprite.png/..",
        "/static/",
        "/static/missing.png",
    ],
)
def test_nothing_outside_the_static_folder_is_served(the_app: app.App, target: str) -> None:
    assert get(the_app, target) == app.NOT_FOUND


def test_a_symlink_out_of_the_static_folder_is_404_and_one_inside_is_served(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    static = tmp_path / "static"
    static.mkdir()
    (static / "inside.txt").write_text("public")
    (static / "out.txt").symlink_to(tmp_path / "secret.txt")
    (static / "outdir").symlink_to(tmp_path)
    (static / "alias.txt").symlink_to(static / "inside.txt")
    local = app.App(static)
    assert get(local, "/static/out.txt") == app.NOT_FOUND
    assert get(local, "/static/outdir/secret.txt") == app.NOT_FOUND
    for name in ("inside.txt", "alias.txt"):
        served = get(local, f"/static/{name}")
        assert isinstance(served, http.Response) and served.body == b"public"


def test_julia_is_a_compute_effect_giving_a_pgm_image(the_app: app.App) -> None:
    effect = get(the_app, "/julia?ms=2")
    assert isinstance(effect, app.Compute)
    response = effect.then(effect.fn(*effect.args))
    width, height = effect.args
    assert response.status == 200 and response.content_type == "image/x-portable-graymap"
    assert response.body.startswith(b"P5\n%d %d\n255\n" % (width, height))
    assert len(response.body) == len(b"P5\n%d %d\n255\n" % (width, height)) + width * height


def test_upstream_is_a_wait_effect_of_the_asked_length(the_app: app.App) -> None:
    effect = get(the_app, "/upstream?ms=50")
    assert isinstance(effect, app.Wait)
    assert effect.seconds == pytest.approx(0.05) and effect.then.status == 200


@pytest.mark.parametrize("query", ["", "ms=0", "ms=-1", "ms=10001", "ms=abc", "ms=1&ms=2", "ms=nan"])
@pytest.mark.parametrize("route", ["/julia", "/upstream"])
def test_costs_outside_the_cap_are_refused_with_400(the_app: app.App, route: str, query: str) -> None:
    response = get(the_app, f"{route}?{query}")
    assert isinstance(response, http.Response) and response.status == 400


def test_other_methods_get_405_and_unknown_paths_404(the_app: app.App) -> None:
    assert get(the_app, "/", method="POST").status == 405  # type: ignore[union-attr]
    assert get(the_app, "/nowhere") == app.NOT_FOUND
