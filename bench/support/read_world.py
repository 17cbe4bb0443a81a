"""A stored world for read benchmarks and tests: Parley-written and Sotopia-written records.

Parley's episodes are finished runs as a worker stores them (turns, status history, rewards,
stats); Sotopia's are the raw JSON Sotopia 0.1.5 writes: only its own fields, no run state, and
an extra key of its own. Agents, scenarios and relationships come in both kinds too.
"""

import json
from typing import Any

import redis.asyncio as redis

from parley.storage.models import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    ModelUsage,
    RelationshipProfile,
    StatusChange,
    StoredTurn,
)

DIMENSIONS = (
    "believability",
    "relationship",
    "knowledge",
    "secret",
    "social_rules",
    "financial_and_material_benefits",
    "goal",
)
LINE = "I think we should talk about the budget before the meeting starts, don't you agree?"


def _pk(kind: str, i: int, world: str) -> str:
    return f"{world}{kind}{i:06d}"


def _agent(i: int, sotopia: bool, world: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "pk": _pk("A", i, world),
        "first_name": f"Ada{i}",
        "last_name": f"{world}Sotopia" if sotopia else f"{world}Parley",
        "age": 20 + i % 50,
        "occupation": "Nurse" if i % 3 else "Baker",
        "gender": "Woman" if i % 2 else "Man",
        "gender_pronoun": "she/her" if i % 2 else "he/him",
        "public_info": f"Agent {i} runs the corner shop and knows everyone on the street.",
        "big_five": "Openness to Experience - High; Conscientiousness - Low",
        "moral_values": ["Fairness", "Care"],
        "schwartz_personal_values": ["Benevolence"],
        "personality_and_values": "Warm and stubborn.",
        "decision_making_style": "Intuitive",
        "secret": f"Secret number {i}",
        "model_id": "",
        "mbti": "ISTJ",
        "tag": f"{world}-sotopia" if sotopia else f"{world}-parley",
    }
    if sotopia:
        doc["written_by_sotopia"] = True
        if i % 4 == 1:  # an older Sotopia record without the later optional fields
            for key in ("mbti", "model_id", "decision_making_style", "tag"):
                del doc[key]
    return doc


def _scenario(i: int, sotopia: bool, world: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "pk": _pk("S", i, world),
        "codename": f"{world}_borrow_money_{i}",
        "source": "sotopia" if sotopia else "",
        "scenario": "Two neighbours meet in the hallway of their building on a Sunday morning.",
        "agent_goals": [
            "Borrow 500 dollars <extra_info>You need it by Friday.</extra_info>",
            "Keep your savings intact <strategy_hint>Offer help of another kind.</strategy_hint>",
        ],
        "relationship": i % 6,
        "age_constraint": "[(18, 70), (18, 70)]" if i % 2 else None,
        "occupation_constraint": None,
        "agent_constraint": None,
        "tag": f"{world}-sotopia" if sotopia else f"{world}-parley",
    }
    if sotopia and i % 4 == 1:
        for key in ("source", "age_constraint", "occupation_constraint", "agent_constraint"):
            del doc[key]
    return doc


def _relationship(i: int, agents: int, sotopia: bool, world: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "pk": _pk("R", i, world),
        "agent_1_id": _pk("A", i, world),
        "agent_2_id": _pk("A", (i + 1) % agents, world),
        "relationship": i % 6,
        "background_story": f"They met at a night class in year {i}.",
        "tag": f"{world}-sotopia" if sotopia else f"{world}-parley",
    }
    if sotopia and i % 4 == 1:
        del doc["background_story"], doc["tag"]
    return doc


def _messages(names: list[str], turns: int) -> list[list[list[str]]]:
    first = [["Environment", n, f"Here is the context of the interaction: {LINE}"] for n in names]
    rest = [[[names[t % 2], "Environment", f'said: "{LINE} ({t})"']] for t in range(turns)]
    return [first, *rest]


def _rewards(i: int) -> list[Any]:
    if i % 10 == 9:  # a judge that failed: Sotopia's bare 0.0
        return [0.0, 0.0]
    out: list[Any] = []
    for seat in range(2):
        detail = {d: float((i + seat + k) % 10) for k, d in enumerate(DIMENSIONS)}
        detail["overall_score"] = sum(detail.values()) / len(DIMENSIONS)
        out.append([detail["overall_score"], detail])
    return out


