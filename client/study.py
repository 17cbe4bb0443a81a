"""`parley study create [STUDY.toml]`: make a rating study on a local or remote Parley and print
each rater's link (its token is shown this once); `parley study status ID`: how far each rater
has got, and the raters a gold episode flagged; `parley study results ID`: how far the raters
agree with each other and with the judge.

Talks to the server only over GraphQL over HTTP, as `parley experiment` does. Exit status: 0
(for status: every rating is in), 1 (status: ratings are still missing), 2 on an error.
"""

import argparse
import json
from pathlib import Path
from typing import Any

from parley.client.command import (
    CommandError,
    add_server_options,
    console,
    estimate,
    read_toml,
    run_command,
)
from parley.client.experiment import Remote, camel, user_errors
from parley.client.server_url import server_root

DONE, MISSING = 0, 1  # and ERROR (2) after a CommandError
CREATE = """
mutation($input: CreateRatingStudyInput!) {
  createRatingStudy(input: $input) {
    study { id name raters { rater name assigned } }
    raterLinks { rater name token }
    userErrors { field message code }
  }
}"""
STATUS = """
query($id: ID!) {
  ratingStudy(id: $id) {
    id name closedAt
    progress { assigned rated finished }
    raters { rater name assigned rated goldRated goldFlagged }
    goldChecks { rater episodeId flagged misses { agent dimension expected given } }
  }
}"""
ESTIMATE = "{ n estimate low high resamples reason }"
RESULTS = f"""
query($id: ID!) {{
  ratingStudy(id: $id) {{
    id name
    agreement {{
      dimension
      humans {{ raters alpha {ESTIMATE} icc1 {ESTIMATE} icck {ESTIMATE} iccDropped }}
      judgeVsHumans {{ judge pearson {ESTIMATE} spearman {ESTIMATE} }}
      rankings {{ judge tau {ESTIMATE} models {{ model humanMean judgeMean }} }}
    }}
  }}
}}"""
FILE_KEYS = frozenset(
    {
        "name",
        "episodes",
        "raters",
        "rater_names",
        "raters_per_episode",
        "evaluation_dimension_list_id",
        "gold",
    }
)


def graphql_input(value: Any) -> Any:
    """A study as TOML holds it (snake_case) as the GraphQL input (camelCase)."""
    if isinstance(value, dict):
        return {camel(k): graphql_input(v) for k, v in value.items()}
    if isinstance(value, list):
        return [graphql_input(v) for v in value]
    return value


def read_study(path: Path) -> dict[str, Any]:
    """A study file's fields (snake_case, as written)."""
    return read_toml(path, FILE_KEYS)


def study_input(args: argparse.Namespace) -> dict[str, Any]:
    """The createRatingStudy input: the file's fields, with the options given over them."""
    fields = read_study(args.file) if args.file else {}
    chosen = {
        "ids": args.episodes.split(",") if args.episodes else None,
        "experiment_id": args.experiment,
        "tag": args.tag,
    }
    if any(value is not None for value in chosen.values()):
        fields["episodes"] = {k: v for k, v in chosen.items() if v is not None}
    options = {
        "name": args.name,
        "raters": args.raters,
        "rater_names": args.rater_names.split(",") if args.rater_names else None,
        "raters_per_episode": args.raters_per_episode,
        "evaluation_dimension_list_id": args.dimensions,
    }
    fields |= {k: v for k, v in options.items() if v is not None}
    missing = [k for k in ("name", "episodes", "raters") if k not in fields]
    if missing:
        said = ", ".join(
            f"--{k}" if k != "episodes" else "--episodes, --experiment or --tag" for k in missing
        )
        raise CommandError(f"a study needs {said} (or the same in a study file)")
    given: dict[str, Any] = graphql_input(fields)
    return given


def rater_link(url: str, study: str, rater: int, token: str) -> str:
    """The address of a rater's page, with their token."""
    return f"{server_root(url)}/#/rate/{study}/{rater}?token={token}"


async def create(remote: Remote, args: argparse.Namespace) -> int:
    made = (await remote.execute(CREATE, {"input": study_input(args)}))["createRatingStudy"]
    if made["userErrors"]:
        raise user_errors(made["userErrors"])
    study = made["study"]
    links = [
        {**link, "url": rater_link(args.url, study["id"], link["rater"], link["token"])}
        for link in made["raterLinks"]
    ]
    if args.json:
        print(json.dumps({"id": study["id"], "name": study["name"], "links": links}, indent=2))
        return DONE
    assigned = {r["rater"]: r["assigned"] for r in study["raters"]}
    print(f"rating study {study['id']} ({study['name']}): {len(links)} raters", flush=True)
    print("Each link holds its rater's token and is shown only now; send each to its rater:")
    for link in links:
        print(f"  {link['name']} ({assigned[link['rater']]} episodes): {link['url']}")
    return DONE


def status_table(study: dict[str, Any]) -> Any:
    from rich.table import Table

    progress = study["progress"]
    table = Table(title=f"{study['name']}: {progress['rated']} of {progress['assigned']} ratings")
    for column in ("rater", "rated", "gold rated", "gold flagged"):
        table.add_column(column, justify="left" if column == "rater" else "right")
    for rater in study["raters"]:
        table.add_row(
            f"{rater['rater'] + 1}. {rater['name']}",
            f"{rater['rated']}/{rater['assigned']}",
            str(rater["goldRated"]),
            str(rater["goldFlagged"]),
        )
    return table


