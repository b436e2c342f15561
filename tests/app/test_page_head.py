"""The page the launcher serves (kanon_app.page_head): Streamlit's own, with one script more in its head, or
Streamlit's own unchanged when its files are not as expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from kanon_app import page_head

INDEX = "<!doctype html><html><head><title>app</title><script type=module src=./static/js/index.abc.js></script>" \
        "</head><body><div id=root></div></body></html>"


def _static(root: Path, modules=("PlotlyChart.Ab12_x.js",), index: str = INDEX) -> Path:
    """A folder laid out as Streamlit's static files: index.html, a manifest, static/js with the modules."""
    js = root / "static" / "js"
    js.mkdir(parents=True)
    (js / "index.abc.js").write_text("export const a = 1;")
    for name in modules:
        (js / name).write_text("export default 1;")
    (root / "manifest.json").write_text("{}")
    (root / "index.html").write_text(index)
    return root


def _serves_a_temporary_mirror(static: Path, monkeypatch) -> None:
    """The launcher, given ``static`` as Streamlit's folder, serves a mirror of it from the temporary folder."""
    from streamlit import file_util

    monkeypatch.setattr(file_util, "get_static_dir", lambda: str(static))
    folder = page_head.serve_with_chart_code()
    try:
        assert folder is not None and folder.parent == Path(page_head.tempfile.gettempdir())
        assert page_head.matches(folder, static)
    finally:
        page_head.shutil.rmtree(folder, ignore_errors=True)


def test_the_mirror_serves_the_same_files_and_a_page_with_one_script_more(tmp_path):
    static = _static(tmp_path / "streamlit")
    into = tmp_path / "mirror"
    into.mkdir()
    assert page_head.mirror(static, into)
    page = (into / "index.html").read_text()
    assert page.count(page_head.MARK) == 1
    script = page_head.head_script("PlotlyChart.Ab12_x.js")
    assert page == INDEX.replace("</head>", script + "</head>")  # the head's end, nothing else changed
    assert "import('./static/js/PlotlyChart.Ab12_x.js')" in script and "requestIdleCallback" in script
    for rel in ("manifest.json", "static/js/index.abc.js", "static/js/PlotlyChart.Ab12_x.js"):
        assert (into / rel).read_bytes() == (static / rel).read_bytes()
    assert (into / "static").is_symlink()
    assert (static / "index.html").read_text() == INDEX  # Streamlit's own page untouched


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    """Every test's own cache folder (kanon_app.page_head.cache_root), never the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kanon"


@pytest.mark.parametrize("modules, index", [
    ((), INDEX),  # no chart module
    (("PlotlyChart.a.js", "PlotlyChart.b.js"), INDEX),  # two: which one the element loads is unknown
    (("PlotlyChart.a.js",), "<html><body>no head end</body></html>"),
])
def test_an_unexpected_layout_leaves_streamlits_page(tmp_path, monkeypatch, modules, index):
    from streamlit import file_util

    static = _static(tmp_path / "streamlit", modules, index)
    into = tmp_path / "mirror"
    into.mkdir()
    assert not page_head.mirror(static, into)
    monkeypatch.setattr(file_util, "get_static_dir", lambda: str(static))
    before = set(Path(page_head.tempfile.gettempdir()).glob("kanon-page-*"))
    assert page_head.serve_with_chart_code() is None
    assert file_util.get_static_dir() == str(static)
    assert set(Path(page_head.tempfile.gettempdir()).glob("kanon-page-*")) == before  # no folder left behind
    root = page_head.cache_root()
    assert not root.exists() or not any(root.iterdir())


def test_the_launcher_serves_the_mirror_of_the_installed_streamlit(monkeypatch):
    from streamlit import file_util

    own = Path(file_util.get_static_dir())
    module = page_head.chart_module(own)
    assert module is not None, "this Streamlit has no single Plotly element module: the page would stay as it is"
    monkeypatch.setattr(file_util, "get_static_dir", file_util.get_static_dir)  # restored after the test
    folder = page_head.serve_with_chart_code()
    assert folder is not None and file_util.get_static_dir() == str(folder)
    assert folder.parent == page_head.cache_root()
    assert (folder / "static" / "js" / module).is_file()
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert page_head.head_script(module) in page
    assert page.replace(page_head.head_script(module), "") == (own / "index.html").read_text(encoding="utf-8")


def test_the_mirror_is_made_once_and_found_again_by_later_starts(tmp_path, _cache):
    static = _static(tmp_path / "streamlit")
    first = page_head.cached_mirror(static, _cache)
    assert first is not None and page_head.matches(first, static)
    made = (first / "index.html").stat().st_mtime_ns
    assert page_head.cached_mirror(static, _cache) == first
    assert (first / "index.html").stat().st_mtime_ns == made  # found, not written again
    assert [p.name for p in _cache.iterdir()] == [first.name]  # no working folder left beside it


@pytest.mark.parametrize("spoil", ["page", "link", "extra", "missing"])
def test_a_mirror_that_does_not_match_is_made_again(tmp_path, _cache, spoil):
    static = _static(tmp_path / "streamlit")
    folder = page_head.cached_mirror(static, _cache)
    if spoil == "page":
        (folder / "index.html").write_text(INDEX)
    elif spoil == "link":
        (folder / "manifest.json").unlink()
        (folder / "manifest.json").symlink_to(tmp_path)
    elif spoil == "extra":
        (folder / "other.js").write_text("alert(1)")
    else:
        (folder / "static").unlink()
    assert not page_head.matches(folder, static)
    assert page_head.cached_mirror(static, _cache) == folder
    assert page_head.matches(folder, static)
    assert [p.name for p in _cache.iterdir()] == [folder.name]


def test_a_new_streamlit_gets_a_mirror_of_its_own(tmp_path, _cache):
    old = page_head.cached_mirror(_static(tmp_path / "a"), _cache)
    new = page_head.cached_mirror(_static(tmp_path / "b", ("PlotlyChart.Cd34_y.js",)), _cache)
    assert old != new and page_head.matches(old, tmp_path / "a") and page_head.matches(new, tmp_path / "b")


def test_a_cache_that_cannot_be_written_leaves_a_private_temporary_mirror(tmp_path, monkeypatch):
    static = _static(tmp_path / "streamlit")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a file: no folder can be made under it
    assert page_head.cached_mirror(static, page_head.cache_root()) is None
    _serves_a_temporary_mirror(static, monkeypatch)


def test_a_mirror_another_server_made_meanwhile_is_kept(tmp_path, _cache, monkeypatch):
    """Two servers starting at once: the second looked before the first had put its mirror in place, then finds
    it there when its own is ready. It keeps the first's (a server may already serve it) and drops its own."""
    static = _static(tmp_path / "streamlit")
    theirs = page_head.cached_mirror(static, _cache)
    inode = theirs.stat().st_ino
    real, calls = page_head.matches, []

    def not_there_at_first(folder, static_dir, page=None):
        calls.append(folder)
        return len(calls) > 1 and real(folder, static_dir, page)

    monkeypatch.setattr(page_head, "matches", not_there_at_first)
    assert page_head.cached_mirror(static, _cache) == theirs
    assert theirs.stat().st_ino == inode and real(theirs, static)
    assert [p.name for p in _cache.iterdir()] == [theirs.name]


