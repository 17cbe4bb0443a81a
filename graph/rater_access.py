"""What a person holding only a rater token may ask: their own ratings of their study, nothing
else.

Where the API has tokens, a rater is not given one: the rating page sends
`Authorization: Rater <rater token>` (a websocket, `{"raterToken": …}` in connection_init). As
with a seat's (graph/seat_access.py, which judges both), the credential is looked up when it
arrives (lifecycle/studies.py `Studies.holder`): an unknown one, a renewed one and one of a closed
study are refused like a wrong bearer token; a known one scopes the request to one rater of one
study, who may only read their assignment (`raterAssignment`), keep a draft
(`saveRatingDraft`) and save a rating (`saveRating`), each naming that study and rater
(`RATER_FIELDS`); every other root field needs an API token.
"""

from graphql import OperationType

from parley.graph.scoped_fields import ScopedField, offered_token

RATER_SCHEME = "rater"

RATER_FIELDS: dict[OperationType, dict[str, ScopedField]] = {
    OperationType.QUERY: {"raterAssignment": ScopedField(("studyId",), ("rater",))},
    OperationType.MUTATION: {
        "saveRating": ScopedField(("input", "studyId"), ("input", "rater")),
        "saveRatingDraft": ScopedField(("input", "studyId"), ("input", "rater")),
    },
}
"""Every root field a rater credential may use; any other needs an API token."""
RATER_REFUSED = (
    "a rater token grants only raterAssignment, saveRating and saveRatingDraft of its own "
    "rater; other operations need an API token"
)


def rater_connection(params: object) -> str | None:
    """The rater token a websocket connection_init payload offers, if any."""
    return offered_token(params, "raterToken")
