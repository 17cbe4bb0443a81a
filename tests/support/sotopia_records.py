"""Records exactly as Sotopia 0.1.5 writes them: stored Redis documents, and the JSONL lines of
its serializer (`sotopia.database.serialization`, field order included). The texts are ours."""

import json
from typing import Any

PROFILES = ":sotopia.database.persistent_profile"
LOGS = ":sotopia.database.logs"

NORA: dict[str, Any] = {
    "pk": "01H5TNE5PAZABGW79HJ07TXA01",
    "first_name": "Nora",
    "last_name": "Lindqvist",
    "age": 44,
    "occupation": "Ferry captain",
    "gender": "Woman",
    "gender_pronoun": "She/her",
    "public_info": "Nora has run the island ferry for twelve winters.",
    "big_five": "Openness to Experience - Low; Conscientiousness - High",
    "moral_values": ["Authority"],
    "schwartz_personal_values": ["Security"],
    "personality_and_values": "Nora is steady and blunt, and values keeping her word.",
    "decision_making_style": "Directive",
    "secret": "She once let the ferry sail with a cracked hull.",
    "model_id": "",
    "mbti": "ISTJ",
    "tag": "",
}
EMIL: dict[str, Any] = {
    **NORA,
    "pk": "01H5TNE5P83CZ1TDBVN74NXA02",
    "first_name": "Emil",
    "last_name": "Brandt",
    "age": 29,
    "occupation": "Marine biologist",
    "gender": "Man",
    "gender_pronoun": "He/him",
    "public_info": "Emil counts seals on the outer skerries.",
    "moral_values": ["Care"],
    "schwartz_personal_values": ["Universalism"],
    "personality_and_values": "Emil is curious and restless, and values the sea more than rules.",
    "decision_making_style": "Analytical",
    "secret": "His research permit expired last spring.",
    "mbti": "ENFP",
}
SCENARIO: dict[str, Any] = {
    "pk": "01H7VFHNN7XTR99319DS8KXA03",
    "codename": "last_ferry",
    "source": "hand-written",
    "scenario": "The last ferry of the day is full and a storm is coming in.",
    "agent_goals": [
        "Keep the ferry within its limit <extra_info>One more passenger is over the "
        "limit.</extra_info>",
        "Get a place on the ferry <clarification_hint>Your samples spoil by morning."
        "</clarification_hint>",
    ],
    "relationship": 2,
    "age_constraint": "[(18, 70), (18, 70)]",
    "occupation_constraint": "nan",
    "agent_constraint": None,
    "tag": "",
}
RELATIONSHIP: dict[str, Any] = {
    "pk": "01H6HH3KG4M9E1J5H25WHQXA04",
    "agent_1_id": NORA["pk"],
    "agent_2_id": EMIL["pk"],
    "relationship": 2,
    "background_story": "Emil rides the ferry every week; they nod at each other.",
    "tag": "",
}