def test_an_account_without_a_home_folder_gets_a_temporary_mirror(tmp_path, monkeypatch):
    static = _static(tmp_path / "streamlit")
    monkeypatch.delenv("XDG_CACHE_HOME")

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(page_head.Path, "home", staticmethod(no_home))
    assert page_head.cache_root() is None
    _serves_a_temporary_mirror(static, monkeypatch)


def test_a_start_removes_the_mirrors_of_a_streamlit_removed_or_updated(tmp_path, _cache):
    removed = page_head.cached_mirror(_static(tmp_path / "gone"), _cache)
    updated_static = _static(tmp_path / "updated")
    updated = page_head.cached_mirror(updated_static, _cache)
    other_static = _static(tmp_path / "other", ("PlotlyChart.Other_1.js",))
    other = page_head.cached_mirror(other_static, _cache)  # another environment's Streamlit, still installed
    page_head.shutil.rmtree(tmp_path / "gone")
    (updated_static / "static" / "js" / "PlotlyChart.Ab12_x.js").rename(
        updated_static / "static" / "js" / "PlotlyChart.New_2.js")  # a new release in the same place
    (_cache / "notes.txt").write_text("not ours")
    (_cache / "other-tool").mkdir()
    current = page_head.cached_mirror(updated_static, _cache)
    assert current not in (removed, updated, other) and page_head.matches(current, updated_static)
    assert not removed.exists() and not updated.exists()
    assert page_head.matches(other, other_static)
    assert sorted(p.name for p in _cache.iterdir()) == sorted([current.name, other.name, "notes.txt", "other-tool"])
    assert page_head.cached_mirror(other_static, _cache) == other  # and the other environment finds its own


def test_a_start_removes_a_folder_left_half_made_long_ago(tmp_path, _cache):
    static = _static(tmp_path / "streamlit")
    kept = page_head.cached_mirror(static, _cache)
    old, young = _cache / ".page-old", _cache / ".page-young"
    for folder in (old, young):
        folder.mkdir()
        (folder / "manifest.json").symlink_to(static / "manifest.json")
    day = page_head.LEFTOVER_SECONDS
    page_head.os.utime(old, (page_head.time.time() - day - 60,) * 2)
    page_head.os.utime(young, (page_head.time.time() - day + 60,) * 2)  # a server may be making it now
    assert page_head.prune(_cache, keep=kept) == [old]
    assert sorted(p.name for p in _cache.iterdir()) == sorted([kept.name, young.name])
