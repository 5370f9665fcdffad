"""The pages in headless Chromium, inside the Airflow UI of a real `airflow api-server` process.

One API server for the module (with the example fleet as virtual clusters that it syncs), four days
of history and today's steps. The browser logs in through Airflow's login page, opens each page from
the Airflow UI, checks the data, and saves the screenshots the README shows (docs/screenshots/).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_mcsched.cli.airflow_stack import AirflowStack
from airflow_mcsched.operators.links import placement_url
from airflow_mcsched.ui.templating import money
from airflow_mcsched.virtual.fleet import VirtualFleet
from tests.ui.browser import chromium_missing, start_chromium
from tests.ui.fleet_data import FLEET, TODAY_RUN, apply_fleet, expected_cost, record_history, submit_today

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASSWORD = "ui-admin-pass"


@dataclass
class UiDeployment:
    stack: AirflowStack
    today: dict[str, dict[str, Any]]


def _session_scope(url: str):
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    maker = sessionmaker(bind=create_engine(url), expire_on_commit=False)

    @contextmanager
    def scope():
        with maker.begin() as session:
            yield session

    return scope


def _wait_until_synced(stack: AirflowStack, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        clusters = stack.api("GET", "/mcsched/api/v1/clusters")["clusters"]
        if len(clusters) == len(FLEET.clusters) and all(c["status"] and c["status"]["healthy"] for c in clusters):
            return
        time.sleep(0.5)
    raise TimeoutError("the API server did not read every cluster")


@pytest.fixture(scope="module")
def ui_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiDeployment]:
    missing = chromium_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    home = tmp_path_factory.mktemp("ui-airflow")
    (home / "dags").mkdir()
    with VirtualFleet.start(FLEET, mode="thread") as fleet:
        stack = AirflowStack(
            home,
            f"sqlite:///{home / 'airflow.db'}",
            home / "dags",
            jwt_secret="ui-tests-" + "k" * 64,
            extra_env={**fleet.connection_env(), "AIRFLOW__MCSCHED__SYNC_INTERVAL_SECONDS": "1"},
            admin_password=PASSWORD,
            components=("api-server",),
        )
        with stack:
            scope = _session_scope(stack.sql_alchemy_conn)
            with scope() as session:
                apply_fleet(session)
            _wait_until_synced(stack)
            record_history(scope, datetime.now(UTC))
            token = stack.token()
            today = submit_today(lambda path, body: stack.api("POST", path, body, token=token))
            yield UiDeployment(stack, today)


@pytest.fixture(scope="module")
def browser(ui_deployment: UiDeployment, tmp_path_factory: pytest.TempPathFactory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


def wait_for(driver, predicate, timeout: float = 20.0, what: str = "the page"):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: predicate(d), message=f"waiting for {what}")


def open_from_menu(driver, menu: str, entry: str, route: str) -> None:
    """Click the UI's menu button until its entry shows (the menu fills in once the plugin list has
    loaded), then the entry, until the browser is on `route`: a click that lands while the UI
    re-renders is lost, so the whole gesture is repeated, never a fixed sleep."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    def arrived(d) -> bool:
        if d.current_url.endswith(route):
            return True
        try:
            entries = [
                e for e in d.find_elements(By.XPATH, f"//*[normalize-space(text())='{entry}']") if e.is_displayed()
            ]
            if entries:
                entries[0].click()
            else:
                for button in d.find_elements(By.XPATH, f"//button[normalize-space(.)='{menu}']")[:1]:
                    button.click()
        except WebDriverException:
            pass  # re-rendered under our feet: try again
        return d.current_url.endswith(route)

    wait_for(driver, arrived, timeout=45.0, what=f"{menu} > {entry} to reach {route}")


def body_text(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def in_plugin_frame(driver, text: str):
    """Switch into the Airflow UI's iframe of our page once it shows `text`."""
    from selenium.webdriver.common.by import By

    def ready(d):
        d.switch_to.default_content()
        frames = d.find_elements(By.TAG_NAME, "iframe")
        if not frames:
            return False
        d.switch_to.frame(frames[0])
        return text in body_text(d)

    wait_for(driver, ready, what=f"{text!r} in the plugin frame")


def screenshot(driver, name: str) -> None:
    driver.switch_to.default_content()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def test_a_page_opened_without_login_goes_through_airflows_login_and_back(ui_deployment, browser):
    from selenium.webdriver.common.by import By

    url = ui_deployment.stack.url
    browser.get(f"{url}/mcsched/ui/fleet")
    wait_for(browser, lambda d: "/auth/login" in d.current_url, what="Airflow's login page")
    assert "onprem-a100" not in browser.page_source
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "input[name=username]"), what="the login form")
    browser.find_element(By.CSS_SELECTOR, "input[name=username]").send_keys("admin")
    browser.find_element(By.CSS_SELECTOR, "input[name=password]").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(browser, lambda d: d.current_url == f"{url}/mcsched/ui/fleet", what="the way back to the page")
    assert "onprem-a100" in body_text(browser)


def test_fleet_from_the_airflow_ui_plugins_menu(ui_deployment, browser):
    browser.get(ui_deployment.stack.url + "/")
    open_from_menu(browser, "Plugins", "GPU Fleet", "/plugin/mcsched-fleet")
    in_plugin_frame(browser, "baremetal-t4")
    text = body_text(browser)
    for cluster in FLEET.clusters:
        assert cluster.name in text
    assert "healthy" in text and "NVIDIA-H100-80GB-HBM3" in text
    screenshot(browser, "fleet")


def test_placements_and_a_waiting_steps_reasons(ui_deployment, browser):
    from selenium.webdriver.common.by import By

    browser.get(f"{ui_deployment.stack.url}/plugin/mcsched-placements")
    in_plugin_frame(browser, TODAY_RUN)
    screenshot(browser, "placements")
    in_plugin_frame(browser, TODAY_RUN)
    browser.find_element(By.LINK_TEXT, "giant").click()
    wait_for(browser, lambda d: "DoesNotFitOnOneNode" in body_text(d), what="the rejection reasons")
    assert "onprem-a100" in body_text(browser)


def test_the_extra_link_lands_on_the_steps_placement_with_its_explanation(ui_deployment, browser):
    stack, train = ui_deployment.stack, ui_deployment.today["train"]
    os.environ["AIRFLOW__API__BASE_URL"] = stack.url
    try:
        link = placement_url("retraining_pipeline", TODAY_RUN, "train")
    finally:
        del os.environ["AIRFLOW__API__BASE_URL"]
    browser.get(link)
    in_plugin_frame(browser, "Runners-up")
    text = body_text(browser)
    assert f"{train['cluster']} / {train['pool']}" in text
    assert train["explanation"]["runners_up"][0]["cluster"] in text
    wait_for(browser, lambda d: f"/mcsched/ui/placements/{train['id']}" in d.current_url, what="the UI address")
    screenshot(browser, "placement")


def test_cost_per_team_and_project_with_charts(ui_deployment, browser):
    browser.get(f"{ui_deployment.stack.url}/plugin/mcsched-cost/mcsched/ui/cost?days=7")
    in_plugin_frame(browser, "Per team and project")
    text = body_text(browser)
    for team in ("nlp", "vision", "recsys"):
        assert money(expected_cost(team)) in text, team
    screenshot(browser, "cost")
