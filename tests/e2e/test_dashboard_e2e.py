"""The Memory tab in a real `hermes dashboard` (hermes-agent 0.19.0), driven through Debian's headless Chromium.

One story, in order, on one Hermes root: `automem install` puts the tab in; memories in English and Chinese are
added with the CLI (one of them updated, so it has a history); the dashboard is started; the backend refuses calls
without the dashboard's session token; in the browser the tab lists the memories, a search finds one, the detail
shows its text and chain, pin, forget and edit change the store (checked with the `automem` CLI), the keyboard
reaches everything, and a broken setting shows as one readable line in the tab. The test leaves a screenshot of
the tab at docs/images/memory-tab.png.
"""

from __future__ import annotations

import time

import pytest

from tests.support.dashboard import REPO_SCREENSHOT, Dashboard, browser_missing, chromium_driver, copy_if_changed
from tests.support.hermes import HermesRoot, find_hermes, poll

pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(find_hermes() is None, reason="hermes-agent is not installed"),
              pytest.mark.skipif(browser_missing() is not None, reason=browser_missing() or "")]

API = "/api/plugins/automem"
VIM = "The user prefers vim and writes PEP8 code"
TEA = "用户住在杭州,喜欢喝龙井茶"  # as stored: NFKC folds the full-width comma
RULE = "Always answer in British English"
OLD = "项目统一用Python 3.11"
NEW = "项目改用Python 3.12"
FIXED = "项目改用Python 3.13"


def memories(root: HermesRoot, *args: str) -> dict[str, dict]:
    return {m["id"]: m for m in root.automem_json("list", *args)}


def add(root: HermesRoot, text: str, *args: str) -> dict:
    [decision] = root.automem_json("add", text, "--no-judge", *args)
    return decision


@pytest.fixture
def root(tmp_path) -> HermesRoot:
    r = HermesRoot.create(tmp_path, "http://127.0.0.1:9/v1",
                          extra_config="automem:\n  extract_backend: rules\n")  # no LLM is ever asked here
    return r


