"""Every Redis key, channel and index name Parley uses, in one place.

Records themselves live at Sotopia's keys (`:<sotopia module>.<Class>:<pk>`, made by redis-om from
each model's `model_key_prefix`); everything Parley adds starts with `parley:`.
"""

SOTOPIA_PROFILES_MODULE = "sotopia.database.persistent_profile"
SOTOPIA_LOGS_MODULE = "sotopia.database.logs"
SOTOPIA_DIMENSIONS_MODULE = "sotopia.database.evaluation_dimensions"
SOTOPIA_ANNOTATORS_MODULE = "sotopia.database.annotators"
"""Sotopia's module paths, the middle of its record keys (`:<module>.<Class>:<pk>`)."""


def index_name(model: str) -> str:
    """Parley's own RediSearch index over a record type (Sotopia's migrator never touches it)."""
    return f"parley:{model}:index"


def relationship_pair(agent_id: str, other_id: str) -> str:
    """A string reserving an unordered pair of agents for their one relationship (SET NX)."""
    first, second = sorted((agent_id, other_id))
    return f"parley:relationship-pair:{first}:{second}"


def relationships_made(agent_id: str) -> str:
    """A counter bumped by every relationship made with the agent, in the script that makes it
    (resolvers/relationships.py): deleting the agent WATCHes it while it looks for the agent's
    relationships, so a relationship made meanwhile makes the deletion look again."""
    return f"parley:relationships-made:{agent_id}"


def idempotency(key: str) -> str:
    """The episode id a client's idempotency key was first used for (expires after a day)."""
    return f"parley:idempotency:{key}"


JOBS = "parley:jobs"
"""The job queue: a Stream with one entry per episode to run."""
WORKERS = "parley:workers"
"""The consumer group on JOBS that every worker reads through."""

DEADLINES = "parley:deadlines"
"""A sorted set of the WAITING episodes by the deadline of the seats they wait for (epoch
seconds): what the workers' sweep applies the timeout policies to."""


def seat_token(token_hash: str) -> str:
    """The human seat a seat token belongs to, by the SHA-256 of the token (hex), as a JSON pair
    `[episode id, seat]`: how a seat credential is found without the token being stored."""
    return f"parley:seat-token:{token_hash}"


SEAT_TOKENS_INDEXED = "parley:seat-tokens:indexed"
"""Set once the seats of episodes stored before `seat_token` existed have their keys."""

EPISODES_CHANNEL = "parley:events:episodes"
"""Pub/sub channel with the status events of every episode (turns go only to their episode's)."""


def episode_channel(episode_id: str) -> str:
    """Pub/sub channel with every event of one episode."""
    return f"parley:events:episode:{episode_id}"


EVENTS_LOG = "parley:events:log"
"""A Stream of every status event, trimmed to the retention window: what episodeUpdates resumes
from after a reconnect (the id of each entry is the stream's cursor)."""

HUB_KEEPALIVE = "parley:events:hub"
"""Always subscribed by each process's hub, so a dropped connection is noticed while idle."""

CAPABILITY_PROBE = "parley:capability-probe"
"""Read (never written) at start-up to learn whether the JSON module is loaded."""

RESULTS_INDEX = "parley:results:index"
"""RediSearch index over episodes for grouped results: JSONPath fields per seat (model, agent,
each dimension's score), aggregated with FT.AGGREGATE (storage/results_index.py)."""
INDEXED_DIMENSIONS = "parley:results:dimensions"
"""A set of the dimension names (besides Sotopia's seven) the results indexes have score fields
for, or are about to have: what their cap is counted on (storage/results_index.py)."""
EVALUATIONS_INDEX = "parley:evaluations:index"
"""The same fields over the evaluation records below, for results of a re-judging."""
EVALUATION_PREFIX = "parley:evaluation:"
SCORES_VERSION = "parley:scores-version"
"""A counter raised by every write that may change what agreement figures are computed from
besides ratings: an episode's scores or evaluations (its own judgement, a re-judging), an
episode made, imported or deleted (a tag's episodes), an experiment's slots filled. A kept
answer is fresh while this and its studies' ratings versions are unchanged."""


