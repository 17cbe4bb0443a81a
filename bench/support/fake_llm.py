"""A fake OpenAI-compatible server for tests and benchmarks.

Runs a Starlette app under uvicorn in a background thread on 127.0.0.1 (free
port), so the test process and other processes (a worker subprocess pointed at
`custom/fake@<base_url>`) can use it. With no script it answers every action
request with a short `speak` and every judge request with an in-range score, so
whole episodes complete. Rules script other answers (HTTP errors, garbage,
hangs, out-of-range scores, leaving); every request is recorded.

    with FakeLLM(delay=0.2) as fake:
        fake.add_rule(Rule(kind="action", status=500))   # one HTTP 500
        model = fake.model_name()                          # custom/fake@http://127.0.0.1:…/v1

Other processes can script it too: POST /_fake/rules (a JSON list of rules),
POST /_fake/reset, GET /_fake/requests, GET /_fake/stats. `python -m bench.support.fake_llm`
serves one until interrupted.

`begin_scope` gives `base_url` a path of its own (the tests' shared server does this for each
test): a request through an earlier scope's URL, sent just before its test ended and read only
now, is answered by default and neither takes a rule nor is recorded.

Answers carry OpenAI's `usage` (4 characters a token), recorded with each request;
`FakeLLM(usage=False)`, `--no-usage` or a rule's `usage=False` leave it out.

A rate limit answers 429 beyond it, with Retry-After (and OpenAI's retry-after-ms) when it
knows when to come back:

    FakeLLM(delay=0.2, limit=RateLimit(in_flight=40))      # 429 without Retry-After
    FakeLLM(delay=0.2, limit=RateLimit(per_second=200))    # 429 with the seconds to wait
    FakeLLM(limit=RateLimit(per_minute=60))                 # per API key, as providers count
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import deque
from collections.abc import Iterator
from typing import Any, Literal

import uvicorn
from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from parley.core.processes import stop_process
from parley.engine.llm import SCHEMA_INSTRUCTION

Kind = Literal["action", "text_action", "judge", "other"]


class Rule(BaseModel):
    """A scripted answer for the next matching request(s)."""

    kind: Literal["any", "action", "text_action", "judge"] = "any"
    """'action' matches JSON and text action requests; 'text_action' only text ones."""
    contains: list[str] = Field(default_factory=list)
    """Substrings that must all occur in the request's messages."""
    model: str | None = None
    """The model the request names (`custom/<model>@...`'s <model>); None = any."""
    times: int | None = 1
    """How many requests this rule answers; None = all of them."""
    status: int = 200
    content: str | None = None
    """Raw reply text; None = the default answer for the request."""
    delay: float = 0.0
    hang: bool = False
    """Never answer (until the server stops or is reset)."""
    repeat: bool = False
    """Answer an agent's turn with the one line that agent always says in such answers (a
    repeat of its earlier line, once it has said it); other requests as usual."""
    usage: bool | None = None
    """Send `usage` with the answer; None = as the server does (`FakeLLM.usage`)."""
    score: int | None = None
    """Answer a judge request with this score on every dimension (kept within its range)."""
    retry_after: float | None = None
    """Seconds said in a Retry-After header with a scripted error status."""

    @classmethod
    def leave(cls, agent: str, turn: int | None = None) -> Rule:
        """`agent` leaves (at `turn`, for JSON-action prompts)."""
        contains = [f"You are {agent}."]
        if turn is not None:
            contains.append(f"Turn #{turn}.")
        return cls(
            kind="action",
            contains=contains,
            content=json.dumps({"action_type": "leave", "argument": "", "to": []}),
        )

    @classmethod
    def action(
        cls,
        agent: str,
        action_type: str,
        argument: str = "",
        to: list[str] | None = None,
        times: int | None = 1,
    ) -> Rule:
        body = {"action_type": action_type, "argument": argument, "to": to or []}
        return cls(
            kind="action", contains=[f"You are {agent}."], content=json.dumps(body), times=times
        )


class RateLimit(BaseModel):
    """At most `in_flight` requests at once and `per_second` in any second; beyond either, 429."""

    in_flight: int | None = None
    per_second: int | None = None
    per_minute: int | None = None
    """Requests of one API key (its Authorization header) in any `window` seconds; one over
    is told when the oldest of them ages out."""
    window: float = 60.0
    retry_after: float | None = None
    """Seconds to wait, said with a 429 for too many at once (None: nothing said, as TGI and
    Ollama do); one over the per-second limit is told when the oldest request of the last
    second ages out."""