def test_the_memory_tab_end_to_end(root, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    # -- installed by `automem install`, with memories in two languages and one update ---------------------------
    root.automem("install", "--no-pip").check()
    assert (root.root / "plugins" / "automem" / "dashboard" / "manifest.json").is_file()
    vim = add(root, VIM)["id"]
    time.sleep(1.1)  # seconds apart: the list is newest first
    tea = add(root, TEA)["id"]
    time.sleep(1.1)
    rule = add(root, RULE, "--wing", "instruction")["id"]
    old = add(root, OLD, "--wing", "instruction")["id"]
    time.sleep(1.1)
    update = add(root, NEW, "--wing", "instruction")
    assert update["decision"] == "update" and update["matched_id"] == old
    new = update["id"]

    with Dashboard(root) as dash:
        # -- the tab is served, and its backend wants the session token ------------------------------------------
        status, plugins = dash.get("/api/dashboard/plugins", token="")
        assert status == 200 and [p["tab"]["path"] for p in plugins if p["name"] == "automem"] == ["/memory"]
        for token in ("", "not-the-token"):
            assert dash.get(f"{API}/memories", token=token)[0] == 401
            assert dash.post(f"{API}/memories/{tea}/forget", {"confirm": tea}, token=token)[0] == 401
        assert tea in memories(root)  # the refused forget changed nothing
        status, page = dash.get(f"{API}/memories")
        assert status == 200 and [m["id"] for m in page["items"]] == [new, rule, tea, vim]

        driver = chromium_driver()
        try:
            wait = WebDriverWait(driver, 60)

            def texts(selector: str) -> list[str]:  # read in one script: React may replace the nodes meanwhile
                return driver.execute_script("return Array.from(document.querySelectorAll(arguments[0]))"
                                             ".map(e => e.innerText.trim())", selector)

            def rows() -> list[str]:
                return texts(".automem-row .automem-row-text")

            def row(text: str):
                return driver.find_element(By.XPATH, f"//button[contains(@class, 'automem-row')][.//span[contains("
                                                     f"., '{text}')]]")

            def detail_text() -> str:
                found = texts("[data-testid=automem-detail-text]")
                return found[0] if found else ""

            # -- the list -------------------------------------------------------------------------------------
            driver.get(dash.url + "/memory")
            wait.until(lambda d: len(rows()) == 4)
            assert rows() == [NEW, RULE, TEA, VIM]
            assert driver.find_elements(By.CSS_SELECTOR, "a[href='/memory']"), "no Memory tab in the navigation"
            # -- search: the agent's recall --------------------------------------------------------------------
            box = driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-search]")
            box.send_keys("龙井茶", Keys.ENTER)
            wait.until(lambda d: "龙井茶" in "".join(texts("[data-testid=automem-summary]")))
            assert rows()[0] == TEA
            box.send_keys(Keys.ESCAPE)  # back to the list
            wait.until(lambda d: len(rows()) == 4)
            # -- the detail: text, provenance, the chain it replaced -------------------------------------------
            row(NEW).click()
            wait.until(lambda d: detail_text() == NEW)
            history = texts("[data-testid=automem-history]")[0]
            assert OLD in history
            detail = texts("[data-testid=automem-detail]")[0]
            assert "not recorded" in detail and new in detail and "cli" in detail
            # -- pin, checked through the CLI ------------------------------------------------------------------
            driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-pin]").click()
            wait.until(lambda d: texts("[data-testid=automem-pin]") == ["Unpin"])
            assert memories(root)[new]["pinned"] == 1
            # the screenshot for the docs: English and Chinese memories, one open with the value it replaced
            shot = tmp_path / "memory-tab.png"
            driver.save_screenshot(str(shot))
            copy_if_changed(shot, REPO_SCREENSHOT)
            # -- the keyboard: "/" to search, the arrows along the list, Enter opens, Escape closes -------------
            driver.find_element(By.TAG_NAME, "body").send_keys("/")
            assert driver.switch_to.active_element.get_attribute("data-testid") == "automem-search"
            row(RULE).send_keys(Keys.ARROW_DOWN)
            assert driver.switch_to.active_element.get_attribute("data-memory-id") == tea
            driver.switch_to.active_element.send_keys(Keys.ENTER)
            wait.until(lambda d: detail_text() == TEA)
            focused = driver.switch_to.active_element
            assert focused.get_attribute("data-testid") == "automem-detail"  # the focus moved into the detail
            focused.send_keys(Keys.ESCAPE)
            wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "[data-testid=automem-detail]"))
            assert driver.switch_to.active_element.get_attribute("data-memory-id") == tea  # and back to its row
            # -- forget, with its confirmation, checked through the CLI ----------------------------------------
            row(TEA).click()
            wait.until(lambda d: detail_text() == TEA)
            driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-forget]").click()
            wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "[data-testid=automem-confirm]")))
            assert tea in memories(root)  # asking is not forgetting
            driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-confirm-forget]").click()
            wait.until(lambda d: TEA not in rows() and len(rows()) == 3)
            assert tea not in memories(root)
            gone = memories(root, "--all")[tea]
            assert gone["status"] == "forgotten" and gone["text"] is None
            assert not driver.find_elements(By.CSS_SELECTOR, "[data-testid=automem-error]")
            # -- edit: a correction through `automem edit` (the write path's checks), checked through the CLI ---
            row(NEW).click()
            wait.until(lambda d: detail_text() == NEW)
            driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-edit]").click()
            area = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "[data-testid=automem-edit-text]")))
            area.send_keys(Keys.CONTROL, "a")
            area.send_keys(FIXED)
            driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-edit-save]").click()
            wait.until(lambda d: detail_text() == FIXED)
            events = texts("[data-testid=automem-event]")
            assert [e.split(" · ")[0] for e in events][-2:] == ["pinned", "edited"], events
            listed = memories(root)
            [fixed] = [m for m in listed.values() if m["text"] == FIXED]
            assert fixed["pinned"] == 1 and new not in listed  # the pin goes with the correction
            assert memories(root, "--all")[new]["superseded_by"] == fixed["id"]
            # ...and a text `automem add` would refuse changes nothing: one line in the tab
            driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-edit]").click()
            area = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "[data-testid=automem-edit-text]")))
            area.send_keys(Keys.CONTROL, "a")
            area.send_keys("短")
            driver.find_element(By.CSS_SELECTOR, "[data-testid=automem-edit-save]").click()
            wait.until(lambda d: "not changed" in "".join(texts("[data-testid=automem-error]")))
            assert [m["text"] for m in memories(root).values() if m["id"] == fixed["id"]] == [FIXED]
            # -- a broken setting is a readable line in the tab, not a blank page -----------------------------
            config = root.config_path()
            good = config.read_text(encoding="utf-8")
            config.write_text(good.replace("extract_backend: rules", "extract_backend: rules\n  recall_pool: lots"),
                              encoding="utf-8")
            driver.refresh()
            wait.until(lambda d: "settings cannot be used" in "".join(texts("[data-testid=automem-error]")))
            assert "recall_pool" in texts("[data-testid=automem-error]")[0]
            assert texts("[data-testid=automem-tab]"), "the tab itself is still there"
            config.write_text(good, encoding="utf-8")
        finally:
            driver.quit()
    poll(lambda: dash.proc is None, deadline_s=5, what="the dashboard stopped")