def evaluation_record(rejudging_id: str, episode_id: str) -> str:
    """One episode's evaluation of a re-judging, with the episode's fields the results group by
    (JSON); the evaluation itself is kept in the episode's `evaluations`."""
    return f"{EVALUATION_PREFIX}{rejudging_id}:{episode_id}"


def rejudging(rejudging_id: str) -> str:
    """A re-judging's settings and size (hash)."""
    return f"parley:rejudging:{rejudging_id}"


EXPERIMENTS = ("parley", "experiment")
"""Experiment records (redis-om's global and model key prefixes): `parley:experiment:<id>`,
indexed as `parley:Experiment:index`."""
EXPERIMENT_NAMES = "parley:experiment-names"
"""A hash from an experiment's name and tag (a JSON pair) to its id: one experiment per pair."""


def experiment_plan(experiment_id: str) -> str:
    """A JSON array of an experiment's slots, in design order (kept apart from the record, so
    listing experiments does not read them)."""
    return f"parley:experiment-plan:{experiment_id}"


def experiment_slots(experiment_id: str) -> str:
    """A hash from an experiment's slot number to the episode that currently fills it."""
    return f"parley:experiment-slots:{experiment_id}"


PACED_EXPERIMENTS = "parley:paced-experiments"
"""A set of the paced experiments started and not yet stopped, cancelled or filled: every
worker tops them up now and then, in case an episode ended where none did (a worker died)."""


def experiment_pacing(experiment_id: str) -> str:
    """The lock held while a paced experiment decides what to queue (lifecycle/pacing.py)."""
    return f"parley:experiment-pacing:{experiment_id}"


def experiment_pacing_wanted(experiment_id: str) -> str:
    """A count of the asks to queue more of a paced experiment (lifecycle/experiments.py's
    `top_up`): the lock's holder fills again while it moves."""
    return f"parley:experiment-pacing-wanted:{experiment_id}"


def experiment_rejudgings(experiment_id: str) -> str:
    """The re-judgings made of an experiment's episodes (`rejudgeEpisodes(experimentId)`): a
    sorted set of their ids, scored by when each was queued."""
    return f"parley:experiment-rejudgings:{experiment_id}"


def experiment_studies(experiment_id: str) -> str:
    """The rating studies made of an experiment's episodes (`episodes: {experimentId}`): a
    sorted set of their ids, scored by when each was made."""
    return f"parley:experiment-studies:{experiment_id}"


def experiment_slot_claim(experiment_id: str, slot: int, previous: str) -> str:
    """The idempotency key (see `idempotency`) of the episode that fills a slot after episode
    `previous` ("" for the first): concurrent starts of one slot make one episode."""
    return f"experiment:{experiment_id}:{slot}:{previous or 'first'}"


def draft_job(job_id: str) -> str:
    """A draft job's settings and its parts' sizes (JSON); expires with its parts."""
    return f"parley:draft-job:{job_id}"


def draft_job_parts(job_id: str) -> str:
    """A hash from a draft job's part number to that part's outcome (JSON), and from
    `starts:<part>` to how many times a worker began it."""
    return f"parley:draft-job-parts:{job_id}"


def annotation(pk: str) -> str:
    """A person's rating of an episode, as Sotopia stores one (`AnnotationForEpisode`, JSON)."""
    return f":{SOTOPIA_LOGS_MODULE}.AnnotationForEpisode:{pk}"


def annotator(pk: str) -> str:
    """A person who rates episodes, as Sotopia stores one (`Annotator`, JSON)."""
    return f":{SOTOPIA_ANNOTATORS_MODULE}.Annotator:{pk}"


ANNOTATION_INDEX = f":{SOTOPIA_LOGS_MODULE}.AnnotationForEpisode:index"
"""Sotopia's own index over ratings, by its name and schema (storage/studies.py), so that
Sotopia's `AnnotationForEpisode.find()` reads the ratings Parley stores."""
ANNOTATION_INDEX_HASH = f"{ANNOTATION_INDEX}:hash"
"""Where Sotopia's index migrator keeps the SHA-1 of that index's schema."""

RATING_STUDIES = ("parley", "rating-study")
"""Rating study records (redis-om's global and model key prefixes):
`parley:rating-study:<id>`, indexed as `parley:RatingStudy:index`."""


