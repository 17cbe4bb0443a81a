"""What an import of JSON lines did: records created and skipped by kind, and the lines
refused with their reasons. The server answers `POST /import` with it as JSON; a remote import
sent in parts adds up the parts' reports into one for the whole file."""

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_LISTED = 1000
"""Invalid lines listed with their reasons in one report; the rest are only counted."""


@dataclass(frozen=True)
class Problem:
    line: int
    reason: str
    code: str = "INVALID"
    """What kind of problem (core.errors.ErrorCode's values): INVALID, NOT_FOUND (a record it
    names is missing), CONFLICT (it contradicts another)."""


@dataclass
class ImportReport:
    created: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    invalid: int = 0
    problems: list[Problem] = field(default_factory=list)

    def refuse(self, line: int, reason: str, code: str = "INVALID") -> None:
        self.invalid += 1
        if len(self.problems) < MAX_LISTED:
            self.problems.append(Problem(line, reason, code))

    def add(self, other: "ImportReport", line_offset: int = 0) -> None:
        """Fold in the report of a part of the file that started after `line_offset` lines."""
        self.created.update(other.created)
        self.skipped.update(other.skipped)
        for problem in other.problems:
            self.refuse(problem.line + line_offset, problem.reason, problem.code)
        self.invalid += other.invalid - len(other.problems)

    def as_json(self) -> dict[str, Any]:
        return {
            "created": dict(self.created),
            "skipped": dict(self.skipped),
            "invalid": self.invalid,
            "problems": [
                {"line": p.line, "reason": p.reason, "code": p.code} for p in self.problems
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ImportReport":
        report = cls(Counter(data["created"]), Counter(data["skipped"]), int(data["invalid"]))
        report.problems = [
            Problem(int(p["line"]), str(p["reason"]), str(p.get("code", "INVALID")))
            for p in data["problems"]
        ]
        return report
