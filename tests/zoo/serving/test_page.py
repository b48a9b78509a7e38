"""The page at `/` in a real browser: Debian's chromium, headless, driven
by selenium through Debian's chromedriver (given by path, so selenium
downloads nothing). `make setup` installs both."""

import os
import shutil

import pytest

from tests.zoo.serving.conftest import NAME
from tests.zoo.serving.http_client import call

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
webdriver = pytest.importorskip("selenium.webdriver")
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(
        "Debian's chromium and chromium-driver are not installed (make setup "
        "installs them)",
        allow_module_level=True,
    )

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

PREDICT = f"/v1/models/{NAME}:predict"
SENTENCES = ["w1 w2 w3.", "w4 w5!"]


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1000,900"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _run(browser, server, text, prefix=None):
    browser.get(server.url + "/")
    if prefix is not None:
        browser.find_element(By.ID, "prefix").send_keys(prefix)
    box = browser.find_element(By.ID, "sentences")
    box.clear()
    box.send_keys(text)
    browser.find_element(By.ID, "run").click()
    WebDriverWait(browser, 60).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-done")
    )


def test_page_shows_greedy_and_beam_translations_with_scores(browser, server, tmp_path):
    _run(browser, server, "\n".join(SENTENCES))
    greedy = call(server.url, "POST", PREDICT, {"instances": SENTENCES})[1]
    beam = call(
        server.url,
        "POST",
        PREDICT,
        {"signature_name": "beam_search", "instances": SENTENCES},
    )[1]
    assert browser.find_element(By.ID, "error").text == ""
    blocks = browser.find_elements(By.CLASS_NAME, "sentence")
    assert [b.find_element(By.CLASS_NAME, "source").text for b in blocks] == SENTENCES
    for block, translation, n_best in zip(
        blocks, greedy["predictions"], beam["predictions"]
    ):
        tables = {
            t.get_attribute("data-signature"): t
            for t in block.find_elements(By.CLASS_NAME, "signature")
        }
        # `tokenize` shows the source ids and whether the sentence was cut.
        assert set(tables) == {"serving_default", "beam_search", "tokenize"}
        shown = tables["serving_default"].find_element(By.CLASS_NAME, "output")
        assert shown.text == translation.strip()
        rows = tables["beam_search"].find_elements(By.CLASS_NAME, "hypothesis")
        assert [r.find_element(By.CLASS_NAME, "output").text for r in rows] == [
            t.strip() for t in n_best["translations"]
        ]
        assert [r.find_element(By.CLASS_NAME, "score").text for r in rows] == [
            f"{s:.4f}" for s in n_best["scores"]
        ]
    assert browser.save_screenshot(str(tmp_path / "page.png"))
    assert (tmp_path / "page.png").stat().st_size > 1000


def test_page_shows_the_servers_error(browser, server):
    _run(browser, server, "   ")  # No sentence: the server refuses [].
    error = browser.find_element(By.ID, "error").text
    assert "'instances' is an empty list" in error and "HTTP 400" in error
    assert browser.find_elements(By.CLASS_NAME, "sentence") == []


def test_a_ctranslate2_page_streams_each_translation_from_its_prefix(browser, tmp_path):
    """CTranslate2's server streams: the page shows, under each sentence,
    the greedy translation read from `:stream`, forced to start with the
    prefix typed in its box."""
    pytest.importorskip("ctranslate2")
    from tests.zoo.serving import exports
    from zoo.serving import ModelServer
    from zoo.serving.ctranslate2_model import CTranslate2Model, CTranslate2Servable

    path = exports.export_translator_ctranslate2(tmp_path)
    server = ModelServer(
        str(path), 1, NAME, port=0, servable_class=CTranslate2Servable
    ).start().load()  # fmt: skip
    try:
        _run(browser, server, "\n".join(SENTENCES), prefix="w9 w8")
        assert browser.find_element(By.ID, "error").text == ""
        shown = [e.text for e in browser.find_elements(By.CLASS_NAME, "streamed")]
        expected = CTranslate2Model(path).translate(
            SENTENCES, beam_width=1, target_prefix="w9 w8"
        )
        assert shown == [t.strip() for t in expected]
        assert all(t.startswith("w9 w8") for t in shown)
    finally:
        server.stop(grace=5)