def flags(study: dict[str, Any]) -> list[str]:
    """One line per gold check that flagged its rater."""
    names = {r["rater"]: r["name"] for r in study["raters"]}
    lines = []
    for check in study["goldChecks"]:
        if not check["flagged"]:
            continue
        misses = "; ".join(
            f"agent {m['agent'] + 1} {m['dimension']} {m['given']:g} (expected {m['expected']:g})"
            for m in check["misses"]
        )
        lines.append(
            f"{names[check['rater']]} is far off on gold episode {check['episodeId']}: {misses}"
        )
    return lines


async def fetched(remote: Remote, query: str, study_id: str) -> dict[str, Any]:
    """The study `query` reads, refused when there is none."""
    study: dict[str, Any] | None = (await remote.execute(query, {"id": study_id}))["ratingStudy"]
    if study is None:
        raise CommandError(f"no rating study with id {study_id!r}")
    return study


async def status(remote: Remote, args: argparse.Namespace) -> int:
    study = await fetched(remote, STATUS, args.id)
    if args.json:
        print(json.dumps(study, indent=2), flush=True)
    else:
        shown = console()
        shown.print(status_table(study))
        for line in flags(study):
            shown.print(line)
        if study["closedAt"]:
            shown.print(f"closed at {study['closedAt']}: its links open nothing")
    return DONE if study["progress"]["finished"] else MISSING


def results_tables(study: dict[str, Any]) -> list[Any]:
    """Between the raters; each judge against them; each judge's ranking of the models."""
    from rich.table import Table

    humans = Table(title=f"{study['name']}: agreement between the raters (95% intervals)")
    for column in ("dimension", "raters", "units", "alpha", "ICC(2,1)", "ICC(2,k)"):
        humans.add_column(column, justify="left" if column == "dimension" else "right")
    judges = Table(title="Each judge against the raters' mean score")
    for column in ("dimension", "judge", "units", "pearson r", "spearman rho"):
        judges.add_column(column, justify="right" if column == "units" else "left")
    rankings = Table(title="Each judge's ranking of the models against the raters'")
    for column in ("dimension", "judge", "kendall tau", "model: raters / judge"):
        rankings.add_column(column)
    for found in study["agreement"]:
        name, rated = found["dimension"], found["humans"]
        humans.add_row(
            name,
            str(rated["raters"]),
            str(rated["alpha"]["n"]),
            estimate(rated["alpha"]),
            estimate(rated["icc1"]),
            estimate(rated["icck"]),
        )
        for judge in found["judgeVsHumans"]:
            judges.add_row(
                name,
                judge["judge"],
                str(judge["pearson"]["n"]),
                estimate(judge["pearson"]),
                estimate(judge["spearman"]),
            )
        for ranked in found["rankings"]:
            means = ", ".join(
                f"{m['model']}: {m['humanMean']:.2f} / {m['judgeMean']:.2f}"
                for m in ranked["models"]
            )
            rankings.add_row(name, ranked["judge"], estimate(ranked["tau"]), means)
    return [humans, judges, rankings]


async def results(remote: Remote, args: argparse.Namespace) -> int:
    study = await fetched(remote, RESULTS, args.id)
    if args.json:
        print(json.dumps(study, indent=2), flush=True)
        return DONE
    shown = console()
    for table in results_tables(study):
        shown.print(table)
    return DONE


async def run(args: argparse.Namespace) -> int:
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        remote = Remote(http, args.url, args.token)
        if args.study_command == "create":
            return await create(remote, args)
        if args.study_command == "results":
            return await results(remote, args)
        return await status(remote, args)


def main(args: argparse.Namespace) -> int:
    return run_command(run(args))


def add_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    study = commands.add_parser("study", help="make rating studies and follow their raters")
    actions = study.add_subparsers(dest="study_command", required=True, metavar="ACTION")
    create_ = actions.add_parser(
        "create",
        help="make a rating study and print each rater's link",
        description="Make a rating study of completed episodes and print each rater's link "
        "(its token is shown only now). The study comes from a file, from the options, or "
        "from both (the options win); gold episodes only from a file.",
    )
    create_.add_argument("file", nargs="?", type=Path, metavar="STUDY.toml", help="a study file")
    create_.add_argument("--name", help="the study's name")
    create_.add_argument("--episodes", metavar="ID,ID", help="the episodes, by id")
    create_.add_argument("--experiment", metavar="ID", help="an experiment's episodes")
    create_.add_argument("--tag", help="the episodes with this tag")
    create_.add_argument("--raters", type=int, help="how many raters")
    create_.add_argument("--rater-names", metavar="NAME,NAME", help="their names, in order")
    create_.add_argument(
        "--raters-per-episode", type=int, help="raters of each episode (default 1)"
    )
    create_.add_argument(
        "--dimensions", metavar="LIST_ID", help="a dimension list (default: Sotopia's seven)"
    )
    create_.add_argument("--json", action="store_true", help="print the study and links as JSON")
    status_ = actions.add_parser(
        "status",
        help="how far each rater has got, and who a gold episode flagged",
        description="Print each rater's progress and the raters a gold episode flagged. Exit "
        "status: 0 when every rating is in, 1 while some are missing, 2 on an error.",
    )
    status_.add_argument("id", metavar="ID", help="the study's id")
    status_.add_argument("--json", action="store_true", help="print the study as JSON")
    results_ = actions.add_parser(
        "results",
        help="how far the raters agree with each other and with the judge",
        description="Print, per dimension and overall, Krippendorff's alpha and ICC between the "
        "raters, each judge's Pearson and Spearman correlation with their mean score, and "
        "Kendall's tau between the models' rankings, each with its 95% interval.",
    )
    results_.add_argument("id", metavar="ID", help="the study's id")
    results_.add_argument("--json", action="store_true", help="print the figures as JSON")
    for command in (create_, status_, results_):
        add_server_options(command)
