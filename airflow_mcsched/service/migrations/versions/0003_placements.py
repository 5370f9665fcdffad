"""Placements (queue, decisions, lineage and cost), reservations with leases, the admission lock.

Revision ID: 0003_placements
Revises: 0002_status_audit
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

from airflow_mcsched.service.tables import UtcDateTime

revision = "0003_placements"
down_revision = "0002_status_audit"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcsched_placement",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("dag_id", sa.String(250), nullable=False),
        sa.Column("run_id", sa.String(250), nullable=False),
        sa.Column("task_id", sa.String(250), nullable=False),
        sa.Column("map_index", sa.Integer(), nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("ti_id", sa.String(36), nullable=True),
        sa.Column("holder_task_id", sa.String(250), nullable=True),
        sa.Column("team", sa.String(128), nullable=False),
        sa.Column("project", sa.String(128), nullable=True),
        sa.Column("priority_class", sa.String(64), nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("interruptible", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("ask", sa.JSON(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("submitted_by", sa.String(250), nullable=False),
        sa.Column("queued_at", UtcDateTime(), nullable=False),
        sa.Column("decided_at", UtcDateTime(), nullable=True),
        sa.Column("admitted_at", UtcDateTime(), nullable=True),
        sa.Column("started_at", UtcDateTime(), nullable=True),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.Column("cluster", sa.String(63), nullable=True),
        sa.Column("pool", sa.String(63), nullable=True),
        sa.Column("nodes", sa.JSON(), nullable=True),
        sa.Column("gpu_type", sa.String(128), nullable=True),
        sa.Column("gpus", sa.Float(), nullable=False),
        sa.Column("price_per_gpu_hour", sa.Float(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("explanation", sa.JSON(), nullable=True),
        sa.Column("pod_name", sa.String(253), nullable=True),
        sa.Column("end_reason", sa.Text(), nullable=True),
        sa.Column("gpu_hours", sa.Float(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mcsched_placement"),
        sa.UniqueConstraint(
            "dag_id",
            "run_id",
            "task_id",
            "map_index",
            "try_number",
            "attempt",
            name="uq_mcsched_placement_attempt_key",
        ),
    )
    op.create_index("ix_mcsched_placement_state", "mcsched_placement", ["state"])
    op.create_index("ix_mcsched_placement_cluster", "mcsched_placement", ["cluster"])
    op.create_index("ix_mcsched_placement_run", "mcsched_placement", ["dag_id", "run_id"])
    op.create_index("ix_mcsched_placement_team_queued", "mcsched_placement", ["team", "queued_at"])
    op.create_table(
        "mcsched_reservation",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("placement_id", sa.String(32), nullable=False),
        sa.Column("cluster", sa.String(63), nullable=False),
        sa.Column("pool", sa.String(63), nullable=False),
        sa.Column("pods", sa.JSON(), nullable=False),
        sa.Column("team", sa.String(128), nullable=False),
        sa.Column("project", sa.String(128), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("priority_class", sa.String(64), nullable=True),
        sa.Column("interruptible", sa.Boolean(), nullable=False),
        sa.Column("gpu_type", sa.String(128), nullable=True),
        sa.Column("price_per_gpu_hour", sa.Float(), nullable=False),
        sa.Column("spread_group", sa.String(128), nullable=True),
        sa.Column("granted_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("expected_end", UtcDateTime(), nullable=False),
        sa.Column("preempted_by", sa.String(64), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("ended_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["placement_id"],
            ["mcsched_placement.id"],
            name="fk_mcsched_reservation_placement_id_mcsched_placement",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_mcsched_reservation"),
        sa.UniqueConstraint("placement_id", name="uq_mcsched_reservation_placement_id"),
    )
    op.create_index("ix_mcsched_reservation_cluster", "mcsched_reservation", ["cluster"])
    op.create_index("ix_mcsched_reservation_active", "mcsched_reservation", ["active"])
    op.create_table(
        "mcsched_admission_lock",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cycles", sa.Integer(), nullable=False),
        sa.Column("last_cycle_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mcsched_admission_lock"),
    )


def downgrade() -> None:
    op.drop_table("mcsched_admission_lock")
    op.drop_table("mcsched_reservation")
    op.drop_table("mcsched_placement")
