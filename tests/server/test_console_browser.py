"""The web console (/ui) in a real browser: Debian's chromium driven by chromedriver through
selenium, against the real server on a loopback port with the bundled demo model.

Set TM_GUIDE_SCREENSHOT_DIR to keep the screenshots of the main views there (docs/console holds
the ones the README shows); otherwise they go to the test's temporary directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_scenarios import QUERY, add_segment, create_memory

from tm_guide.config import BUNDLED_MODEL

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_S = 60

# Added through the API just before the suggestion; its target says "Fenster" where the demo
# model, unguided, says "Dialog".
TM_SOURCE = "Click OK to close the window."
TM_TARGET = "Klicken Sie auf OK, um das Fenster zu schließen."
TMX = (
    """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en" datatype="plaintext" segtype="sentence" adminlang="en"
 creationtool="test" creationtoolversion="1" o-tmf="test"/>
<body>
"""
    + "".join(
        f"""<tu tuid="u{i}"><tuv xml:lang="en"><seg>Open the dialog number {i}.</seg></tuv>
<tuv xml:lang="de"><seg>Öffnen Sie den Dialog Nummer {i}.</seg></tuv></tu>
"""
        for i in range(200)
    )
    + "</body></tmx>\n"
)


def _browser_missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra)"
    return None


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def driver(downloads: Path) -> Iterator:
    missing = _browser_missing()
    if missing:
        # CI installs the browser (.ci/run), so there a missing one is a failure, not a skip
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1366,900",
        "--lang=en",
    ):
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    browser.set_script_timeout(WAIT_S)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(model=BUNDLED_MODEL, threads=4)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = os.environ.get("TM_GUIDE_SCREENSHOT_DIR")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _screenshot(driver, path: Path) -> None:
    """The whole page (up to 1,600 pixels high) at a laptop's width."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1366, min(max(int(height) + 160, 900), 1600))
    driver.save_screenshot(str(path))
    driver.set_window_size(1366, 900)


def _wait(driver, condition, message: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S).until(condition, message=message)


