"""Live cluster status (capacity reads, health, sync lease) and the audit trail.

Revision ID: 0002_status_audit
Revises: 0001_cluster_profiles
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

from airflow_mcsched.service.tables import UtcDateTime

revision = "0002_status_audit"
down_revision = "0001_cluster_profiles"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcsched_cluster_status",
        sa.Column("cluster_name", sa.String(63), nullable=False),
        sa.Column("observed_at", UtcDateTime(), nullable=True),
        sa.Column("last_success_at", UtcDateTime(), nullable=True),
        sa.Column("healthy", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("sync_seconds", sa.Float(), nullable=True),
        sa.Column("observation", sa.JSON(), nullable=True),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        sa.Column("lease_until", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cluster_name"],
            ["mcsched_cluster.name"],
            name="fk_mcsched_cluster_status_cluster_name_mcsched_cluster",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_name", name="pk_mcsched_cluster_status"),
    )
    op.create_table(
        "mcsched_audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("actor", sa.String(250), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("subject_kind", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(250), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mcsched_audit"),
    )
    op.create_index("ix_mcsched_audit_at", "mcsched_audit", ["at"])
    op.create_index("ix_mcsched_audit_action", "mcsched_audit", ["action"])
    op.create_index("ix_mcsched_audit_subject", "mcsched_audit", ["subject_kind", "subject"])


def downgrade() -> None:
    op.drop_table("mcsched_audit")
    op.drop_table("mcsched_cluster_status")
