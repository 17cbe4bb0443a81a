"""Re-judging stored episodes: the record of a re-judging, and its evaluations' progress."""

from typing import Any

import redis.asyncio as redis
from redis.typing import EncodableT, FieldT

from parley.core.errors import BadArgument
from parley.storage import keys
from parley.storage.models import Evaluation
from parley.storage.records import storable


async def check_exists(client: redis.Redis, rejudging_id: str | None) -> None:
    """Refuse results of a re-judging that does not exist (None: the original rewards)."""
    if rejudging_id is None:
        return
    if not storable(rejudging_id) or not await client.exists(keys.rejudging(rejudging_id)):
        raise BadArgument(f"no re-judging with id {rejudging_id!r}")


def evaluation_record(episode_id: str, fields: dict[str, Any], entry: Evaluation) -> dict[str, Any]:
    """What results group an evaluation's scores by: the episode's scenario, agents, tag,
    experiment and seat models, with the evaluation's judge in `models[0]`."""
    models = list(fields.get("models") or [])
    return {
        "episode": episode_id,
        "evaluation": entry.id,
        "environment": fields.get("environment"),
        "agents": fields.get("agents") or [],
        "tag": fields.get("tag") or "",
        "experiment_id": fields.get("experiment_id") or "",
        "models": [entry.judge_model, *models[1:]],
        "evaluation_dimension_list_id": entry.evaluation_dimension_list_id,
        "status": entry.status.value,
        "rewards": entry.rewards,
        "starts": 0,
    }


def rejudging_fields(entry: Evaluation) -> dict[FieldT, EncodableT]:
    """The stored re-judging an evaluation belongs to (its count of episodes apart)."""
    return {
        "judge_model": entry.judge_model,
        "evaluation_dimension_list_id": entry.evaluation_dimension_list_id or "",
        "created_at": entry.created_at,
    }
