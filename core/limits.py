"""Size limits on stored text, shared by every input that writes a record."""

from typing import Annotated

from pydantic import Field, StringConstraints

NAME_MAX = 200
TEXT_MAX = 20_000
LIST_MAX = 50
MAX_JUDGE_RUNS = 10
"""Most judge runs one evaluation makes: a panel's judges, each times its repeats."""
MAX_AGENTS = 10
"""Agents (seats) in one episode."""

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=NAME_MAX)]
ShortText = Annotated[str, StringConstraints(strip_whitespace=True, max_length=NAME_MAX)]
LongText = Annotated[str, StringConstraints(max_length=TEXT_MAX)]
RequiredText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=TEXT_MAX)
]
Tags = Annotated[list[ShortText], Field(max_length=LIST_MAX)]
Age = Annotated[int, Field(ge=0, le=150)]
RECORD_ID = r"^[A-Za-z0-9_\-.]{1,100}$"
RecordId = Annotated[str, StringConstraints(min_length=1, pattern=RECORD_ID)]
"""An id: an empty one is said to be missing (a form's "choose…"), not to break the pattern."""
PATTERNS = {RECORD_ID: "an id is 1 to 100 letters, digits, '_', '-' or '.'"}
"""What each pattern a limit uses accepts, in words (core/wording.py)."""


def has_utf8_form(text: str) -> bool:
    """False for text with a lone surrogate: JSON can carry one, but Redis cannot store it."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


STUDY_RATERS_MAX = 50
"""Raters of one rating study."""
STUDY_EPISODES_MAX = 500
"""Episodes of one rating study, its gold episodes included."""
AGREEMENT_EPISODES_MAX = 5_000
"""Episodes agreement between evaluations is measured over at once."""
AGREEMENT_EVALUATIONS_MAX = 10
"""Evaluations compared at once (every two of them are)."""
STUDY_GOLD_MAX = 20
"""Gold episodes of one rating study (every rater rates each of them)."""
REASONING_MAX = 5_000
"""Characters of a rater's reasoning about one episode."""
Reasoning = Annotated[str, StringConstraints(max_length=REASONING_MAX)]
