"""A private team's placements, report lines and audit entries are hidden from other teams.

Against Airflow's real API server app (in process, SQLite) and its real login: people log in
through `/auth/token` with SimpleAuthManager. The hand-computed lineage has teams team-a, team-b
and team-c; the policy makes team-b private with alice as its member and carol as an admin.
"""

from __future__ import annotations

import json
import os

import pytest

from airflow_mcsched.decision import Policy, PolicyError
from airflow_mcsched.service.auth import Caller
from airflow_mcsched.service.policy_source import load_policy_file
from airflow_mcsched.service.task_tokens import TaskIdentity
from airflow_mcsched.service.visibility import EVERYTHING, PRIVATE_GROUP, Visibility, visibility_for
from tests.governance.lineage_cases import A100, DAY, H100, NOW, at
from tests.reliability.api_state import bearer

WINDOW = {"since": DAY.isoformat(), "until": NOW.isoformat()}
PEOPLE = {"alice": "viewer", "bob": "viewer", "carol": "viewer", "dave": "user"}
"""alice: in team-b; bob: in public team-a only; carol: a policy admin; dave: Airflow lets him edit every DAG."""

POLICY = """
teams:
  team-b: {members: [alice], private: true}
  team-a: {members: [bob]}
admins: [carol]
quotas:
  - {team: team-a, nominal: {"*": 8}}
  - {team: team-b, nominal: {"*": 4}}
"""
INSIDERS = ("alice", "carol", "dave", "admin")
OUTSIDERS = ("bob", "viewer")


