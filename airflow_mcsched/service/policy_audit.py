"""Record in the audit trail each time the placement policy in force changes (quotas included).

Quotas, weights and priority classes change by editing the policy file, which every API server
re-reads when it changes; there is no API to change them. So the admission cycle compares the
policy it runs with the last one recorded (by fingerprint) and, when they differ, writes one
`policy.change` entry with the changed fields and the quotas now in force.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import select
from sqlalchemy.orm import Session

from airflow_mcsched.decision import Policy
from airflow_mcsched.service.cluster_store import audit, diff_specs
from airflow_mcsched.service.tables import AuditRow

POLICY_ACTION = "policy.change"
POLICY_ACTOR = "mcsched-policy"


def fingerprint(policy: Policy) -> str:
    return hashlib.sha256(policy.model_dump_json().encode()).hexdigest()[:16]


def record_policy_change(session: Session, policy: Policy) -> bool:
    """Write a `policy.change` entry if `policy` is not the last one recorded; True if written."""
    last = session.scalars(
        select(AuditRow).where(AuditRow.action == POLICY_ACTION).order_by(AuditRow.id.desc()).limit(1)
    ).first()
    current = fingerprint(policy)
    if last is not None and last.subject == current:
        return False
    document = policy.model_dump(mode="json")
    previous = (last.details or {}).get("policy", {}) if last is not None else {}
    changes = {k: [old, new] for k, (old, new) in diff_specs(previous, document).items()} if last else {}
    audit(
        session,
        POLICY_ACTOR,
        POLICY_ACTION,
        "policy",
        current,
        previous=last.subject if last else None,
        changes=changes,
        quotas=document["quotas"],
        policy=document,
    )
    return True
