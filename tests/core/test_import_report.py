"""The report of an import: the parts of a file sent one by one add up to the report of the
whole file, lines numbered in it, and it travels as JSON unchanged."""

from collections import Counter

from parley.core.import_report import MAX_LISTED, ImportReport, Problem


def part(created: dict[str, int], problems: list[tuple[int, str]]) -> ImportReport:
    report = ImportReport(created=Counter(created))
    for line, reason in problems:
        report.refuse(line, reason)
    return report


def test_parts_add_up_with_their_lines_numbered_in_the_whole_file() -> None:
    whole = ImportReport()
    whole.add(part({"agents": 2}, [(3, "not valid JSON")]), line_offset=0)
    whole.add(part({"agents": 1, "scenarios": 1}, [(1, "too large")]), line_offset=10)
    assert whole.created == Counter({"agents": 3, "scenarios": 1})
    assert whole.problems == [Problem(3, "not valid JSON"), Problem(11, "too large")]
    assert whole.invalid == 2


def test_past_the_listed_cap_invalid_lines_are_counted_but_not_listed() -> None:
    crowded = part({}, [(n, "bad") for n in range(1, MAX_LISTED + 6)])
    assert crowded.invalid == MAX_LISTED + 5 and len(crowded.problems) == MAX_LISTED
    whole = part({}, [(1, "first")])
    whole.add(crowded, line_offset=1)
    assert whole.invalid == 1 + MAX_LISTED + 5  # the unlisted ones of the part counted too
    assert len(whole.problems) == MAX_LISTED
    assert whole.problems[:2] == [Problem(1, "first"), Problem(2, "bad")]


def test_the_json_answer_reads_back_as_the_same_report() -> None:
    report = part({"agents": 2, "episodes": 1}, [(4, "an id is 1 to 100 letters")])
    report.skipped["scenarios"] = 3
    report.invalid += 7  # refused past the listed cap
    again = ImportReport.from_json(report.as_json())
    assert again == report
