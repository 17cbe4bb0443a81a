"""What a job's run records when it fails in a way nobody expected."""


def crash_reason(err: BaseException) -> str:
    """What a job that failed in a way nobody expected records: what was raised, and its
    message (the traceback goes to the worker's log)."""
    detail = str(err).strip()
    return f"internal error in the worker: {type(err).__name__}" + (f": {detail}" if detail else "")