_INTRO = (
    "\nHere is the context of this interaction:\nScenario: The last ferry of the day is full "
    "and a storm is coming in.\nParticipants: Nora Lindqvist and Emil Brandt\n"
)
MESSAGES: list[list[list[str]]] = [
    [
        ["Environment", "Nora Lindqvist", _INTRO + "Conversation Starts:\n"],
        ["Environment", "Emil Brandt", _INTRO + "Conversation Starts:\n"],
        ["Nora Lindqvist", "Environment", 'said: "We are full, Emil. I cannot take you."'],
        ["Emil Brandt", "Environment", "did nothing"],
    ],
    [
        ["Environment", "Nora Lindqvist", 'Turn #0: Nora Lindqvist said: "We are full."\n'],
        ["Environment", "Emil Brandt", 'Turn #0: Nora Lindqvist said: "We are full."\n'],
        ["Nora Lindqvist", "Environment", "did nothing"],
        ["Emil Brandt", "Environment", "[non-verbal communication] holds up the sample cooler"],
    ],
    [
        ["Environment", "Nora Lindqvist", "Turn #1: Emil Brandt holds up the cooler\n"],
        ["Environment", "Emil Brandt", "Turn #1: Emil Brandt holds up the cooler\n"],
        [
            "Nora Lindqvist",
            "Environment",
            "[private to ['Emil Brandt']] said: \"Stand by the rail; nobody counts there.\"",
        ],
        ["Emil Brandt", "Environment", "did nothing"],
    ],
    [
        ["Environment", "Nora Lindqvist", "Turn #2: \n"],
        ["Environment", "Emil Brandt", "Turn #2: \n"],
        ["Nora Lindqvist", "Environment", "did nothing"],
        ["Emil Brandt", "Environment", "[action] steps aboard and stands by the rail"],
    ],
    [
        ["Environment", "Nora Lindqvist", "Turn #3: Emil Brandt steps aboard\n"],
        ["Environment", "Emil Brandt", "Turn #3: Emil Brandt steps aboard\n"],
        ["Nora Lindqvist", "Environment", "left the conversation"],
        ["Emil Brandt", "Environment", "did nothing"],
    ],
    [
        ["Environment", "Nora Lindqvist", "Turn #4: Nora Lindqvist left the conversation\n"],
        ["Environment", "Emil Brandt", "Turn #4: Nora Lindqvist left the conversation\n"],
    ],
]
EXPECTED_TURNS = [
    (0, "Nora Lindqvist", "SPEAK", "We are full, Emil. I cannot take you.", []),
    (1, "Emil Brandt", "NON_VERBAL_COMMUNICATION", "holds up the sample cooler", []),
    (2, "Nora Lindqvist", "SPEAK", "Stand by the rail; nobody counts there.", ["Emil Brandt"]),
    (3, "Emil Brandt", "ACTION", "steps aboard and stands by the rail", []),
    (4, "Nora Lindqvist", "LEAVE", "", []),
]
"""(turn, speaker, action type, argument, private recipients) derived from MESSAGES."""

DIMENSIONS = {
    "believability": 8.0,
    "relationship": 1.0,
    "knowledge": 2.0,
    "secret": 0.0,
    "social_rules": -2.0,
    "financial_and_material_benefits": 0.0,
    "goal": 6.0,
}
EPISODE: dict[str, Any] = {
    "pk": "01H9FG15A2NDTNH8K6F2T5XA05",
    "environment": SCENARIO["pk"],
    "agents": [NORA["pk"], EMIL["pk"]],
    "tag": "ferry_gpt-4_gpt-4_v0.0.1_clean",
    "models": ["gpt-4", "gpt-4", "gpt-4"],
    "messages": MESSAGES,
    "reasoning": "Environment comments: terminated: Too few active agents; \nAgent 1 comments:\n",
    "rewards": [
        [2.142857142857143, {**DIMENSIONS, "overall_score": 2.142857142857143}],
        [3.0, {**DIMENSIONS, "goal": 12.0, "overall_score": 3.0}],
    ],
    "rewards_prompt": "",
}
"""A stored EpisodeLog as Sotopia writes it: no Parley run state, no turns."""

RECORDS: list[tuple[str, dict[str, Any]]] = [
    (f"{PROFILES}.AgentProfile:{NORA['pk']}", NORA),
    (f"{PROFILES}.AgentProfile:{EMIL['pk']}", EMIL),
    (f"{PROFILES}.EnvironmentProfile:{SCENARIO['pk']}", SCENARIO),
    (f"{PROFILES}.RelationshipProfile:{RELATIONSHIP['pk']}", RELATIONSHIP),
    (f"{LOGS}.EpisodeLog:{EPISODE['pk']}", EPISODE),
]
"""Every record above at its Sotopia key."""


def _background(agent: dict[str, Any]) -> str:
    adjective = {"Man": "male", "Woman": "female"}[agent["gender"]]
    return (
        f"{agent['first_name']} {agent['last_name']} is a {agent['age']}-year-old {adjective} "
        f"{agent['occupation'].lower()}. {agent['gender_pronoun']} pronouns. "
        f"{agent['public_info']} Personality and values description: "
        f"{agent['personality_and_values']} {agent['first_name']}'s secrets: {agent['secret']}"
    )


