"""`parley experiment agreement ID`: how far evaluations of an experiment's episodes agree, per
dimension and overall: each one judged by more than one run, its runs against each other
(Krippendorff's alpha, ICC), and every two of them against each other (Pearson, Spearman, and
Kendall's tau between their rankings of the models). An evaluation is the episodes' own judging
(`original`), a re-judging's id or a rating study's id (its raters)."""

import argparse
import json
from typing import TYPE_CHECKING, Any

from parley.client.command import CommandError, console, estimate

if TYPE_CHECKING:
    from parley.client.experiment import Remote

ORIGINAL = "original"
"""How `--evaluation` names the episodes' own judging (the API's null)."""
FIGURES, NONE = 0, 1  # and ERROR (2) after a CommandError
ESTIMATE = "{ n estimate low high resamples reason }"
EVALUATIONS = """
query($id: ID!) { experiment(id: $id) { id rejudgings { id } ratingStudies { id } } }"""
AGREEMENT = f"""
query($id: ID!, $evaluations: [ID]!) {{
  evaluationAgreement(episodes: {{experimentId: $id}}, evaluations: $evaluations) {{
    dimension units
    panels {{
      evaluation runs
      agreement {{ raters alpha {ESTIMATE} icc1 {ESTIMATE} icck {ESTIMATE} iccDropped }}
    }}
    pairs {{
      first second pearson {ESTIMATE} spearman {ESTIMATE} tau {ESTIMATE}
      models {{ model firstMean secondMean }}
    }}
  }}
}}"""


def evaluation_ids(given: list[str]) -> list[str | None]:
    """`--evaluation` values as the API names them: `original` (or nothing) is null."""
    return [None if not value or value == ORIGINAL else value for value in given]


def named(evaluation: str | None) -> str:
    return ORIGINAL if evaluation is None else evaluation


def agreement_tables(found: dict[str, Any]) -> list[Any]:
    """One dimension's panels (when any) and pairs, each a table."""
    from rich.table import Table

    dimension = found["dimension"]
    tables = []
    if found["panels"]:
        panels = Table(title=f"{dimension}: within each panel (95% intervals)")
        for column in ("evaluation", "runs", "units", "alpha", "ICC(2,1)", "ICC(2,k)"):
            panels.add_column(column, justify="left" if column == "evaluation" else "right")
        for panel in found["panels"]:
            agreement = panel["agreement"]
            panels.add_row(
                named(panel["evaluation"]),
                str(len(panel["runs"])),
                str(agreement["alpha"]["n"]),
                estimate(agreement["alpha"]),
                estimate(agreement["icc1"]),
                estimate(agreement["icck"]),
            )
        tables.append(panels)
    pairs = Table(title=f"{dimension}: between two evaluations, {found['units']} agents")
    for column in ("first", "second", "units", "pearson r", "spearman rho", "kendall tau"):
        pairs.add_column(column, justify="right" if column == "units" else "left")
    for pair in found["pairs"]:
        pairs.add_row(
            named(pair["first"]),
            named(pair["second"]),
            str(pair["pearson"]["n"]),
            estimate(pair["pearson"]),
            estimate(pair["spearman"]),
            estimate(pair["tau"]),
        )
    tables.append(pairs)
    return tables


async def chosen_evaluations(remote: "Remote", args: argparse.Namespace) -> list[str | None]:
    """The evaluations named, or every one of the experiment's; refused when it has none."""
    experiment = (await remote.execute(EVALUATIONS, {"id": args.id}))["experiment"]
    if experiment is None:
        raise CommandError(f"no experiment with id {args.id!r}")
    if args.evaluation:
        return evaluation_ids(args.evaluation)
    return [
        None,
        *(r["id"] for r in experiment["rejudgings"]),
        *(s["id"] for s in experiment["ratingStudies"]),
    ]


async def show_agreement(remote: "Remote", args: argparse.Namespace) -> int:
    evaluations = await chosen_evaluations(remote, args)
    variables = {"id": args.id, "evaluations": evaluations}
    found = (await remote.execute(AGREEMENT, variables))["evaluationAgreement"]
    if args.json:
        print(json.dumps(found, indent=2), flush=True)
    else:
        shown = console()
        if not found:
            shown.print("none of these evaluations has scored the experiment's episodes")
        for dimension in found:
            for table in agreement_tables(dimension):
                shown.print(table)
    return FIGURES if found else NONE


def add_agreement(actions: "argparse._SubParsersAction[argparse.ArgumentParser]") -> Any:
    """The `agreement` action of `parley experiment`; its parser."""
    agreement = actions.add_parser(
        "agreement",
        help="how far evaluations of an experiment's episodes agree",
        description="Print, per dimension and overall, how far evaluations of an experiment's "
        "episodes agree: each one judged by more than one run, its runs against each other "
        "(Krippendorff's alpha, ICC(2,1), ICC(2,k)), and every two of them against each other "
        "(Pearson's r and Spearman's rho over the agents both scored, Kendall's tau between "
        "their rankings of the models), each with its 95% interval. Exit status: 0, or 1 when "
        "none of them has scored the episodes, 2 on an error.",
    )
    agreement.add_argument("id", metavar="ID", help="the experiment's id")
    agreement.add_argument(
        "--evaluation",
        action="append",
        nargs="?",
        const=ORIGINAL,
        metavar="ID",
        help=f"an evaluation to compare, given once for each (at most 10): `{ORIGINAL}` (or no "
        "value) for the episodes' own judging, a re-judging's id, or a rating study's id (its "
        "raters); default: the episodes' own, and every re-judging and study of the experiment",
    )
    agreement.add_argument(
        "--json", action="store_true", help="print the figures as JSON instead of tables"
    )
    return agreement
