"""The results pages show each figure at its own width in pixels (never enlarged), read from the PNG itself, with
Sphinx's link to the full-size image (docs/_ext/results.py's ``_image``)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
results = pytest.importorskip("results")


@pytest.mark.parametrize("width", [317, 1100, 1914])
def test_the_shown_width_is_the_pngs_own(tmp_path, width):
    image = pytest.importorskip("PIL.Image")
    path = tmp_path / "figure.png"
    image.new("RGB", (width, 40)).save(path)
    assert results._image(path, "a figure") == (f"```{{figure}} figure.png\n:alt: a figure\n:width: {width}px\n\n"
                                                f"A figure ({width} px wide: select it for the full-size image).\n```")


def test_a_file_that_is_not_a_png_is_refused(tmp_path):
    path = tmp_path / "figure.png"
    path.write_bytes(b"GIF89a" + bytes(30))
    with pytest.raises(ValueError, match="figure.png: not a PNG file"):
        results._image(path, "a figure")


def test_the_css_never_enlarges_a_figure():
    css = (ROOT / "docs/_static/custom.css").read_text(encoding="utf-8")
    rule = css[css.index(".bd-article img {"):]
    assert "max-width: 100%;" in rule.split("}")[0] and "height: auto;" in rule.split("}")[0]
    assert ":width: 100%" not in (ROOT / "docs/_ext/results.py").read_text(encoding="utf-8")


def test_the_screenshots_cover_every_page_at_every_width():
    """docs/screenshots/ holds the first screen of each page take.py covers — its own pages and every results
    page — at each of its widths, and its README names those widths."""
    sys.path.insert(0, str(ROOT / "docs" / "screenshots"))
    take = pytest.importorskip("take")
    shots = ROOT / "docs" / "screenshots"
    pages = [p.removesuffix(".html") for p in take.PAGES] + [f"results/generated/{p}" for p in results.PAGES]
    missing = [f"{p}-{w}" for p in pages for w in take.WIDTHS
               if not (shots / f"{p.replace('/', '_')}-{w}-top.png").is_file()]
    assert not missing, missing
    readme = (shots / "README.md").read_text(encoding="utf-8")
    assert all(f"({w} px)" in readme for w in take.WIDTHS)
