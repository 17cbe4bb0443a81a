"""A mutation naming an episode that does not exist says so on the input field that named it,
`episodeId` (injectEvent and claimSeat named `id`, a field their inputs do not have), and
writes nothing."""

from typing import Any

import pytest

from tests.support.server import GraphQLClient

MUTATIONS = {
    "injectEvent": ("InjectEventInput", {"episodeId": "no-such-episode", "text": "Rain."}),
    "claimSeat": ("ClaimSeatInput", {"episodeId": "no-such-episode", "seat": 0}),
    "forkEpisode": ("ForkEpisodeInput", {"episodeId": "no-such-episode", "atTurn": 0}),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
async def test_an_unknown_episode_is_named_by_its_field(
    gql: GraphQLClient, unchanged: Any, mutation: str
) -> None:
    input_type, given = MUTATIONS[mutation]
    document = (
        f"mutation($input: {input_type}!) {{ {mutation}(input: $input) "
        "{ userErrors { field message code } } }"
    )
    async with unchanged():
        payload = (await gql.data(document, {"input": given}))[mutation]
    [error] = payload["userErrors"]
    assert (error["field"], error["code"]) == (["input", "episodeId"], "NOT_FOUND"), error
    assert "no-such-episode" in error["message"]
