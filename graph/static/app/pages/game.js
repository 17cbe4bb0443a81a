// A social game's panel on the episode page: the round and current phase, the teams with who
// is out, and how it ended. The episode page is the omniscient view, so the teams (secret in
// play) are shown; a turn's phase is a tag in the transcript line.

import { append, clear, h } from "../dom.js";

/** The empty panel; `drawGame` fills it for an episode of a game and hides it otherwise. */
export function gameSection() {
  return h("section", { class: "game", "aria-labelledby": "game-title", hidden: true });
}

export function drawGame(section, game) {
  section.hidden = !game;
  if (!game) {
    section.replaceChildren();
    return;
  }
  const state = game.over
    ? h("p", { class: "game-state", dataset: { over: "true" } }, `Over after round ${game.round}: ${game.result}.`)
    : h("p", { class: "game-state" }, `Round ${game.round}, phase `, h("strong", { class: "game-phase" }, game.phase), ".");
  const teams = game.teams.map((team) =>
    h(
      "li",
      { class: "game-team", dataset: { team: team.name, winner: team.name === game.winner ? "true" : "false" } },
      h("strong", {}, team.name),
      team.name === game.winner ? " (won)" : "",
      ": ",
      team.members.map((name, i) => [i ? ", " : "", team.out.includes(name) ? h("s", { title: "out" }, name) : name]),
    ),
  );
  append(clear(section), [
    h("h2", { id: "game-title" }, "Game"),
    state,
    h("h3", {}, "Teams ", h("span", { class: "who" }, "(secret to the players; shown here in full)")),
    h("ul", { class: "game-teams" }, teams),
    game.notices.length ? h("ol", { class: "game-notices" }, game.notices.map((n) => h("li", {}, n))) : null,
  ]);
}

/** Re-read the game after a new turn (its state is derived from the stored turns). */
export async function refreshGame(api, id, section) {
  try {
    const data = await api.request("EpisodeGame", { id });
    if (data.episode) drawGame(section, data.episode.game);
  } catch {
    // the panel keeps its last state; the episode page re-reads everything on its next refresh
  }
}

export function phaseTag(turn) {
  return turn.phase ? h("span", { class: "phase-tag", title: "game phase" }, turn.phase) : null;
}