class RecordedRequest(BaseModel):
    kind: Kind
    body: dict[str, Any]
    text: str
    """All message contents joined by newlines."""
    status: int
    peer: str = ""
    """The client's address and port (which connection sent it)."""
    received: float = 0.0
    reply: str | None = None
    """The text answered (None: an error)."""
    usage: dict[str, int] | None = None
    """The `usage` answered (None: the answer had none, or was an error)."""


def _schema_of(body: dict[str, Any], text: str) -> tuple[str, dict[str, Any] | None]:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return str(spec.get("name", "")), spec.get("schema")
    if SCHEMA_INSTRUCTION in text:
        raw = text.rsplit(SCHEMA_INSTRUCTION, 1)[1].strip()
        try:
            schema, _ = json.JSONDecoder().raw_decode(raw)
        except ValueError:
            return "", None
        return "", schema
    return "", None


def classify(body: dict[str, Any]) -> tuple[Kind, dict[str, Any] | None, str]:
    messages = body.get("messages") or []
    text = "\n".join(str(m.get("content", "")) for m in messages)
    name, schema = _schema_of(body, text)
    if schema is not None:
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        kind: Kind = "action" if name == "agent_action" or "action_type" in props else "judge"
        return kind, schema, text
    if messages and messages[-1].get("role") == "assistant":
        return "text_action", None, text
    return "other", None, text


def sample(
    schema: dict[str, Any], root: dict[str, Any] | None = None, score: int | None = None
) -> Any:
    """A valid value for the simple schemas the engine sends (integers mid-range, or `score`
    kept within their range)."""
    root = root or schema
    if "$ref" in schema:  # "#/$defs/<name>"
        return sample(root["$defs"][schema["$ref"].rsplit("/", 1)[1]], root, score)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: sample(v, root, score) for k, v in schema.get("properties", {}).items()}
    if kind == "integer":
        low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 10))
        return (low + high) // 2 if score is None else min(high, max(low, score))
    if kind == "number":
        return 0.0
    if kind == "array":
        return []
    if kind == "boolean":
        return True
    limit = int(schema.get("maxLength", 40))
    return "Reasonable behaviour."[:limit]


FIRST_NAMES = ["Maya", "Jonas", "Priya", "Tomas", "Lena", "Omar", "Ines", "Kofi"]
LAST_NAMES = ["Okafor", "Lindqvist", "Raman", "Novak", "Vogel", "Haddad", "Sousa", "Mensah"]


