"""The accessibility check itself: it must find what it is there to find, on a page built to fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_support import assert_accessible, violations

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]

BAD = '<html><body><input type="file"><img src="x.png"><button></button></body></html>'
GOOD = (
    '<html lang="en"><head><title>ok</title></head><body><main><h1>ok</h1>'
    '<label for="f">Notebook</label><input id="f" type="file"></main></body></html>'
)


@pytest.fixture(scope="module")
def page():
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield browser.new_page()
        browser.close()


def test_finds_unlabelled_inputs_images_and_buttons(page):
    page.set_content(BAD)
    found = {v["id"] for v in violations(page)}
    assert {"label", "image-alt", "button-name"} <= found
    with pytest.raises(AssertionError, match="label"):
        assert_accessible(page, where="the bad page")


def test_passes_a_labelled_page(page):
    page.set_content(GOOD)
    assert_accessible(page, where="the good page")
