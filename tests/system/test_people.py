"""People in the loop through real `parley serve` and `parley worker` processes: a person plays a
seat over HTTP while following their own stream over a websocket, deadlines pass unanswered,
workers die while an episode waits or plays the turn after a person's, tokens are wrong, people
race for one seat, and runs are paused, stepped, resumed and sent environment messages."""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.people import (
    CANCEL,
    EPISODE,
    TERMINAL,
    SeatStream,
    codes,
    control,
    inject,
    speak,
    start_with_seats,
    submit,
)
from bench.support.processes import ApiProcess, Process, api_process, parley_env, worker_process
from bench.support.simulation import episode, make_world, post, start_input, wait_for
from parley.storage.models import EpisodeLog

Stored = dict[str, Any]


@pytest.fixture(scope="module")
def env(
    redis_url: str, redis_client: redis.Redis, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """Settings for the processes; `redis_client` binds the test's models to the same Redis."""
    data = tmp_path_factory.mktemp("people")
    return parley_env(redis_url, data, lease_seconds="2", max_attempts="3", seed="false")


@pytest.fixture(scope="module")
def api(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiProcess]:
    """One API process without a worker; each test starts the workers it needs."""
    with api_process(env, tmp_path_factory.mktemp("api") / "api.log", "--no-worker") as process:
        yield process


@pytest.fixture
def worker(env: dict[str, str], tmp_path: Path) -> Iterator[Process]:
    with worker_process(env, tmp_path / "worker.log") as process:
        yield process


@pytest.fixture
async def episodes(api: ApiProcess) -> AsyncIterator[list[str]]:
    """Episodes a test starts: cancelled afterwards if still unfinished, so that nothing of
    theirs waits or queues for the tests after it."""
    started: list[str] = []
    yield started
    for pk in started:
        await post(api.url, CANCEL, {"id": pk})


def status_is(*wanted: str) -> Any:
    return lambda e: e["status"] in wanted


async def record(redis_client: redis.Redis, pk: str) -> Any:
    """The stored episode document as it is (to prove that a refusal changed nothing)."""
    return await redis_client.json().get(EpisodeLog.make_primary_key(pk))


async def human_episode(
    api: ApiProcess,
    fake_llm: FakeLLM,
    tag: str,
    episodes: list[str],
    agents: int = 2,
    **extra: Any,
) -> tuple[str, dict[int, str], list[str]]:
    """An episode in which a person plays seat 0 (or `humanSeats`); its id, tokens, names."""
    scenario, ids = await make_world(tag, agents)
    variables = start_input(scenario, ids, fake_llm.model_name(), tag=tag)
    variables.update({"humanSeats": [0], **extra})
    pk, tokens = await start_with_seats(api.url, variables)
    episodes.append(pk)
    return pk, tokens, [f"Ava{i} {tag}" for i in range(agents)]


def turns_of(found: Stored) -> list[tuple[int, int, str]]:
    return [(t["turn"], t["agentIndex"], t["actionType"]) for t in found["turns"]]


# --- a person against models, to the scores -------------------------------------------------------


async def test_a_person_plays_against_models_to_the_scores_seeing_only_their_own(
    api: ApiProcess, worker: Process, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    """Three agents, the person in seat 0: their stream says `yourTurn` on each WAITING for
    them, shows the public turns and never the private one seat 1 sends seat 2, and ends after
    COMPLETED; the stored episode has the person's words and every seat's scores."""
    tag = "people-match"
    names = [f"Ava{i} {tag}" for i in range(3)]
    fake_llm.add_rule(Rule.action(names[1], "speak", "psst, only for you", to=[names[2]]))
    pk, tokens, _ = await human_episode(api, fake_llm, tag, episodes, agents=3, maxTurns=6)
    said: list[int] = []

    async def act(event: dict[str, Any]) -> None:
        turn = event["yourTurn"]["turn"]
        assert event["kind"] in ("SNAPSHOT", "STATUS") and event["status"] == "WAITING", event
        assert event["waiting"] == {"turn": turn, "seats": [0]}
        assert set(event["yourTurn"]["actionTypes"]) >= {"SPEAK", "LEAVE"}
        said.append(turn)
        payload = await submit(api.url, speak(pk, 0, tokens[0], f"My word at turn {turn}"))
        assert payload["userErrors"] == [] and payload["sequence"] is not None, payload

    stream = SeatStream(api.url, pk, 0, tokens[0], on_your_turn=act)
    events = await stream.run()
    final = await episode(api.url, pk, EPISODE)

    assert final["status"] == "COMPLETED", final
    assert said == [0, 3]  # round robin over three seats: the person's turns
    assert events[-1]["kind"] == "STATUS" and events[-1]["status"] == "COMPLETED"
    waits = [e for e in events if e["status"] == "WAITING"]
    assert [e["yourTurn"]["turn"] for e in waits] == said
    assert all(e["episode"] is None and e["perspective"]["seat"] == 0 for e in events)
    assert all(e["perspective"]["goal"] for e in events)
    seen = [e["turn"] for e in events if e["kind"] == "TURN"]
    private = [t for t in final["turns"] if t["to"]]
    assert [(t["agentIndex"], t["to"]) for t in private] == [(1, [names[2]])]  # it happened
    assert "psst, only for you" not in str(events)
    public = [(t["turn"], t["agentIndex"]) for t in final["turns"] if not t["to"]]
    assert [(t["turn"], t["agentIndex"]) for t in seen] == public
    assert [t["argument"] for t in final["turns"] if t["agentIndex"] == 0] == [
        "My word at turn 0",
        "My word at turn 3",
    ]
    assert sorted(r["agentIndex"] for r in final["rewards"]) == [0, 1, 2]
    assert all(r["overall"] is not None for r in final["rewards"])
    late = await submit(api.url, speak(pk, 0, tokens[0], "After the end"))
    assert codes(late) == ["CONFLICT"] and "COMPLETED" in late["userErrors"][0]["message"]


async def test_a_person_who_opens_their_stream_while_it_waits_is_told_it_is_their_turn(
    api: ApiProcess, worker: Process, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    """The episode waits for seat 0 before its person subscribes: the stream's SNAPSHOT says
    `yourTurn` (with the deadline), and their action then plays it."""
    pk, tokens, _ = await human_episode(api, fake_llm, "people-late", episodes, maxTurns=2)
    waiting = await wait_for(api.url, pk, status_is("WAITING"), query=EPISODE)

    async def act(event: dict[str, Any]) -> None:
        payload = await submit(api.url, speak(pk, 0, tokens[0], "Sorry I am late"))
        assert payload["userErrors"] == [], payload

    events = await SeatStream(api.url, pk, 0, tokens[0], on_your_turn=act).run()
    snapshot = events[0]
    assert (snapshot["kind"], snapshot["status"]) == ("SNAPSHOT", "WAITING"), snapshot
    assert snapshot["waiting"] == {"turn": 0, "seats": [0]}
    assert snapshot["yourTurn"]["turn"] == 0
    assert snapshot["yourTurn"]["deadline"] == waiting["waiting"]["deadline"]
    assert [e["yourTurn"] for e in events[1:]] == [None] * (len(events) - 1)
    assert events[-1]["status"] == "COMPLETED"
    assert (await episode(api.url, pk, EPISODE))["turns"][0]["argument"] == "Sorry I am late"


async def test_two_people_in_a_simultaneous_episode_are_both_awaited_each_turn(
    api: ApiProcess, worker: Process, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    """Seats 0 and 1 are people, seat 2 a model, all acting each turn: a turn waits until both
    people have acted (the first one's action leaves it WAITING for the other), then the model
    plays its part of the same turn."""
    pk, tokens, _ = await human_episode(
        api,
        fake_llm,
        "people-simultaneous",
        episodes,
        agents=3,
        humanSeats=[0, 1],
        turnOrder="SIMULTANEOUS",
        maxTurns=2,
    )
    for turn in (0, 1):
        found = await wait_for(
            api.url, pk, lambda e, t=turn: (e["waiting"] or {}).get("turn") == t, query=EPISODE
        )
        assert found["waiting"]["seats"] == [0, 1], found
        first = await submit(api.url, speak(pk, 1, tokens[1], f"Seat 1 at {turn}"))
        assert first["userErrors"] == [] and first["episode"]["status"] == "WAITING", first
        assert (await episode(api.url, pk, EPISODE))["waiting"]["seats"] == [0]
        second = await submit(api.url, speak(pk, 0, tokens[0], f"Seat 0 at {turn}"))
        assert second["userErrors"] == [] and second["sequence"] is not None, second
    final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED", final
    assert sorted((t["turn"], t["agentIndex"]) for t in final["turns"]) == [
        (turn, seat) for turn in (0, 1) for seat in (0, 1, 2)
    ]
    people = {(t["turn"], t["agentIndex"]): t["argument"] for t in final["turns"]}
    assert people[(1, 0)] == "Seat 0 at 1" and people[(1, 1)] == "Seat 1 at 1"
    assert len(final["rewards"]) == 3


# --- a person who never answers -------------------------------------------------------------------


async def test_a_seat_that_never_answers_leaves_and_the_episode_goes_on(
    api: ApiProcess, worker: Process, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    pk, _, names = await human_episode(
        api, fake_llm, "people-leave", episodes, agents=3, seatDeadlineSeconds=1, maxTurns=4
    )
    final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED", final
    first, *rest = final["turns"]
    assert (first["turn"], first["agentIndex"], first["actionType"]) == (0, 0, "LEAVE")
    assert first["speaker"] == names[0]
    assert [t["agentIndex"] for t in rest] == [1, 2, 1]  # the others go on without seat 0
    reasons = [h["reason"] or "" for h in final["statusHistory"]]
    assert any("did not act before the deadline of turn 0: left" in r for r in reasons), reasons
    assert len(final["rewards"]) == 3


async def test_a_seat_that_never_answers_is_played_by_the_stand_in(
    api: ApiProcess, worker: Process, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    stand_in = fake_llm.model_name("stand-in")
    pk, _, names = await human_episode(
        api,
        fake_llm,
        "people-stand-in",
        episodes,
        seatDeadlineSeconds=1,
        onSeatTimeout="STAND_IN",
        standInModel=stand_in,
    )
    final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED", final
    assert turns_of(final) == [(0, 0, "SPEAK"), (1, 1, "SPEAK"), (2, 0, "SPEAK")]
    seat_0 = [t["argument"] for t in final["turns"] if t["agentIndex"] == 0]
    assert seat_0 == [f"Hello, this is {names[0]} at turn {n}." for n in (0, 2)]
    asked = [r for r in fake_llm.requests_of("action") if f"You are {names[0]}." in r.text]
    assert [r.body["model"] for r in asked] == ["stand-in", "stand-in"]
    reasons = [h["reason"] or "" for h in final["statusHistory"]]
    assert sum(f"{stand_in} acts instead" in r for r in reasons) == 2, reasons


async def test_a_seat_that_never_answers_fails_the_episode_with_the_reason(
    api: ApiProcess, worker: Process, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    pk, _, names = await human_episode(
        api, fake_llm, "people-fail", episodes, seatDeadlineSeconds=1, onSeatTimeout="FAIL"
    )
    final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    reason = f"{names[0]} did not act before the deadline of turn 0: the episode failed"
    assert final["status"] == "FAILED" and final["error"] == reason, final
    assert final["statusHistory"][-1]["reason"] == reason
    assert final["turns"] == [] and final["rewards"] == [] and final["waiting"] is None


# --- workers killed -------------------------------------------------------------------------------


async def test_a_worker_killed_while_an_episode_waits_loses_nothing(
    api: ApiProcess, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    pk, tokens, _ = await human_episode(api, fake_llm, "people-kill-waiting", episodes)
    with worker_process(env, tmp_path / "w1.log") as doomed:
        waiting = await wait_for(api.url, pk, status_is("WAITING"), query=EPISODE)
        doomed.kill()
    await asyncio.sleep(2.5)  # longer than the lease: nothing of the episode was the worker's
    assert await episode(api.url, pk, EPISODE) == waiting
    with worker_process(env, tmp_path / "w2.log"):
        for turn in (0, 2):
            await wait_for(
                api.url, pk, lambda e, t=turn: (e["waiting"] or {}).get("turn") == t, query=EPISODE
            )
            payload = await submit(api.url, speak(pk, 0, tokens[0], f"Still here at {turn}"))
            assert payload["userErrors"] == [], payload
        final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED", final
    assert turns_of(final) == [(0, 0, "SPEAK"), (1, 1, "SPEAK"), (2, 0, "SPEAK")]
    reasons = [h["reason"] or "" for h in final["statusHistory"]]
    assert not any("lease" in r for r in reasons), reasons  # no attempt was lost


async def test_a_worker_killed_mid_turn_after_a_person_acted_keeps_their_turn(
    api: ApiProcess, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    """The worker dies while the model answers the turn after the person's: the next worker
    takes the episode over with the person's turn kept, never asks them for it again, and the
    episode completes."""
    tag = "people-kill-mid-turn"
    pk, tokens, names = await human_episode(api, fake_llm, tag, episodes)
    fake_llm.add_rule(Rule(kind="action", contains=[f"You are {names[1]}."], delay=30))
    asked: list[int] = []

    async def act(event: dict[str, Any]) -> None:
        turn = event["yourTurn"]["turn"]
        asked.append(turn)
        payload = await submit(api.url, speak(pk, 0, tokens[0], f"Person at turn {turn}"))
        assert payload["userErrors"] == [], payload

    stream = SeatStream(api.url, pk, 0, tokens[0], on_your_turn=act)
    following = asyncio.create_task(stream.run())
    with worker_process(env, tmp_path / "w1.log") as doomed:
        deadline = time.monotonic() + 30
        while not fake_llm.requests_of("action"):  # the model's turn 1 has begun, and hangs
            assert time.monotonic() < deadline, "the model was never asked"
            await asyncio.sleep(0.05)
        doomed.kill()
    with worker_process(env, tmp_path / "w2.log"):
        await asyncio.wait_for(following, 90)
    final = await episode(api.url, pk, EPISODE)
    assert final["status"] == "COMPLETED", final
    assert asked == [0, 2]  # turn 0 was asked once, never again
    assert turns_of(final) == [(0, 0, "SPEAK"), (1, 1, "SPEAK"), (2, 0, "SPEAK")]
    assert [t["argument"] for t in final["turns"] if t["agentIndex"] == 0] == [
        "Person at turn 0",
        "Person at turn 2",
    ]
    lost = [
        h for h in final["statusHistory"] if "stopped renewing its lease" in (h["reason"] or "")
    ]
    assert len(lost) == 1 and lost[0]["resumedFromTurn"] == 1, final["statusHistory"]


# --- tokens, turns and races ----------------------------------------------------------------------


async def test_wrong_or_missing_seat_tokens_and_actions_not_allowed_change_nothing(
    api: ApiProcess,
    worker: Process,
    fake_llm: FakeLLM,
    episodes: list[str],
    redis_client: redis.Redis,
) -> None:
    """Two people, seats 0 and 1 of three: while the episode waits for seat 0, a wrong or
    missing token, or a model's seat, is FORBIDDEN, seat 1 acting is CONFLICT (not its turn),
    an empty argument, a recipient who is not in the episode or the speaker themself are
    INVALID; each leaves the stored episode exactly as it was. A wrong token cannot follow the
    seat's stream either."""
    pk, tokens, names = await human_episode(
        api, fake_llm, "people-refusals", episodes, agents=3, humanSeats=[0, 1]
    )
    await wait_for(api.url, pk, status_is("WAITING"), query=EPISODE)
    before = await record(redis_client, pk)
    cases = [
        (speak(pk, 0, tokens[1], "Not my token"), "FORBIDDEN", ["input", "seatToken"]),
        (speak(pk, 0, "", "No token"), "FORBIDDEN", ["input", "seatToken"]),
        (speak(pk, 1, tokens[1], "Not my turn"), "CONFLICT", ["input", "seat"]),
        (speak(pk, 0, tokens[0], "   "), "INVALID", ["input", "argument"]),
        (speak(pk, 0, tokens[0], "Hi", to=["Nobody Here"]), "INVALID", ["input", "to", "0"]),
        (speak(pk, 0, tokens[0], "Hi", to=[names[0]]), "INVALID", ["input", "to", "0"]),
        (speak(pk, 2, tokens[0], "A model's seat"), "FORBIDDEN", ["input", "seatToken"]),
    ]
    for action, code, where in cases:
        payload = await submit(api.url, action)
        assert payload["sequence"] is None, payload
        [error] = payload["userErrors"]
        assert (error["code"], error["field"]) == (code, where), (action, payload)
    assert await record(redis_client, pk) == before
    for seat, token in ((0, tokens[1]), (0, ""), (2, tokens[0])):
        errors = await SeatStream(api.url, pk, seat, token).errors()
        assert errors and "wrong or missing seat token" in errors[0]["message"], errors
    assert await record(redis_client, pk) == before

    # Seat 0 acts; the episode now waits for seat 1, and seat 0 is refused: not its turn.
    assert (await submit(api.url, speak(pk, 0, tokens[0], "My turn")))["userErrors"] == []
    await wait_for(api.url, pk, lambda e: (e["waiting"] or {}).get("seats") == [1], query=EPISODE)
    again = await submit(api.url, speak(pk, 0, tokens[0], "Again"))
    assert codes(again) == ["CONFLICT"], again
    assert [t["agentIndex"] for t in (await episode(api.url, pk, EPISODE))["turns"]] == [0]


async def test_two_people_racing_for_one_seat_make_exactly_one_turn(
    api: ApiProcess, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    pk, tokens, _ = await human_episode(api, fake_llm, "people-race", episodes)
    with worker_process(env, tmp_path / "w.log"):
        await wait_for(api.url, pk, status_is("WAITING"), query=EPISODE)
    racers = [submit(api.url, speak(pk, 0, tokens[0], f"Racer {i}")) for i in range(24)]
    payloads = await asyncio.gather(*racers)
    won = [p for p in payloads if p["sequence"] is not None]
    assert len(won) == 1 and won[0]["userErrors"] == [], payloads
    lost = [p for p in payloads if p["sequence"] is None]
    assert all(codes(p) == ["CONFLICT"] for p in lost), lost
    final = await episode(api.url, pk, EPISODE)
    assert final["status"] == "QUEUED" and len(final["turns"]) == 1, final
    winner = final["turns"][0]
    assert winner["sequence"] == won[0]["sequence"] and winner["argument"].startswith("Racer ")


# --- pause, step, resume --------------------------------------------------------------------------


async def test_pause_and_resume_across_a_worker_restart(
    api: ApiProcess, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    fake_llm.delay = 0.2
    tag = "people-pause"
    scenario, agents = await make_world(tag)
    variables = start_input(scenario, agents, fake_llm.model_name(), tag=tag, maxTurns=6)
    pk, _ = await start_with_seats(api.url, variables)
    episodes.append(pk)
    with worker_process(env, tmp_path / "w1.log") as doomed:
        await wait_for(
            api.url, pk, lambda e: e["status"] == "RUNNING" and len(e["turns"]) >= 1, query=EPISODE
        )
        asked = await control(api.url, "pauseSimulation", pk)
        assert asked["userErrors"] == [], asked
        assert asked["episode"]["status"] in ("RUNNING", "PAUSED"), asked
        paused = await wait_for(api.url, pk, status_is("PAUSED"), query=EPISODE)
        doomed.kill()
    kept = paused["turns"]
    assert 1 <= len(kept) < 6 and paused["pauseAt"] is None
    with worker_process(env, tmp_path / "w2.log"):
        await asyncio.sleep(1.5)  # a new worker leaves a paused episode alone
        assert (await episode(api.url, pk, EPISODE))["turns"] == kept
        resumed = await control(api.url, "resumeSimulation", pk)
        assert resumed["userErrors"] == [], resumed
        # Queued again; the worker may have taken it already when the reply reads it.
        assert resumed["episode"]["status"] in ("QUEUED", "RUNNING", "EVALUATING"), resumed
        final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED", final
    assert final["turns"][: len(kept)] == kept  # every earlier turn kept as it was
    assert [t["turn"] for t in final["turns"]] == list(range(6))
    moves = [h["status"] for h in final["statusHistory"]]
    assert moves[:3] == ["QUEUED", "RUNNING", "PAUSED"] and moves[-4:] == [
        "QUEUED",
        "RUNNING",
        "EVALUATING",
        "COMPLETED",
    ]
    assert len(final["rewards"]) == 2


async def test_steps_play_one_turn_each_and_the_last_one_ends_the_episode(
    api: ApiProcess, worker: Process, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    """Paused while still queued, then stepped: each step plays exactly one turn and pauses
    again, and a step at the last turn goes on to the scores instead of pausing."""
    tag = "people-step"
    scenario, agents = await make_world(tag)
    variables = start_input(scenario, agents, fake_llm.model_name(), tag=tag, maxTurns=3)
    # Paused before any worker can take it: queued episodes pause at once.
    fake_llm.add_rule(Rule(kind="action", delay=0.5))
    pk, _ = await start_with_seats(api.url, variables)
    episodes.append(pk)
    paused = await control(api.url, "pauseSimulation", pk)
    if paused["episode"]["status"] != "PAUSED":  # the worker was quicker: it pauses at turn 1
        await wait_for(api.url, pk, status_is("PAUSED"), query=EPISODE)
    played = len((await episode(api.url, pk, EPISODE))["turns"])
    assert played <= 1
    while played < 2:
        stepped = await control(api.url, "stepSimulation", pk)
        assert stepped["userErrors"] == [], stepped
        assert stepped["episode"]["status"] in ("QUEUED", "RUNNING", "PAUSED"), stepped
        found = await wait_for(
            api.url, pk, lambda e: e["status"] == "PAUSED" and e["pauseAt"] is None, query=EPISODE
        )
        assert len(found["turns"]) == played + 1, found
        played += 1
    last = await control(api.url, "stepSimulation", pk)
    assert last["userErrors"] == [], last
    final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED" and len(final["turns"]) == 3, final
    after_last = [h["status"] for h in final["statusHistory"]][-4:]
    assert after_last == ["QUEUED", "RUNNING", "EVALUATING", "COMPLETED"]
    assert len(final["rewards"]) == 2


# --- environment messages -------------------------------------------------------------------------


async def test_injected_messages_reach_their_agents_from_the_next_turn(
    api: ApiProcess, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM, episodes: list[str]
) -> None:
    """Accepted while QUEUED (to everyone), PAUSED (to one agent) and RUNNING (to the other):
    each reaches the prompts of the agents it is for from the turn after it is sent, and is
    stored as the Environment's triples in `messages`; to an unknown agent it is INVALID, and on
    a finished episode CONFLICT."""
    tag = "people-inject"
    scenario, agents = await make_world(tag)
    names = [f"Ava{i} {tag}" for i in range(2)]
    variables = start_input(scenario, agents, fake_llm.model_name(), tag=tag, maxTurns=6)
    pk, _ = await start_with_seats(api.url, variables)
    episodes.append(pk)
    queued = await inject(api.url, pk, "Note while queued: the canteen is closed")
    assert queued["userErrors"] == [] and queued["environmentMessage"]["turn"] is None, queued
    assert (await control(api.url, "pauseSimulation", pk))["episode"]["status"] == "PAUSED"
    while_paused = await inject(api.url, pk, "Note while paused: for Ava1", [names[1]])
    assert while_paused["userErrors"] == [], while_paused
    unknown = await inject(api.url, pk, "To nobody", ["Nobody Here"])
    assert codes(unknown) == ["INVALID"] and unknown["environmentMessage"] is None

    fake_llm.delay = 0.2
    with worker_process(env, tmp_path / "w.log"):
        assert (await control(api.url, "resumeSimulation", pk))["userErrors"] == []
        running = await wait_for(
            api.url, pk, lambda e: e["status"] == "RUNNING" and e["turns"], query=EPISODE
        )
        sent_at = len(running["turns"])
        while_running = await inject(api.url, pk, "Note while running: for Ava0", [names[0]])
        assert while_running["userErrors"] == [], while_running
        final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED", final

    notes = {m["text"]: m for m in final["environmentMessages"]}
    assert len(notes) == 3 and "To nobody" not in notes
    assert notes["Note while queued: the canteen is closed"]["turn"] == 0
    assert notes["Note while paused: for Ava1"]["turn"] == 0
    delivered = notes["Note while running: for Ava0"]["turn"]
    assert delivered >= sent_at

    def prompts(name: str) -> list[tuple[int, str]]:
        asked = [r.text for r in fake_llm.requests_of("action") if f"You are {name}." in r.text]
        return [(int(text.rsplit("Turn #", 1)[1].split(".")[0]), text) for text in asked]

    for name, note, turn in (
        (names[0], "Note while queued: the canteen is closed", 0),
        (names[1], "Note while queued: the canteen is closed", 0),
        (names[1], "Note while paused: for Ava1", 0),
        (names[0], "Note while running: for Ava0", delivered),
    ):
        for asked_at, text in prompts(name):
            assert (note in text) == (asked_at >= turn), (name, note, asked_at)
    for name in (names[0],):
        assert all("Note while paused" not in text for _, text in prompts(name))
    assert all("Note while running" not in text for _, text in prompts(names[1]))
    messages = final["messages"]
    for name in names:
        assert ["Environment", name, "Note while queued: the canteen is closed"] in messages[0]
    assert ["Environment", names[1], "Note while paused: for Ava1"] in messages[0]
    assert ["Environment", names[0], "Note while paused: for Ava1"] not in messages[0]
    assert ["Environment", names[0], "Note while running: for Ava0"] in messages[delivered]

    refused = await inject(api.url, pk, "Too late")
    assert codes(refused) == ["CONFLICT"] and "COMPLETED" in refused["userErrors"][0]["message"]
    assert len((await episode(api.url, pk, EPISODE))["environmentMessages"]) == 3


# --- refusals -------------------------------------------------------------------------------------


async def test_control_in_a_status_where_it_makes_no_sense_is_a_conflict_that_changes_nothing(
    api: ApiProcess,
    env: dict[str, str],
    tmp_path: Path,
    fake_llm: FakeLLM,
    episodes: list[str],
    redis_client: redis.Redis,
) -> None:
    tag = "people-not-now"
    scenario, agents = await make_world(tag)
    variables = start_input(scenario, agents, fake_llm.model_name(), tag=tag, maxTurns=4)

    queued, _ = await start_with_seats(api.url, variables)  # no worker yet: it stays queued
    episodes.append(queued)
    before = await record(redis_client, queued)
    for name in ("resumeSimulation",):
        payload = await control(api.url, name, queued)
        assert codes(payload) == ["CONFLICT"] and payload["episode"]["status"] == "QUEUED"
        assert "the episode is QUEUED" in payload["userErrors"][0]["message"]
    assert await record(redis_client, queued) == before
    assert (await control(api.url, "pauseSimulation", queued))["userErrors"] == []
    before = await record(redis_client, queued)
    again = await control(api.url, "pauseSimulation", queued)
    assert (
        codes(again) == ["CONFLICT"]
        and "the episode is PAUSED" in again["userErrors"][0]["message"]
    )
    assert await record(redis_client, queued) == before
    assert (await post(api.url, CANCEL, {"id": queued}))["cancelSimulation"]["userErrors"] == []

    fake_llm.delay = 0.2
    with worker_process(env, tmp_path / "w.log"):
        pk, _ = await start_with_seats(api.url, variables)
        episodes.append(pk)
        await wait_for(api.url, pk, status_is("RUNNING"), query=EPISODE)
        resumed = await control(api.url, "resumeSimulation", pk)
        assert codes(resumed) == ["CONFLICT"], resumed
        assert "the episode is RUNNING" in resumed["userErrors"][0]["message"]
        final = await wait_for(api.url, pk, status_is(*TERMINAL), query=EPISODE)
    assert final["status"] == "COMPLETED" and len(final["turns"]) == 4, final
    assert [h["status"] for h in final["statusHistory"]] == [
        "QUEUED",
        "RUNNING",
        "EVALUATING",
        "COMPLETED",
    ]

    done = await record(redis_client, pk)
    for name in ("pauseSimulation", "resumeSimulation", "stepSimulation"):
        payload = await control(api.url, name, pk)
        assert codes(payload) == ["CONFLICT"], (name, payload)
        assert "the episode is COMPLETED" in payload["userErrors"][0]["message"], payload
        assert payload["episode"]["status"] == "COMPLETED"
    assert codes(await inject(api.url, pk, "Too late")) == ["CONFLICT"]
    for name in ("pauseSimulation", "resumeSimulation", "stepSimulation"):
        assert codes(await control(api.url, name, queued)) == ["CONFLICT"]  # cancelled
        assert codes(await control(api.url, name, "no-such-episode")) == ["NOT_FOUND"]
    assert await record(redis_client, pk) == done
