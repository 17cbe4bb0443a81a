"""A real GraphQL client (gql over HTTP) against the real uvicorn server."""

from gql import Client, GraphQLRequest
from gql.transport.httpx import HTTPXAsyncTransport


async def test_gql_client_round_trip(api_url: str) -> None:
    transport = HTTPXAsyncTransport(url=f"{api_url}/graphql")
    async with Client(transport=transport) as session:
        made = await session.execute(
            GraphQLRequest(
                "mutation($in: CreateAgentInput!) "
                "{ createAgent(input: $in) { agent { id name } } }",
                variable_values={"in": {"firstName": "Gql", "lastName": "Client"}},
            )
        )
        agent = made["createAgent"]["agent"]
        fetched = await session.execute(
            GraphQLRequest("query($id: ID!) { agent(id: $id) { name } }", variable_values=agent)
        )
    assert fetched["agent"]["name"] == "Gql Client"
