"""Which teams' placements a caller may read: the policy's private teams are hidden from outsiders.

The one place that decides it. A team is private when the policy says so (`teams: {vision:
{members: [alice], private: true}}`); its placements, its lines in the reports and the audit
entries about its placements are then readable by its members, the policy's `admins` and anyone
Airflow lets edit every DAG (who could act on all placements anyway). A task reads the placements
of its own DAG run (the holder of a handed-over placement included), whatever their team.

Reports stay honest: an outsider's report folds the hidden teams' rows into one group named
`other (private)` (team, project and DAG all read so), so totals and per-cluster figures are
unchanged; a report filtered by team or project leaves them out instead, since a filter would
otherwise single one hidden team out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import ColumnElement, Select, and_, not_, select

from airflow_mcsched.decision import Policy, Reservation
from airflow_mcsched.governance.usage import PlacementUsage
from airflow_mcsched.service.tables import PlacementRow

if TYPE_CHECKING:
    from airflow_mcsched.service.auth import Caller

PRIVATE_GROUP = "other (private)"
"""What an outsider's report shows in place of a hidden team's team, project and DAG."""

S = TypeVar("S", bound=Select[Any])


@dataclass(frozen=True)
class Visibility:
    """The private teams a caller may not read (none: sees everything), and for a task its own
    DAG run, whose placements it reads whatever their team."""

    hidden_teams: frozenset[str] = frozenset()
    own_run: tuple[str, str] | None = None

    @property
    def sees_everything(self) -> bool:
        return not self.hidden_teams

    def sees_team(self, team: str) -> bool:
        return team not in self.hidden_teams

    def sees(self, row: PlacementRow) -> bool:
        """May the caller read this placement (its row, its page, its audit entries)?"""
        return self.sees_team(row.team) or (row.dag_id, row.run_id) == self.own_run

    def _hidden(self) -> ColumnElement[bool]:
        """SQL: the placement rows `sees` refuses (only asked when some team is hidden)."""
        hidden = PlacementRow.team.in_(sorted(self.hidden_teams))
        if self.own_run is None:
            return hidden
        dag_id, run_id = self.own_run
        return and_(hidden, not_(and_(PlacementRow.dag_id == dag_id, PlacementRow.run_id == run_id)))

    def placements(self, q: S) -> S:
        """`q` (a select over the placement table) without the placements the caller may not read."""
        return q if self.sees_everything else q.where(not_(self._hidden()))

    def hidden_placement_ids(self) -> Select[tuple[str]] | None:
        """A subquery of the ids of placements the caller may not read; None when there are none."""
        return None if self.sees_everything else select(PlacementRow.id).where(self._hidden())

    def teams(self, q: S) -> S:
        """`q` without the rows of hidden teams (for reports filtered by team or project)."""
        return q if self.sees_everything else q.where(PlacementRow.team.not_in(sorted(self.hidden_teams)))

    def fold_usage(self, usage: PlacementUsage) -> PlacementUsage:
        """A hidden team's usage under the `other (private)` group; its figures unchanged."""
        if self.sees_team(usage.team):
            return usage
        return dataclasses.replace(usage, team=PRIVATE_GROUP, project=PRIVATE_GROUP, dag_id=PRIVATE_GROUP)

    def fold_reservation(self, reservation: Reservation) -> Reservation:
        if self.sees_team(reservation.team):
            return reservation
        return dataclasses.replace(reservation, team=PRIVATE_GROUP)


EVERYTHING = Visibility()
"""What the CLI and in-process jobs see: they hold the metadata DB's credentials anyway."""


def _edits_every_dag(user: Any) -> bool:
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager().is_authorized_dag(method="PUT", user=user)


def visibility_for(caller: Caller, policy: Policy) -> Visibility:
    """What `caller` may read under `policy`: everything unless some team it is not in is private."""
    private = frozenset(name for name, team in policy.teams.items() if team.private)
    if not private:
        return EVERYTHING
    if caller.task is not None:
        return Visibility(private, own_run=(caller.task.dag_id, caller.task.run_id))
    if caller.user is None:
        return Visibility(private)
    name = caller.user.get_name()
    if name in policy.admins or _edits_every_dag(caller.user):
        return EVERYTHING
    return Visibility(frozenset(t for t in private if name not in policy.teams[t].members))