def jsonl_lines() -> list[str]:
    """The four record kinds as Sotopia's serializer writes them, one file's worth."""
    agents = [
        {
            "agent_id": a["pk"],
            **{k: a[k] for k in ("first_name", "last_name", "age", "occupation", "gender")},
            **{k: a[k] for k in ("gender_pronoun", "public_info", "big_five", "moral_values")},
            "schwartz_personal_values": a["schwartz_personal_values"],
            "personality_and_values": a["personality_and_values"],
            "decision_making_style": a["decision_making_style"],
            "secret": a["secret"],
            "mbti": a["mbti"],
            "model_id": a["model_id"],
        }
        for a in (NORA, EMIL)
    ]
    scenario = {
        "env_id": SCENARIO["pk"],
        **{k: SCENARIO[k] for k in ("codename", "source", "scenario", "agent_goals")},
        "relationship": "2",
        "age_constraint": SCENARIO["age_constraint"],
        "occupation_constraint": SCENARIO["occupation_constraint"],
        "agent_constraint": "none",
    }
    relationship = {
        "relationship_id": RELATIONSHIP["pk"],
        "agent1_id": NORA["pk"],
        "agent2_id": EMIL["pk"],
        "relationship": "2",
        "background_story": RELATIONSHIP["background_story"],
    }
    names = ["Nora Lindqvist", "Emil Brandt"]
    episode = {
        "episode_id": EPISODE["pk"],
        "environment_id": EPISODE["environment"],
        "agent_ids": EPISODE["agents"],
        "experiment_tag": EPISODE["tag"],
        "experiment_model_name_pairs": EPISODE["models"],
        "raw_messages": EPISODE["messages"],
        "raw_rewards": EPISODE["rewards"],
        "raw_rewards_prompt": EPISODE["rewards_prompt"],
        "scenario": SCENARIO["scenario"],
        "codename": SCENARIO["codename"],
        "agents_background": {n: _background(a) for n, a in zip(names, (NORA, EMIL), strict=True)},
        "social_goals": dict(zip(names, SCENARIO["agent_goals"], strict=True)),
        "social_interactions": "",
        "reasoning": EPISODE["reasoning"],
        "rewards": EPISODE["rewards"],
    }
    return [json.dumps(line) for line in (*agents, scenario, relationship, episode)]


def with_ids(suffix: str) -> list[str]:
    """`jsonl_lines` with every id given `suffix`, for a test of its own."""
    text = "\n".join(jsonl_lines())
    for _, doc in RECORDS:
        text = text.replace(doc["pk"], doc["pk"][:-2] + suffix)
    return text.splitlines()


ANNOTATOR: dict[str, Any] = {
    "pk": "01HB2QK1F6XJ4Q6M5W9R8ZXA06",
    "name": "Ingrid Solberg",
    "email": "ingrid@example.org",
}
ANNOTATION: dict[str, Any] = {
    "pk": "01HB2QK9T3V7C2N8P4D6YGXA07",
    "episode": EPISODE["pk"],
    "annotator_id": ANNOTATOR["pk"],
    "rewards": [
        [3.0, {**DIMENSIONS, "goal": 7.0, "overall_score": 3.0}],
        [2.0, {**DIMENSIONS, "overall_score": 2.0}],
    ],
    "reasoning": "Nora kept to the limit; Emil found a way aboard anyway.",
}
"""A person's rating and the person, as Sotopia stores them (`AnnotationForEpisode`,
`Annotator`): JSON in the field order of their declarations, `pk` first."""
ANNOTATION_KEY = f"{LOGS}.AnnotationForEpisode:{ANNOTATION['pk']}"
ANNOTATOR_KEY = f":sotopia.database.annotators.Annotator:{ANNOTATOR['pk']}"
ANNOTATION_INDEX_HASH = "0ae4afaafc88b3f6fa5871067b687ec9158ac022"
"""The SHA-1 Sotopia's migrator keeps of its AnnotationForEpisode index's schema."""


def annotations_of(episode: str) -> list[str]:
    """The command Sotopia's `AnnotationForEpisode.find(AnnotationForEpisode.episode ==
    episode).all()` sends (redis-om 0.3.2: a TAG query on its own index, in pages of 1000), for
    an id of letters and digits (which it does not escape)."""
    return [
        "FT.SEARCH",
        f"{LOGS}.AnnotationForEpisode:index",
        f"@episode:{{{episode}}}",
        "LIMIT",
        "0",
        "1000",
    ]