def draft_person(i: int) -> dict[str, Any]:
    """A full Sotopia agent profile, different for each `i` (below 64: names have no digits)."""
    n = len(FIRST_NAMES)
    first, last = FIRST_NAMES[i % n], LAST_NAMES[(i + i // n) % n]
    return {
        "first_name": first,
        "last_name": last,
        "age": 25 + i,
        "occupation": "Teacher" if i % 2 else "Nurse",
        "gender": "Woman" if i % 2 == 0 else "Man",
        "gender_pronoun": "she/her" if i % 2 == 0 else "he/him",
        "public_info": f"{first} lives in the city centre.",
        "big_five": "Openness: high; Conscientiousness: high; Extraversion: low",
        "moral_values": ["Care"],
        "schwartz_personal_values": ["Benevolence"],
        "personality_and_values": f"{first} is patient and values honesty.",
        "decision_making_style": "Analytical",
        "secret": f"{first} is planning to move abroad.",
        "mbti": "INFJ",
    }


def draft_scene(i: int, seats: int, relationship: str = "friend") -> dict[str, Any]:
    """A scenario with one goal per seat, using Sotopia's hint tags."""
    goals = [
        f"Settle the rent for next month (seat {s + 1}) <extra_info>You have saved less than "
        "you said.</extra_info> <strategy_hint>Offer something in return.</strategy_hint>"
        for s in range(seats)
    ]
    return {
        "codename": f"rent_talk_{i}",
        "scenario": f"Two roommates sit down to talk about the rent (version {i}).",
        "agent_goals": goals,
        "relationship": relationship,
    }


def draft_world_answer(
    agents: int, scenarios: int, seats: int, pairs: bool, relationship: str = "friend"
) -> dict[str, Any]:
    """A valid answer to a draft request asking for these counts."""
    out: dict[str, Any] = {}
    if agents:
        out["agents"] = [draft_person(i) for i in range(agents)]
    if scenarios:
        out["scenarios"] = [draft_scene(i, seats, relationship) for i in range(scenarios)]
    if pairs:
        out["relationships"] = [
            {"relationship": relationship,
             "background_story": f"Shared a flat for {a + b + 2} years."}
            for a in range(agents) for b in range(a + 1, agents)
        ]  # fmt: skip
    return out


def _draft_answer(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to a draft request (engine/drafting.py), read from its schema; None if the
    schema is not one."""
    props = schema.get("properties", {})
    if not props or not set(props) <= {"agents", "scenarios", "relationships"}:
        return None
    agents = int(props.get("agents", {}).get("minItems", 0))
    scenes = props.get("scenarios", {})
    seats = int(scenes.get("items", {}).get("properties", {}).get("agent_goals", {})
                .get("minItems", 2))  # fmt: skip
    return draft_world_answer(
        agents, int(scenes.get("minItems", 0)), seats, "relationships" in props
    )


def repeated_answer(kind: Kind, schema: dict[str, Any] | None, text: str) -> str:
    """The same line every time for the same agent (`Rule.repeat`)."""
    if kind == "action":
        who = re.search(r"You are ([^.\n]+)\.", text)
        argument = f"Hello, this is {who.group(1) if who else 'someone'}."
        return json.dumps({"action_type": "speak", "argument": argument, "to": []})
    if kind == "text_action":
        return "Nice to see you."
    return default_answer(kind, schema, text)


def default_answer(kind: Kind, schema: dict[str, Any] | None, text: str) -> str:
    if kind == "action":
        who = re.search(r"You are ([^.\n]+)\.", text)
        turns = re.findall(r"Turn #(\d+)\.", text)  # the last one: the turn asked for
        name = who.group(1) if who else "someone"
        argument = f"Hello, this is {name} at turn {turns[-1] if turns else '?'}."
        return json.dumps({"action_type": "speak", "argument": argument, "to": []})
    if kind == "text_action":
        # A different line each turn (agents do not repeat themselves word for word).
        return f"Nice to see you, how are you today? ({text.count(chr(10))})"
    if kind == "judge" and schema is not None:
        drafted = _draft_answer(schema)
        return json.dumps(sample(schema) if drafted is None else drafted)
    return "OK"


class FakeLLM:
    """The fake server; a context manager that starts and stops it."""

    def __init__(
        self,
        delay: float = 0.0,
        faults: dict[str, float] | None = None,
        limit: RateLimit | None = None,
        usage: bool = True,
    ) -> None:
        self.delay = delay
        self.usage = usage
        """Answers carry OpenAI's `usage` (prompt and completion tokens, 4 characters each)."""
        self.limit = limit or RateLimit()
        self.in_flight = 0
        self.peak_in_flight = 0
        self._generation = 0
        """Bumped by `reset`: the requests a hang rule held for an earlier test then end."""
        self._scope: str | None = None
        """Set by `begin_scope`: the path prefix of `base_url`."""
        self.rejected = 0
        """Requests answered 429 by the rate limit."""
        self._admitted: deque[float] = deque()
        self._admitted_by_key: dict[str, deque[float]] = {}
        self.faults = faults or {}
        """Chance of each unscripted answer going wrong: "500", "429", "garbage", "hang",
        "repeat" (an agent's turn answered with a line it says every time)."""
        self._chance = random.Random(0)
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._requests: list[RecordedRequest] = []
        self._stopping = False
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/s/{scope}/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/s/{scope}/v1/models", self._models, methods=["GET"]),
                Route("/_fake/rules", self._post_rules, methods=["POST"]),
                Route("/_fake/reset", self._post_reset, methods=["POST"]),
                Route("/_fake/requests", self._get_requests, methods=["GET"]),
                Route("/_fake/stats", self._get_stats, methods=["GET"]),
            ]
        )

    # --- control -----------------------------------------------------------------
    @property
    def base_url(self) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return f"{root}/s/{self._scope}/v1" if self._scope else f"{root}/v1"

    def begin_scope(self) -> None:
        """Give `base_url` a path of its own from here on. A request through an earlier scope's
        URL (one a finished test sent just before it stopped waiting, read by the server only
        now) is answered by default: it takes no rule, counts in no limit and is not recorded.
        The plain URL of no scope is always current."""
        self._scope = uuid.uuid4().hex[:12]

    def end_scope(self) -> None:
        self._scope = None

    def model_name(self, model: str = "fake") -> str:
        return f"custom/{model}@{self.base_url}"

    def add_rule(self, *rules: Rule) -> None:
        with self._lock:
            self._rules.extend(rules)

    def reset(self) -> None:
        """No rules, no recorded requests, no rate limit; usage reported."""
        with self._lock:
            self._rules.clear()
            self._requests.clear()
        self.limit = RateLimit()
        self.usage = True
        self.peak_in_flight = self.rejected = 0
        self._admitted_by_key.clear()
        self._generation += 1

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_of(self, kind: Kind, mentioning: str = "") -> list[RecordedRequest]:
        """The recorded requests of one kind, and only those whose text has `mentioning` (a
        world's tag: the session's other episodes may reach this server too)."""
        return [r for r in self.requests if r.kind == kind and mentioning in r.text]

    def _take_rule(self, kind: Kind, text: str, model: str) -> Rule | None:
        with self._lock:
            for rule in self._rules:
                wanted = rule.kind
                if wanted == "action" and kind not in ("action", "text_action"):
                    continue
                if wanted not in ("any", "action") and wanted != kind:
                    continue
                if not all(s in text for s in rule.contains):
                    continue
                if rule.model is not None and rule.model != model:
                    continue
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        self._rules.remove(rule)
                return rule
        return None

    def _fault(self) -> Rule | None:
        """A random fault by the configured chances (checked in turn), or None."""
        roll = self._chance.random()
        for fault, chance in self.faults.items():
            if roll < chance:
                if fault == "garbage":
                    return Rule(content="Sure! Here you go: {not json", times=None)
                if fault == "hang":
                    return Rule(hang=True, times=None)
                if fault == "repeat":
                    return Rule(repeat=True, times=None)
                return Rule(status=int(fault), times=None)
            roll -= chance
        return None

    def _over_limit(self, api_key: str) -> tuple[bool, float | None]:
        """Whether the rate limit refuses this request (else it is admitted), and the seconds
        to tell the client to wait."""
        now = time.monotonic()
        if self.limit.per_minute is not None:
            keyed = self._admitted_by_key.setdefault(api_key, deque())
            while keyed and keyed[0] <= now - self.limit.window:
                keyed.popleft()
            if len(keyed) >= self.limit.per_minute:
                return True, keyed[0] + self.limit.window - now
            keyed.append(now)
        window = self._admitted
        while window and window[0] <= now - 1.0:
            window.popleft()
        if self.limit.in_flight is not None and self.in_flight >= self.limit.in_flight:
            return True, self.limit.retry_after
        if self.limit.per_second is not None and len(window) >= self.limit.per_second:
            return True, window[0] + 1.0 - now
        if self.limit.per_second is not None:
            window.append(now)
        return False, None

    # --- endpoints ---------------------------------------------------------------
    async def _chat(self, request: Request) -> Response:
        scope = request.path_params.get("scope")
        if scope is not None and scope != self._scope:
            return await self._answer(request, stale=True)
        refused, wait = self._over_limit(request.headers.get("authorization", ""))
        if refused:
            self.rejected += 1
            headers = {}
            if wait is not None:
                headers["retry-after"] = str(math.ceil(wait))
                headers["retry-after-ms"] = f"{wait * 1000:.0f}"
            error = {"error": {"message": "rate limit reached", "type": "rate_limit"}}
            return JSONResponse(error, status_code=429, headers=headers)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: Request, stale: bool = False) -> Response:
        """The answer to a chat request: by the first matching rule, a random fault or by
        default; a `stale` request (an earlier scope's) by default, unrecorded."""
        body = await request.json()
        kind, schema, text = classify(body)
        rule = None
        if not stale:
            rule = self._take_rule(kind, text, str(body.get("model", ""))) or self._fault()
        status = rule.status if rule else 200
        peer = f"{request.client.host}:{request.client.port}" if request.client else ""
        recorded = RecordedRequest(
            kind=kind, body=body, text=text, status=status, peer=peer, received=time.time()
        )
        if not stale:
            with self._lock:
                self._requests.append(recorded)
        delay = self.delay + (rule.delay if rule else 0.0)
        if delay:
            await asyncio.sleep(delay)
        if rule is not None and rule.hang:
            held = self._generation
            while not self._stopping and held == self._generation:  # noqa: ASYNC110 - set from another thread
                await asyncio.sleep(0.05)
            return JSONResponse({"error": {"message": "shutting down"}}, status_code=503)
        if status != 200:
            said = rule.retry_after if rule is not None else None
            return JSONResponse(
                {"error": {"message": f"scripted HTTP {status}", "type": "fake"}},
                status_code=status,
                headers={} if said is None else {"retry-after": f"{said:g}"},
            )
        content = rule.content if rule and rule.content is not None else None
        if content is None and rule is not None and rule.score is not None and schema:
            content = json.dumps(sample(schema, score=rule.score)) if kind == "judge" else None
        if content is None:
            answer_of = repeated_answer if rule is not None and rule.repeat else default_answer
            content = answer_of(kind, schema, text)
        answer: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "fake")),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        usage: dict[str, int] | None = None
        if rule.usage if rule is not None and rule.usage is not None else self.usage:
            usage = {"prompt_tokens": len(text) // 4, "completion_tokens": len(content) // 4}
            answer["usage"] = {**usage, "total_tokens": sum(usage.values())}
        with self._lock:
            recorded.reply, recorded.usage = content, usage
        return JSONResponse(answer)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    async def _post_rules(self, request: Request) -> Response:
        rules = [Rule.model_validate(r) for r in await request.json()]
        self.add_rule(*rules)
        return JSONResponse({"rules": len(rules)})

    async def _post_reset(self, request: Request) -> Response:
        self.reset()
        return JSONResponse({"ok": True})

    async def _get_requests(self, request: Request) -> Response:
        return JSONResponse([r.model_dump() for r in self.requests])

    async def _get_stats(self, request: Request) -> Response:
        with self._lock:
            served = len(self._requests)
        return JSONResponse(
            {
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight,
                "served": served,
                "rejected": self.rejected,
            }
        )

    # --- lifecycle ---------------------------------------------------------------
    def start(self) -> FakeLLM:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", timeout_graceful_shutdown=1, lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._stopping = False
        server = self._server
        self._thread = threading.Thread(
            target=lambda: server.run(sockets=[sock]), name="fake-llm", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._stopping = True
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def fake_llm_process(
    port: int,
    delay: float = 0.0,
    faults: str = "",
    limit: RateLimit | None = None,
    usage: bool = True,
) -> Iterator[tuple[str, int]]:
    """The fake in a process of its own (so its CPU is not the caller's); yields its base URL
    and pid once it answers, and stops it by pid."""
    limit = limit or RateLimit()
    limits = [] if limit.retry_after is None else ["--retry-after", str(limit.retry_after)]
    if limit.in_flight is not None:
        limits += ["--max-in-flight", str(limit.in_flight)]
    if limit.per_second is not None:
        limits += ["--per-second", str(limit.per_second)]
    if limit.per_minute is not None:
        limits += ["--per-minute", str(limit.per_minute), "--window", str(limit.window)]
    if not usage:
        limits.append("--no-usage")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.support.fake_llm",
            "--port",
            str(port),
            "--delay",
            str(delay),
            "--faults",
            faults,
            *limits,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 20
        while not _answers(f"{base}/models"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the fake LLM did not start")
            time.sleep(0.1)
        yield base, process.pid
    finally:
        stop_process(process, 10)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the fake OpenAI-compatible LLM.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument(
        "--faults",
        default="",
        help='chances of unscripted faults, e.g. "500=0.08,429=0.03,garbage=0.04,hang=0.01" '
        "(and repeat=: an agent's turn answered with the line it always says)",
    )
    parser.add_argument("--max-in-flight", type=int, help="429 beyond this many at once")
    parser.add_argument("--per-second", type=int, help="429 beyond this many in any second")
    parser.add_argument("--per-minute", type=int, help="429 beyond this many a minute per key")
    parser.add_argument("--window", type=float, default=60.0, help="the minute's seconds")
    parser.add_argument("--retry-after", type=float, help="seconds said with a 429 (at once)")
    parser.add_argument("--no-usage", action="store_true", help="answer without `usage`")
    args = parser.parse_args()
    faults = {k: float(v) for k, v in (f.split("=") for f in args.faults.split(",") if f)}
    limit = RateLimit(
        in_flight=args.max_in_flight,
        per_second=args.per_second,
        per_minute=args.per_minute,
        window=args.window,
        retry_after=args.retry_after,
    )
    fake = FakeLLM(delay=args.delay, faults=faults, limit=limit, usage=not args.no_usage)
    fake.port = args.port
    with fake:
        print(fake.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
