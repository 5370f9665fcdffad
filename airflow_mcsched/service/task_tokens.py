"""Short-lived tokens with which a task (or its trigger) proves to the placement service who it is.

The Task SDK does not hand task code its execution token, so the task signs its own JWT with
Airflow's shared `[api_auth] jwt_secret`, under our own audience (so it is worthless against
Airflow's APIs and theirs worthless here), naming its task instance. The service checks the
signature, the audience, the expiry (with a leeway for clock skew) and then the TI row itself.
"""

from __future__ import annotations

import time
import uuid

import jwt
from pydantic import BaseModel, ConfigDict

AUDIENCE = "urn:mcsched:placement"
ALGORITHM = "HS512"
DEFAULT_TTL_SECONDS = 120
DEFAULT_LEEWAY_SECONDS = 30


class TaskIdentity(BaseModel):
    """The task instance a token speaks for; the same five keys make a placement request idempotent."""

    model_config = ConfigDict(frozen=True)

    ti_id: str
    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1
    try_number: int = 1

    @property
    def key(self) -> str:
        return f"{self.dag_id}/{self.run_id}/{self.task_id}/{self.map_index}/{self.try_number}"


class TaskTokenError(ValueError):
    pass


def airflow_jwt_secret() -> str:
    from airflow.configuration import conf

    secret = conf.get("api_auth", "jwt_secret", fallback="")
    if not secret:
        raise TaskTokenError(
            "[api_auth] jwt_secret is empty: every Airflow component must share one long secret "
            "(set AIRFLOW__API_AUTH__JWT_SECRET)"
        )
    return secret


def sign_task_token(identity: TaskIdentity, secret: str, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> str:
    now = int(time.time())
    claims = {
        "sub": identity.ti_id,
        "aud": AUDIENCE,
        "iat": now,
        "nbf": now,
        "exp": now + ttl_seconds,
        "jti": uuid.uuid4().hex,
        **identity.model_dump(exclude={"ti_id"}),
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def is_task_token(token: str) -> bool:
    """Cheap routing check (no signature yet): does the token claim our audience?"""
    try:
        aud = jwt.decode(token, options={"verify_signature": False}).get("aud")
    except jwt.PyJWTError:
        return False
    return aud == AUDIENCE or (isinstance(aud, list) and AUDIENCE in aud)


def verify_task_token(token: str, secret: str, leeway_seconds: int = DEFAULT_LEEWAY_SECONDS) -> TaskIdentity:
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            leeway=leeway_seconds,
            options={"require": ["exp", "iat", "nbf", "sub", "aud"]},
        )
    except jwt.ExpiredSignatureError:
        raise TaskTokenError("task token expired; the client signs a fresh one per call") from None
    except jwt.PyJWTError as err:
        raise TaskTokenError(f"invalid task token: {err}") from None
    try:
        return TaskIdentity(
            ti_id=claims["sub"],
            **{k: claims[k] for k in ("dag_id", "run_id", "task_id")},
            map_index=int(claims.get("map_index", -1)),
            try_number=int(claims.get("try_number", 1)),
        )
    except (KeyError, ValueError) as err:
        raise TaskTokenError(f"task token lacks a task instance claim: {err}") from None
