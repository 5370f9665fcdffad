"""The pages' routes in Airflow's real API server app (no browser): login required, real data shown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

import pytest

from airflow_mcsched.ui.nav import UI_PREFIX, external_views
from airflow_mcsched.ui.templating import money, when
from tests.ui.fleet_data import HISTORY_DAYS, NIGHTLY, TODAY_RUN, expected_cost

# the API server app reads the session's SQLite DB, so the data goes there
pytestmark = pytest.mark.parametrize("metadata_session_factory", ["sqlite"], indirect=True)
PAGES = ("/fleet", "/placements", "/cost", "/placements/of-task?dag_id=d&run_id=r&task_id=t")


def page(api_client, user_tokens, path: str, user: str = "viewer"):
    r = api_client.get(UI_PREFIX + path, headers={"Authorization": f"Bearer {user_tokens[user]}"})
    assert r.status_code == 200, r.text[:500]
    assert r.headers["content-type"].startswith("text/html")
    return r.text


@pytest.mark.parametrize("path", PAGES)
def test_without_a_login_every_page_sends_the_browser_to_airflows_login(api_client, path, pages_data):
    r = api_client.get(UI_PREFIX + path, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"].startswith("/auth/login?next=")
    assert unquote(r.headers["location"]).endswith(UI_PREFIX + path)  # and back here afterwards
    assert "cloud-h100" not in r.text


def test_a_forged_or_expired_cookie_gets_no_data_either(api_client, pages_data):
    api_client.cookies.set("_token", "not-a-valid-jwt")
    try:
        r = api_client.get(f"{UI_PREFIX}/fleet", follow_redirects=False)
    finally:
        api_client.cookies.clear()
    assert r.status_code == 303 and r.headers["location"].startswith("/auth/login")


def test_the_ui_login_cookie_opens_the_pages(api_client, user_tokens, pages_data):
    api_client.cookies.set("_token", user_tokens["viewer"])
    try:
        r = api_client.get(f"{UI_PREFIX}/fleet")
    finally:
        api_client.cookies.clear()
    assert r.status_code == 200 and "signed in as viewer" in r.text


def test_fleet_shows_clusters_pools_prices_and_reserved_gpus(api_client, user_tokens, pages_data):
    html = page(api_client, user_tokens, "/fleet")
    for text in ("onprem-a100", "cloud-h100", "baremetal-t4", "h100-spot", "NVIDIA-L4", "healthy", "4.10", "1.90"):
        assert text in html
    # today's admitted evaluate step holds one T4 (no pod seen yet): 12 T4 GPUs, 1 reserved, 11 free
    t4_row = html.split("<td>Tesla-T4</td>", 1)[1].split("</tr>", 1)[0]
    assert [cell.split(">")[-1] for cell in t4_row.split("</td>")[:3]] == ["12", "1", "11"]


def test_placements_lists_every_attempt_by_run_with_cluster_and_cost(api_client, user_tokens, pages_data):
    html = page(api_client, user_tokens, "/placements")
    assert TODAY_RUN in html and "nightly_training" in html
    assert html.count('<tr class="group">') == 1 + HISTORY_DAYS
    assert "baremetal-t4 / t4" in html
    assert money(NIGHTLY[0].cost()) in html  # one nightly pretrain


def test_placements_filter_by_team(api_client, user_tokens, pages_data):
    html = page(api_client, user_tokens, "/placements?team=vision")
    assert "detector" in html and "giant" in html
    assert "pretrain" not in html and "evaluate" not in html


def test_a_placement_page_shows_the_chosen_pool_its_score_parts_and_runners_up(api_client, user_tokens, pages_data):
    train = pages_data["train"]
    html = page(api_client, user_tokens, f"/placements/{train['id']}")
    assert f"<b>{train['cluster']}</b> / {train['pool']}" in html
    for part in train["explanation"]["chosen"]["parts"]:
        assert f"<td>{part['name']}</td>" in html
    runner_up = train["explanation"]["runners_up"][0]
    assert f"<td>{runner_up['cluster']} / {runner_up['pool']}</td>" in html
    assert '<a href="/dags/retraining_pipeline/runs/manual__ui-test/tasks/train" target="_top">' in html


def test_a_waiting_placement_shows_each_rejected_cluster_with_its_reason(api_client, user_tokens, pages_data):
    giant = pages_data["giant"]
    assert giant["state"] == "pending"
    html = page(api_client, user_tokens, f"/placements/{giant['id']}")
    assert "not placed" in html
    rejected = {(r["cluster"], r["pool"]): r["reason"] for r in giant["explanation"]["rejections"]}
    assert rejected[("onprem-a100", "a100-ib")] == "DoesNotFitOnOneNode"
    for (cluster, pool), reason in rejected.items():
        assert f'<tr><td>{cluster}</td><td>{pool}</td><td><code class="reason">{reason}</code></td>' in html


def test_the_extra_links_address_lands_on_the_tasks_latest_placement(api_client, user_tokens, pages_data):
    headers = {"Authorization": f"Bearer {user_tokens['viewer']}"}
    found = api_client.get(
        f"{UI_PREFIX}/placements/of-task?dag_id=retraining_pipeline&run_id={TODAY_RUN}&task_id=train",
        headers=headers,
        follow_redirects=False,
    )
    assert found.status_code == 303
    assert found.headers["location"] == f"{UI_PREFIX}/placements/{pages_data['train']['id']}"
    none_yet = api_client.get(
        f"{UI_PREFIX}/placements/of-task?dag_id=retraining_pipeline&run_id={TODAY_RUN}&task_id=nope",
        headers=headers,
        follow_redirects=False,
    )
    assert none_yet.headers["location"].startswith(f"{UI_PREFIX}/placements?dag_id=retraining_pipeline")


def test_an_unknown_placement_is_a_404_page(api_client, user_tokens, pages_data):
    r = api_client.get(f"{UI_PREFIX}/placements/nope", headers={"Authorization": f"Bearer {user_tokens['viewer']}"})
    assert r.status_code == 404 and "There is no placement nope" in r.text


def test_cost_shows_each_teams_hand_computed_cost_and_charts(api_client, user_tokens, pages_data):
    html = page(api_client, user_tokens, "/cost?days=7")
    for team in ("nlp", "vision", "recsys"):
        assert money(expected_cost(team)) in html, team
    assert 'aria-label="cost per day by team"' in html and 'aria-label="cost per team"' in html


def test_the_plugin_lists_the_pages_in_airflows_plugin_api(api_client, user_tokens, pages_data):
    r = api_client.get("/api/v2/plugins", headers={"Authorization": f"Bearer {user_tokens['viewer']}"})
    ours = next(p for p in r.json()["plugins"] if p["name"] == "mcsched")
    listed = {(v["name"], v["href"], v["destination"], v["url_route"]) for v in ours["external_views"]}
    assert listed == {(v["name"], v["href"], "nav", v["url_route"]) for v in external_views()}
    for view in ours["external_views"]:
        page(api_client, user_tokens, view["href"].removeprefix(UI_PREFIX))


def _retention(api_client, user_tokens) -> dict:
    r = api_client.get("/mcsched/api/v1/retention", headers={"Authorization": f"Bearer {user_tokens['viewer']}"})
    assert r.status_code == 200, r.text
    return r.json()


def test_without_ages_the_pages_say_history_is_kept_forever(api_client, user_tokens, pages_data, monkeypatch):
    for key in ("PLACEMENT_RETENTION", "AUDIT_RETENTION"):
        monkeypatch.delenv(f"AIRFLOW__MCSCHED__{key}", raising=False)
    status = _retention(api_client, user_tokens)
    assert status["placements_kept_seconds"] is None and status["audit_kept_seconds"] is None
    assert status["purge_interval_seconds"] == 0 and status["last_purges"] == []
    for path in ("/placements", "/cost"):
        assert "History is kept forever" in page(api_client, user_tokens, path)


def test_the_pages_say_how_long_history_is_kept_and_what_the_last_purge_deleted(
    api_client, user_tokens, pages_data, monkeypatch
):
    from airflow_mcsched.governance.retention import Retention
    from airflow_mcsched.service.retention_store import purge_now

    def attempts(html: str) -> int:
        return int(html.split(" placement attempts", 1)[0].rsplit(">", 1)[1])

    listed = attempts(page(api_client, user_tokens, "/placements"))
    # a purge by a shorter age than the configured one (an operator's `mcsched purge`), then the ages
    report = purge_now(Retention(placements=timedelta(days=2)), actor="ops")
    assert report.placements > 0  # the nightly runs of HISTORY_DAYS - 2 days and more ago
    monkeypatch.setenv("AIRFLOW__MCSCHED__PLACEMENT_RETENTION", "180d")
    monkeypatch.setenv("AIRFLOW__MCSCHED__AUDIT_RETENTION", "52w")
    monkeypatch.setenv("AIRFLOW__MCSCHED__RETENTION_INTERVAL_SECONDS", "3600")
    before = datetime.now(UTC)
    status = _retention(api_client, user_tokens)
    assert status["placements_kept_seconds"] == 180 * 86400 and status["audit_kept_seconds"] == 52 * 7 * 86400
    ended_before = datetime.fromisoformat(status["placements_ended_before"])
    assert before - timedelta(days=180, seconds=5) < ended_before <= datetime.now(UTC) - timedelta(days=180)
    assert status["purge_interval_seconds"] == 3600
    [last] = status["last_purges"]
    assert last["actor"] == "ops" and last["details"]["placements"] == report.placements

    html = page(api_client, user_tokens, "/placements")
    assert attempts(html) == listed - report.placements
    note = html.split('id="history-kept">', 1)[1].split("</p>", 1)[0]
    assert "Placements are kept 180 days after they end" in note
    assert f"ended before {when(ended_before)[:13]}" in note  # to the hour: the page read its own clock
    assert "The audit trail is kept 52 weeks" in note and "purges every 1 hour" in note
    assert f"by ops, deleted {report.placements} placements and 0 audit entries" in note
    assert "and so is their cost" not in note
    assert "and so is their cost" in page(api_client, user_tokens, "/cost")


def test_a_purge_interval_of_zero_says_only_the_command_purges(api_client, user_tokens, pages_data, monkeypatch):
    monkeypatch.setenv("AIRFLOW__MCSCHED__PLACEMENT_RETENTION", "90d")
    monkeypatch.delenv("AIRFLOW__MCSCHED__AUDIT_RETENTION", raising=False)
    monkeypatch.setenv("AIRFLOW__MCSCHED__RETENTION_INTERVAL_SECONDS", "0")
    note = page(api_client, user_tokens, "/placements").split('id="history-kept">', 1)[1].split("</p>", 1)[0]
    assert "Placements are kept 90 days" in note and "The audit trail is kept forever" in note
    assert "No API server purges on its own" in note and "nothing has been purged yet" in note
