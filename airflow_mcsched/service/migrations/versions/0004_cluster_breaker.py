"""The circuit breaker of each cluster, kept with its status row.

Revision ID: 0004_cluster_breaker
Revises: 0003_placements
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

from airflow_mcsched.service.tables import UtcDateTime

revision = "0004_cluster_breaker"
down_revision = "0003_placements"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mcsched_cluster_status") as batch:
        batch.add_column(sa.Column("breaker_failures", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("breaker_successes", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("breaker_opened_at", UtcDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mcsched_cluster_status") as batch:
        batch.drop_column("breaker_opened_at")
        batch.drop_column("breaker_successes")
        batch.drop_column("breaker_failures")