def sotopia_episode(i: int, agents: int, scenarios: int, turns: int, world: str) -> dict[str, Any]:
    """An EpisodeLog as Sotopia writes it: its own fields only."""
    pair = [_pk("A", i % agents, world), _pk("A", (i + 1) % agents, world)]
    return {
        "pk": _pk("E", i, world),
        "environment": _pk("S", i % scenarios, world),
        "agents": pair,
        "tag": f"{world}-sotopia",
        "models": ["gpt-4o-mini", "gpt-4o-mini", "gpt-4o-mini"],
        "messages": _messages([f"Ada{i % agents} {world}Sotopia", f"Bo {world}Sotopia"], turns),
        "reasoning": "Agent 1 comments:\nbelievability: natural.\nAgent 2 comments:\ngoal: met.",
        "rewards": _rewards(i),
        "rewards_prompt": "",
        "written_by_sotopia": True,
    }


def parley_episode(i: int, agents: int, scenarios: int, turns: int, world: str) -> EpisodeLog:
    """A finished episode as Parley's worker stores it."""
    at = 1_750_000_000.0 + i
    pair = [_pk("A", i % agents, world), _pk("A", (i + 1) % agents, world)]
    names = [f"Ada{i % agents} {world}Parley", f"Bo {world}Parley"]
    status = EpisodeStatus.FAILED if i % 10 == 8 else EpisodeStatus.COMPLETED
    history = [
        StatusChange(status=EpisodeStatus.QUEUED, at=at, sequence=1),
        StatusChange(status=EpisodeStatus.RUNNING, at=at + 1, sequence=2, attempt=1),
        StatusChange(status=EpisodeStatus.EVALUATING, at=at + 9, sequence=turns + 3, attempt=1),
        StatusChange(
            status=status,
            at=at + 12,
            sequence=turns + 4,
            attempt=1,
            reason="judge gave no valid scores" if status is EpisodeStatus.FAILED else None,
        ),
    ]
    stored_turns = [
        StoredTurn(
            turn=t,
            agent_index=t % 2,
            agent_name=names[t % 2],
            action_type="speak",
            argument=f"{LINE} ({t})",
            sequence=t + 3,
            at=at + 1 + t * 0.3,
        )
        for t in range(turns)
    ]
    usage = ModelUsage(
        model="local/gemma-3-270m",
        prompt_tokens=900 * turns + i,
        completion_tokens=30 * turns,
        estimated=i % 3 == 0,
        estimated_tokens=30 * turns if i % 3 == 0 else 0,
        cost=None if i % 2 else 0.0001 * (i + 1),
    )
    return EpisodeLog(
        pk=_pk("E", i, world),
        environment=_pk("S", i % scenarios, world),
        agents=pair,
        tag=f"{world}-parley",
        models=["local/gemma-3-270m"] * 3,
        agent_classes=["LLMAgent", "LLMAgent"],
        messages=_messages(names, turns),
        reasoning="Agent 1 comments:\nbelievability: natural.\nAgent 2 comments:\ngoal: met.",
        rewards=[] if status is EpisodeStatus.FAILED else _rewards(i),
        status=status,
        status_history=history,
        sequence=turns + 4,
        attempt=1,
        turns=stored_turns,
        progress=turns,
        max_turns=turns,
        error="judge gave no valid scores" if status is EpisodeStatus.FAILED else None,
        termination_reason="The conversation reached the turn limit.",
        generation_stats={"requests": float(turns + 2), "retries": 1.0, "repairs": 0.0},
        usage=[usage],
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        estimated_tokens=usage.estimated_tokens,
        cost=usage.cost,
        created_at=at,
        started_at=at + 1,
        finished_at=at + 12,
        owner="worker-1",
    )


async def write_world(
    client: redis.Redis,
    world: str = "bench",
    *,
    episodes: int = 1000,
    agents: int = 1000,
    scenarios: int = 1000,
    relationships: int = 1000,
    turns: int = 20,
) -> None:
    """Half of each kind written as Sotopia writes it (odd numbers), half as Parley does.

    Primary keys start with `world`; tags are `<world>-sotopia` and `<world>-parley`."""
    async with client.pipeline(transaction=False) as pipe:
        for i in range(agents):
            doc = _agent(i, i % 2 == 1, world)
            pipe.json().set(AgentProfile.make_primary_key(doc["pk"]), "$", doc)
        for i in range(scenarios):
            doc = _scenario(i, i % 2 == 1, world)
            pipe.json().set(EnvironmentProfile.make_primary_key(doc["pk"]), "$", doc)
        for i in range(relationships):
            doc = _relationship(i, agents, i % 2 == 1, world)
            pipe.json().set(RelationshipProfile.make_primary_key(doc["pk"]), "$", doc)
        for i in range(episodes):
            if i % 2:
                doc = sotopia_episode(i, agents, scenarios, turns, world)
            else:
                doc = json.loads(
                    parley_episode(i, agents, scenarios, turns, world).model_dump_json()
                )
            pipe.json().set(EpisodeLog.make_primary_key(doc["pk"]), "$", doc)
        await pipe.execute()
