"""What a job records when it fails in a way nobody expected: the exception's type and message."""

from parley.lifecycle.jobs import crash_reason


def test_the_reason_names_the_exception_and_its_message() -> None:
    reason = crash_reason(KeyError("seat"))
    assert reason == "internal error in the worker: KeyError: 'seat'"


def test_an_exception_without_a_message_is_named_alone() -> None:
    assert crash_reason(RuntimeError("  ")) == "internal error in the worker: RuntimeError"
