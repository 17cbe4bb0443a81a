"""`parley experiment run DESIGN.toml --estimate`: what the design will take before it runs.

The experiment is created (or found) but not started. When some of its slots have nothing
comparable recorded, a calibration run plays the first two slots of each such kind and waits
for them, so the estimate covers every slot; those episodes are the experiment's own, and a run
later does not play them again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from parley.client.command import CommandError

if TYPE_CHECKING:
    from parley.client.experiment import Remote

ESTIMATE = """
query($id: ID!) {
  experiment(id: $id) {
    id slotCount budget
    estimate {
      episodes covered comparable uncovered
      calls { expected low high } tokens { expected low high } cost { expected low high }
    }
    progress { pending unfinished }
  }
}"""
CALIBRATE = """
mutation($id: ID!) {
  calibrateExperiment(input: {id: $id}) { changed userErrors { field message code } }
}"""
POLL_SECONDS = 1.0


def span(figure: dict[str, Any] | None, money: bool = False) -> str:
    """`expected (low to high)`, as dollars or whole counts."""
    if figure is None:
        return "unknown"

    def shown(value: float) -> str:
        return f"${value:,.4f}" if money else f"{value:,.0f}"

    text = shown(figure["expected"])
    if figure["low"] is None:
        return f"{text} (range unknown: no kind recorded twice)"
    return f"{text} (95% range {shown(figure['low'])} to {shown(figure['high'])})"


def report(experiment: dict[str, Any]) -> str:
    found = experiment["estimate"]
    lines = [
        f"estimate for {found['covered']} of {found['episodes']} episodes, from "
        f"{found['comparable']} recorded comparable episodes:",
        f"  model calls  {span(found['calls'])}",
        f"  tokens       {span(found['tokens'])}",
        f"  cost         {span(found['cost'], money=True)}",
    ]
    if found["cost"] is None and found["covered"]:
        lines.append("  (no cost: a model of the design has no prices in the models file)")
    if experiment["budget"] is not None:
        lines.append(f"  budget       ${experiment['budget']:,.4f}")
    if found["uncovered"]:
        kinds = "; ".join(" / ".join(models) for models in found["uncovered"])
        lines.append(f"  not covered: {kinds}")
    return "\n".join(lines)


async def read(remote: Remote, experiment_id: str) -> dict[str, Any]:
    experiment: dict[str, Any] = (await remote.execute(ESTIMATE, {"id": experiment_id}))[
        "experiment"
    ]
    return experiment


async def show_estimate(remote: Remote, experiment_id: str) -> int:
    """Print the estimate, calibrating first when some slots are not covered; exit status 0
    when it covers every slot, 1 otherwise."""
    experiment = await read(remote, experiment_id)
    found = experiment["estimate"]
    if found["covered"] < found["episodes"]:
        calibrated = (await remote.execute(CALIBRATE, {"id": experiment_id}))["calibrateExperiment"]
        if calibrated["userErrors"]:
            lines = [f"{'.'.join(e['field'])}: {e['message']}" for e in calibrated["userErrors"]]
            raise CommandError("\n".join(lines))
        print(
            f"nothing comparable recorded for {found['episodes'] - found['covered']} episodes: "
            f"a calibration run plays {calibrated['changed']} of them first",
            flush=True,
        )
        experiment = await read(remote, experiment_id)
        while True:
            progress = experiment["progress"]
            if progress["unfinished"] <= progress["pending"]:
                break  # nothing queued or running
            await asyncio.sleep(POLL_SECONDS)
            experiment = await read(remote, experiment_id)
    print(report(experiment), flush=True)
    found = experiment["estimate"]
    return 0 if found["covered"] == found["episodes"] else 1