def _visible(driver, css: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    return _wait(driver, ec.visibility_of_element_located((By.CSS_SELECTOR, css)), css)


def _open(driver, server, key: str | None) -> None:
    """A fresh tab on the console with `key` entered (as a user would paste it)."""
    from selenium.webdriver.common.by import By

    driver.get(f"http://127.0.0.1:{server.client.port}/ui/")
    driver.execute_script("sessionStorage.clear()")
    driver.refresh()
    _wait(
        driver,
        lambda d: d.find_element(By.ID, "server-status").text.startswith("Ready"),
        "the server's status line",
    )
    if key is not None:
        field = driver.find_element(By.ID, "api-key")
        field.send_keys(key)
        driver.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()


def test_a_wrong_key_shows_an_error_not_a_blank_page(driver, server, shots) -> None:
    from selenium.webdriver.common.by import By

    _open(driver, server, "not-a-key")
    alert = _visible(driver, "#error")
    assert "refused this key" in alert.text and "API key" in alert.text, alert.text
    assert driver.execute_script("return sessionStorage.getItem('tm-guide-key')") is None
    # the page is still the page: the try form and tabs are there, no memory is listed
    assert driver.find_element(By.ID, "try-form").is_displayed()
    assert not driver.find_elements(By.CSS_SELECTOR, "#try-memories .pick")
    assert not driver.find_element(By.ID, "result").is_displayed()
    _screenshot(driver, shots / "wrong-key.png")


def test_a_segment_added_through_the_api_is_a_highlighted_piece(driver, server, shots) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    client = server.client
    create_memory(client, "help")
    add_segment(client, "help", "Select the text in the window.", "Wählen Sie den Text im Fenster.")
    add_segment(client, "help", "Click OK to leave.", "Klicken Sie auf OK, um zu verlassen.")
    added = add_segment(client, "help", TM_SOURCE, TM_TARGET)["segment"]

    _open(driver, server, client.token)
    _visible(driver, "#try-memories .pick input")
    source = driver.find_element(By.ID, "source")
    source.send_keys(QUERY)
    source.send_keys(Keys.CONTROL, Keys.ENTER)  # the keyboard way to suggest
    _visible(driver, "#result")
    pieces = _wait(
        driver,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#guided mark.piece"),
        "a highlighted piece in the guided translation",
    )
    from_added = [
        m for m in pieces if f'"id":{added["id"]}' in (m.get_attribute("data-segments") or "")
    ]
    assert from_added, [m.get_attribute("data-segments") for m in pieces]
    mark = from_added[0]
    assert mark.text and all(word in TM_TARGET for word in mark.text.split()), mark.text
    assert f"TM unit #{added['id']} in help" in mark.get_attribute("title")
    assert any(c.startswith("sim-") for c in mark.get_attribute("class").split())

    # the fuzzy match with its CAT percentage, and the unguided twin with the changes marked
    first_match = driver.find_element(By.CSS_SELECTOR, "#matches tbody tr")
    assert TM_SOURCE in first_match.text and "%" in first_match.text
    unguided = driver.find_element(By.ID, "unguided").text
    guided = driver.find_element(By.ID, "guided").text
    changes = driver.find_elements(By.CSS_SELECTOR, "#unguided ins, #unguided del")
    assert unguided and bool(changes) == (unguided.split() != guided.split()), (guided, unguided)
    stages = driver.find_element(By.ID, "timings").text
    for stage in ("retrieval", "pieces", "decoding", "total"):
        assert stage in stages

    # keyboard: focus the piece, Enter shows the TM unit it came from
    mark.send_keys(Keys.ENTER)
    unit = _visible(driver, "#unit")
    _wait(driver, lambda d: TM_TARGET in unit.text, "the unit's target")
    assert TM_SOURCE in unit.text
    _screenshot(driver, shots / "try-segment.png")


def test_a_tmx_import_follows_its_job_to_100_percent(
    driver, server, shots, downloads, tmp_path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    client = server.client
    create_memory(client, "imported")
    tmx = tmp_path / "dialogs.tmx"
    tmx.write_text(TMX, encoding="utf-8")

    _open(driver, server, client.token)
    driver.find_element(By.ID, "tab-memories").click()
    _visible(driver, "#memory-table tbody tr")
    Select(driver.find_element(By.ID, "import-memory")).select_by_visible_text("imported")
    driver.find_element(By.ID, "import-file").send_keys(str(tmx))
    driver.find_element(By.CSS_SELECTOR, "#import-form button[type=submit]").click()
    _wait(
        driver,
        lambda d: (
            d.find_element(By.ID, "import-percent").text == "100%"
            and d.find_element(By.ID, "import-result").text.startswith("Done")
        ),
        "the import's progress at 100%",
    )
    assert driver.find_element(By.ID, "import-progress").get_attribute("value") == "100"
    assert "200 added" in driver.find_element(By.ID, "import-result").text
    rows = driver.find_element(By.ID, "memory-table").text
    assert "imported" in rows and "200" in rows
    stored = client.get("/v1/memories/imported")
    assert stored.json["segment_count"] == 200

    # concordance over what was just imported
    Select(driver.find_element(By.ID, "concordance-memory")).select_by_visible_text("imported")
    driver.find_element(By.ID, "concordance-q").send_keys("number 17")
    driver.find_element(By.CSS_SELECTOR, "#concordance-form button[type=submit]").click()
    table = _visible(driver, "#concordance")
    assert "Öffnen Sie den Dialog Nummer 17." in table.text
    _screenshot(driver, shots / "memories.png")

    # export: the key goes with the request, the TMX arrives as a download
    driver.find_element(By.CSS_SELECTOR, 'button.export[data-memory="imported"]').click()
    exported = downloads / "imported.tmx"
    _wait(
        driver,
        lambda d: exported.exists() and exported.read_bytes().endswith(b"</tmx>\n"),
        "the exported TMX",
    )
    assert exported.read_text(encoding="utf-8").count("<tu ") == 200


def test_the_page_is_served_with_a_strict_content_policy(server) -> None:
    page = server.client.with_token(None).get("/ui/")
    assert page.status == 200 and b"tm-guide console" in page.body
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert server.client.with_token(None).get("/ui/static/console.js").status == 200
    # the page itself holds nothing: every memory still needs a key
    assert server.client.with_token(None).get("/v1/memories").status == 401


def test_every_control_has_a_label_and_the_tabs_follow_the_arrow_keys(driver, server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _open(driver, server, server.client.token)
    unlabelled = driver.execute_script(
        """return [...document.querySelectorAll('input, select, textarea, button')]
             .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
                            && !c.textContent.trim())
             .map((c) => c.outerHTML);"""
    )
    assert unlabelled == []
    tab = driver.find_element(By.ID, "tab-try")
    tab.click()
    tab.send_keys(Keys.ARROW_RIGHT)
    assert driver.find_element(By.ID, "panel-memories").is_displayed()
    assert not driver.find_element(By.ID, "panel-try").is_displayed()
    focused = driver.switch_to.active_element
    assert focused.get_attribute("id") == "tab-memories"
    focused.send_keys(Keys.ARROW_LEFT)
    assert driver.find_element(By.ID, "panel-try").is_displayed()


def test_with_auth_off_a_loopback_browser_needs_no_key(driver, start_server) -> None:
    from selenium.webdriver.common.by import By

    local = start_server(model=BUNDLED_MODEL, extra_env={"TM_GUIDE_AUTH": "off"}, admin=False)
    create_memory(local.client, "mine")
    _open(driver, local, None)
    pick = _visible(driver, "#try-memories .pick label")
    assert pick.text.startswith("mine")
    assert driver.find_element(By.ID, "key-hint").text == ""
    assert not driver.find_element(By.ID, "error").is_displayed()
