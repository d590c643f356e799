"""``iolab.kit.cache``: where the kit keeps what it builds or downloads once."""

from iolab.kit import cache


def test_cache_dir_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "iolab"
    assert (tmp_path / "iolab").is_dir()