def rater_token(token_hash: str) -> str:
    """The rater a rater token belongs to, by the SHA-256 of the token (hex), as a JSON pair
    `[study id, rater]`: how a rater credential is found without the token being stored."""
    return f"parley:rater-token:{token_hash}"


def study_ratings(study_id: str) -> str:
    """A hash from a rater's episode (`<rater>:<episode number>`) to how many times its rating
    was saved: the revision a draft or a new save must be based on."""
    return f"parley:study-ratings:{study_id}"


def study_progress(study_id: str) -> str:
    """A hash from a rater's number to how many of their episodes they have rated."""
    return f"parley:study-progress:{study_id}"


def study_drafts(study_id: str) -> str:
    """A hash from a rater's episode (`<rater>:<episode number>`) to the rating they are
    typing (JSON), until they save it."""
    return f"parley:study-drafts:{study_id}"


def study_results_version(study_id: str) -> str:
    """The version of the ratings a study's evaluation records (its raters' means, for results)
    were last written from: the sum of its rating revisions then (a string of an integer)."""
    return f"parley:study-results-version:{study_id}"


def study_results_inputs(study_id: str) -> str:
    """The version of everything a study's evaluation records were last written from (as
    `StudyStore.agreement_version` gives it: the ratings, and the episodes stored): while it is
    unchanged they are not written again."""
    return f"parley:study-results-inputs:{study_id}"


def imported_study(study_id: str) -> str:
    """The line of a rating study an import read (JSON: its name, rubric and episodes), kept so
    that its ratings in a later part of the file (a remote import sends one in parts), or in a
    later import, are checked against it; never a study's record."""
    return f"parley:imported-study:{study_id}"


def study_gold(study_id: str) -> str:
    """A hash from a rater's gold episode (`<rater>:<episode number>`) to how their saved
    rating compares with the expected scores (JSON)."""
    return f"parley:study-gold:{study_id}"


def model_calls(episode_id: str) -> str:
    """The episode's ledger of model calls: a Stream, one entry per call in the order they
    ended (its entry id is the call's cursor); see storage/ledger.py."""
    return f"parley:calls:{episode_id}"


def model_call_bodies(episode_id: str) -> str:
    """A set of the content hashes the episode's calls refer to: each counted once in
    CALL_BODY_REFS however often the episode sends it."""
    return f"parley:calls:{episode_id}:bodies"


CALL_BODY_PREFIX = "parley:call-body:"
"""A message or response format of a model call, stored once as its canonical JSON at this
prefix plus its SHA-256 (hex)."""


def call_body(content_hash: str) -> str:
    return f"{CALL_BODY_PREFIX}{content_hash}"


CALL_BODY_REFS = "parley:call-body-refs"
"""A hash: for each stored body, how many episodes' ledgers refer to it (the body goes with the
last of them)."""

CALL_ANSWERS = "parley:call-answers"
"""A hash from a request's hash (engine/ledger.py `content_hash` of the body sent) to the ledger
entry that answered it (`[episode, entry id]` as JSON, the latest): what an experiment's cache mode
answers an identical request with. A ledger's deletion takes out the entries it holds."""

CALL_LEDGERS = "parley:calls:episodes"
"""A sorted set of the episodes with a ledger by the time of its last call (epoch seconds):
what the retention sweep deletes from."""


def provider_limit(key_hash: str) -> str:
    """A provider key's shared allowance (hash; the key's name by its SHA-256, hex): when each
    rate next lets a request go (`requests_at`, `tokens_at`), the hold a 429 set
    (`hold_until`), this minute's `requests` and `tokens` (of `minute`), and the 429s seen
    (`rate_limited`); see storage/provider_limits.py. Expires a day after its last call."""
    return f"parley:provider-limit:{key_hash}"


def provider_limit_holders(key_hash: str) -> str:
    """The calls in flight on a provider key: a sorted set of their leases by deadline (epoch
    seconds), so a process that dies mid-call loses its place when the lease ends."""
    return f"parley:provider-limit:{key_hash}:holders"


REPLICATION_PROBE = "parley:replication-probe"
"""A channel nobody subscribes to: a PUBLISH to it before WAIT makes WAIT cover every write
already made, whichever connection made it (storage/durability.py)."""