@pytest.fixture(scope="module")
def tokens(api_client, user_tokens, airflow_home) -> dict[str, str]:
    """Login tokens of the test users plus alice, bob, carol and dave, each from Airflow's own login
    endpoint (the extra users exist in Airflow's user list only while they log in)."""
    passwords = airflow_home / "passwords.json"
    saved = passwords.read_text()
    users = ",".join([os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"], *(f"{u}:{r}" for u, r in PEOPLE.items())])
    found = dict(user_tokens)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", users)
        passwords.write_text(json.dumps(json.loads(saved) | {u: f"{u}-pass" for u in PEOPLE}))
        try:
            for user in PEOPLE:
                r = api_client.post("/auth/token", json={"username": user, "password": f"{user}-pass"})
                assert r.status_code == 201, r.text
                found[user] = r.json()["access_token"]
        finally:
            passwords.write_text(saved)
    return found


@pytest.fixture
def policy_file(tmp_path, monkeypatch):
    """Write the policy in force (`[mcsched] policy_file`)."""

    def write(text: str) -> None:
        path = tmp_path / "policy.yaml"
        path.write_text(text)
        monkeypatch.setenv("AIRFLOW__MCSCHED__POLICY_FILE", str(path))

    return write


@pytest.fixture
def private_b(api_client, airflow_lineage, policy_file):
    """The lineage, an audit entry per placement event below, two held reservations, team-b private."""
    from airflow.utils.session import create_session

    from airflow_mcsched.decision import Reservation
    from airflow_mcsched.service.cluster_store import audit
    from airflow_mcsched.service.placement_mapping import reservation_row
    from airflow_mcsched.view import NodeAllocation

    def held(placement: str, team: str, gpu_type: str) -> Reservation:
        return Reservation(
            id=f"r-{placement}", request_id=placement, cluster="c1", pool="a100", team=team, priority=100,
            pods=(NodeAllocation(node="n1", gpus=2),), interruptible=False, price_per_gpu_hour=2.0,
            granted_at=at(9), expires_at=at(9.25), expected_end=at(12), gpu_type=gpu_type,
        )  # fmt: skip

    with create_session() as session:
        audit(session, "tests", "placement.admit", "placement", "p1", cluster="c1")
        audit(session, "tests", "placement.admit", "placement", "p3", cluster="c1")
        audit(session, "mcsched-reclaim", "reservation.reclaim", "placement", "p4", gpus_freed=8)
        audit(session, "tests", "cluster.create", "cluster", "c1")
        session.add_all([reservation_row(held("p3", "team-b", A100)), reservation_row(held("p5", "team-c", H100))])
    policy_file(POLICY)


@pytest.fixture
def get(api_client, tokens):
    def call(user: str, path: str, **params):
        return api_client.get(f"/mcsched{path}", params=params, headers=bearer(tokens[user]), follow_redirects=False)

    return call


# -- placements ---------------------------------------------------------------------------------


@pytest.mark.parametrize("user", OUTSIDERS)
def test_an_outsider_gets_404_for_a_private_teams_placement_as_for_a_missing_one(private_b, get, user):
    hidden, missing = get(user, "/api/v1/placements/p3"), get(user, "/api/v1/placements/nope")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["detail"] == "no placement 'p3'"
    assert get(user, "/api/v1/placements/p1").status_code == 200  # team-a is not private


@pytest.mark.parametrize("user", INSIDERS)
def test_members_and_admins_read_a_private_teams_placement(private_b, get, user):
    r = get(user, "/api/v1/placements/p3")
    assert r.status_code == 200, r.text
    assert r.json()["team"] == "team-b"


@pytest.mark.parametrize(("user", "expected"), [("bob", ["p1", "p2", "p5"]), ("alice", ["p3", "p1", "p4", "p2", "p5"])])
def test_the_placement_list_leaves_out_what_the_reader_may_not_see(private_b, get, user, expected):
    assert [p["id"] for p in get(user, "/api/v1/placements").json()["placements"]] == expected
    asked = get(user, "/api/v1/placements", team="team-b").json()["placements"]
    assert [p["id"] for p in asked] == [i for i in expected if i in ("p3", "p4")]


def test_without_private_teams_everyone_reads_everything(api_client, airflow_lineage, policy_file, get):
    policy_file("teams: {team-b: {members: [alice]}}\n")  # listed, not private
    assert get("bob", "/api/v1/placements/p3").status_code == 200
    assert len(get("viewer", "/api/v1/placements").json()["placements"]) == 5


# -- reports ------------------------------------------------------------------------------------


def _cost(get, user: str, **params) -> dict:
    r = get(user, "/api/v1/reports/cost", **(WINDOW | params))
    assert r.status_code == 200, r.text
    return r.json()


def test_an_outsiders_cost_report_folds_the_private_team_into_one_line_with_honest_totals(private_b, get):
    mine, theirs = _cost(get, "bob"), _cost(get, "alice")
    assert [(r["team"], r["cost"]) for r in mine["rows"]] == [("team-a", 14.0), (PRIVATE_GROUP, 8.0), ("team-c", 1.0)]
    assert [(r["team"], r["cost"]) for r in theirs["rows"]] == [("team-a", 14.0), ("team-b", 8.0), ("team-c", 1.0)]
    assert mine["total"] == theirs["total"] == {"gpu_hours": 10.0, "cost": 23.0, "placements": 4}
    by_project = _cost(get, "bob", group_by="team,project,dag")["rows"]
    assert {"team": PRIVATE_GROUP, "project": PRIVATE_GROUP, "dag": PRIVATE_GROUP,
            "gpu_hours": 4.0, "cost": 8.0, "placements": 1} in by_project  # fmt: skip


def test_a_report_filtered_by_team_or_project_leaves_the_private_team_out(private_b, get):
    assert _cost(get, "bob", team="team-b")["total"] == {"gpu_hours": 0.0, "cost": 0.0, "placements": 0}
    assert _cost(get, "alice", team="team-b")["total"] == {"gpu_hours": 4.0, "cost": 8.0, "placements": 1}
    assert _cost(get, "bob", project="proj-x")["total"]["cost"] == 6.0  # team-a's part of proj-x only
    assert _cost(get, "alice", project="proj-x")["total"]["cost"] == 14.0
    assert get("bob", "/api/v1/reports/waiting", team="team-b", **WINDOW).json()["teams"] == []


def test_series_waiting_top_and_utilisation_for_an_outsider(private_b, get):
    series = get("bob", "/api/v1/reports/cost/series", **WINDOW).json()
    assert {s["key"] for s in series["series"]} == {"team-a", PRIVATE_GROUP, "team-c"}
    waiting = {t["team"]: t for t in get("bob", "/api/v1/reports/waiting", **WINDOW).json()["teams"]}
    assert set(waiting) == {"team-a", PRIVATE_GROUP, "team-c"} and waiting[PRIVATE_GROUP]["pending"] == 1
    top = get("bob", "/api/v1/reports/top", by="project", n=10, **WINDOW).json()
    assert (top["rows"][0]["project"], top["rows"][0]["cost"]) in {(PRIVATE_GROUP, 8.0), ("proj-y", 8.0)}
    assert {r["project"]: r["cost"] for r in top["rows"]}["proj-x"] == 6.0
    util = get("bob", "/api/v1/reports/utilisation", **WINDOW).json()  # per cluster: nothing to hide
    assert {c["cluster"]: c["used_gpu_hours"] for c in util["clusters"]} == {"c1": 7.0, "c2": 3.0}


def test_quota_hides_the_private_teams_entries_but_counts_its_gpus(private_b, get):
    def lines(user):
        quotas = get(user, "/api/v1/reports/quota").json()["quotas"]
        return [(q["team"], q["gpu_type"], q["used"], q["nominal"]) for q in quotas]

    assert lines("bob") == [("team-a", "*", 0.0, 8.0), (PRIVATE_GROUP, A100, 2.0, None), ("team-c", H100, 2.0, None)]
    assert lines("alice") == [("team-a", "*", 0.0, 8.0), ("team-b", "*", 2.0, 4.0), ("team-c", H100, 2.0, None)]


def test_reclaim_lists_only_reservations_the_reader_may_see(private_b, get):
    def placements(user):
        return sorted(c["placement_id"] for c in get(user, "/api/v1/reclaim").json()["reservations"])

    assert placements("bob") == ["p5"]
    assert placements("alice") == ["p3", "p5"]


@pytest.mark.parametrize("user", OUTSIDERS)
def test_no_report_names_the_private_team_to_an_outsider(private_b, get, user):
    windowed = ["/reports/cost", "/reports/cost/series", "/reports/waiting", "/reports/top"]
    now = ["/reports/quota", "/reports/capacity", "/reclaim", "/audit", "/placements", "/retention"]
    for path, params in [(p, WINDOW) for p in windowed] + [(p, {}) for p in now]:
        r = get(user, f"/api/v1{path}", **params)
        assert r.status_code == 200 and "team-b" not in r.text, (path, r.text)
    assert "team-b" in get("alice", "/api/v1/reports/cost", **WINDOW).text


# -- audit --------------------------------------------------------------------------------------


def _audit(get, user: str, **params) -> list[str]:
    """Every entry's subject, following the cursor page by page."""
    subjects, cursor = [], None
    while True:
        page = get(user, "/api/v1/audit", **params, **({"cursor": cursor} if cursor else {})).json()
        subjects += [e["subject"] for e in page["entries"]]
        if (cursor := page["next_cursor"]) is None:
            return subjects


@pytest.mark.parametrize(("user", "expected"), [("bob", ["c1", "p1"]), ("alice", ["c1", "p4", "p3", "p1"]),
                                                ("carol", ["c1", "p4", "p3", "p1"])])  # fmt: skip
def test_audit_entries_about_a_private_teams_placements_are_left_out(private_b, get, user, expected):
    assert _audit(get, user) == expected
    assert _audit(get, user, limit=1) == expected  # paged one by one: the filter is in the query
    assert _audit(get, user, subject="p3") == [s for s in expected if s == "p3"]


# -- pages --------------------------------------------------------------------------------------


def test_the_placements_pages_hide_the_private_team_from_an_outsider(private_b, get):
    assert "team-b" not in get("bob", "/ui/placements").text and "team-a" in get("bob", "/ui/placements").text
    assert "team-b" in get("alice", "/ui/placements").text
    assert get("bob", "/ui/placements/p3").status_code == 404
    assert get("alice", "/ui/placements/p3").status_code == 200
    link = {"dag_id": "d1", "run_id": "r", "task_id": "p3"}
    assert "/ui/placements/p3" not in get("bob", "/ui/placements/of-task", **link).headers["location"]
    assert get("alice", "/ui/placements/of-task", **link).headers["location"].endswith("/ui/placements/p3")


def test_the_cost_page_shows_the_private_team_only_to_its_members(private_b, get):
    bob, alice = get("bob", "/ui/cost", days=366), get("alice", "/ui/cost", days=366)
    assert bob.status_code == alice.status_code == 200
    assert "team-b" not in bob.text and PRIVATE_GROUP in bob.text
    assert "team-b" in alice.text and PRIVATE_GROUP not in alice.text


# -- the rule and the policy --------------------------------------------------------------------


def _person(name: str, role: str = "viewer") -> Caller:
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return Caller(name=f"user:{name}", user=SimpleAuthManagerUser(username=name, role=role))


TASK = TaskIdentity(ti_id="0190f0f0-0000-7000-8000-000000000000", dag_id="d1", run_id="r", task_id="p3")
TWO_PRIVATE = Policy.from_yaml("""
teams:
  team-a: {members: [bob]}
  team-b: {members: [alice], private: true}
  team-c: {members: [alice, frank], private: true}
admins: [carol]
""")  # fmt: skip


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        (_person("alice"), EVERYTHING),  # a member of both private teams
        (_person("frank"), Visibility(frozenset({"team-b"}))),  # a member of team-c only
        (_person("bob"), Visibility(frozenset({"team-b", "team-c"}))),  # in a public team only
        (_person("erin"), Visibility(frozenset({"team-b", "team-c"}))),  # in no team at all
        (_person("carol"), EVERYTHING),  # a policy admin
        (_person("dave", role="user"), EVERYTHING),  # Airflow lets him edit every DAG
        (_person("admin", role="admin"), EVERYTHING),
        (Caller(name="task:x", task=TASK), Visibility(frozenset({"team-b", "team-c"}), own_run=("d1", "r"))),
    ],
)
def test_who_sees_which_private_teams(api_client, caller, expected):
    assert visibility_for(caller, TWO_PRIVATE) == expected


def test_the_default_policy_hides_nothing(api_client):
    assert visibility_for(_person("bob"), Policy()) is EVERYTHING


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("teams: {vision: {members: alice, private: true}}", "teams.vision.members: give a list"),
        ("teams: {vision: {members: [alice], privat: true}}", "teams.vision.privat: unknown field"),
        ("teams: {vision: {private: maybe}}", "teams.vision.private: Input should be a valid boolean"),
        ("teams: [vision]", "teams: Input should be a valid dictionary"),
        ("admins: alice", "admins: give a list of Airflow user names"),
        ("admins: ['']", "admins[0]: String should have at least 1 character"),
    ],
)
def test_a_bad_policy_file_names_the_field(tmp_path, text, field):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as err:
        load_policy_file(path)
    assert field in str(err.value)


def test_a_broken_policy_file_shows_nothing_rather_than_everything(private_b, policy_file, get):
    policy_file("teams: {team-b: {members: [alice], private: yes please}}\n")
    answer = get("bob", "/api/v1/placements/p3")
    assert answer.status_code == 503
    assert "teams.team-b.private" in answer.json()["detail"]
    assert "p3" not in answer.text
