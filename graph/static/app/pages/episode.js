// One episode, live: setup, status timeline, the transcript as it grows, then the scores.

import { h } from "../dom.js";
import { TERMINAL } from "../status.js";
import { notFound } from "./common.js";
import { familySection } from "./episode-family.js";
import { episodeHeader } from "./episode-header.js";
import { injectForm } from "./episode-inject.js";
import { followEpisode } from "./episode-live.js";
import { resultsSection } from "./episode-results.js";
import { setupSection } from "./episode-setup.js";
import { episodeProgress, statusTimeline } from "./episode-status.js";
import { drawGame, gameSection } from "./game.js";
import { transcriptSection } from "./transcript.js";

/** The page's parts over `state.episode`: `drawAll(live)` draws each again, `reload(live)` reads the episode first. */
function episodeView(api, state) {
  const view = {
    progress: episodeProgress(state),
    streamNote: h("p", { class: "stream-note", role: "status" }),
    transcript: transcriptSection(api, state),
    inject: injectForm(api, state.episode),
    game: gameSection(),
    setup: setupSection(state),
    timeline: statusTimeline(state),
    family: familySection(api, state),
  };
  view.header = episodeHeader(api, state, () => view.progress.draw());
  view.drawAll = (live = false) => {
    for (const part of [view.header, view.progress, view.setup, view.timeline]) part.draw();
    view.family.draw();
    view.transcript.draw(live);
    view.results.draw();
    drawGame(view.game, state.episode.game);
    view.inject.hidden = TERMINAL.has(state.episode.status);
  };
  view.reload = async (live = false) => {
    const data = await api.request("EpisodeDetail", { id: state.episode.id });
    if (data.episode) state.episode = data.episode;
    view.drawAll(live);
  };
  view.results = resultsSection(api, state, () => view.reload());
  return view;
}

function layout(view) {
  return [
    ...view.header.nodes,
    view.progress.node,
    view.streamNote,
    h(
      "div",
      { class: "columns" },
      h("div", { class: "column-main" }, view.transcript.node, view.inject, view.results.node),
      h("div", { class: "column-side" }, view.game, view.setup.node, view.family.node, view.timeline.node),
    ),
  ];
}

export async function episodePage({ api, main, setConnection }, id) {
  const first = await api.request("EpisodeDetail", { id });
  if (!first.episode) {
    const why = ["There is no episode with the id ", h("code", {}, id), ". It may have been deleted, or the address is mistyped."];
    return notFound(main, "Episode not found", why, h("a", { href: "#/" }, "See all episodes"));
  }
  const state = { episode: first.episode, lists: first.evaluationDimensionLists };
  const view = episodeView(api, state);
  main.append(...layout(view));
  view.drawAll();
  if (TERMINAL.has(state.episode.status)) return null;
  return followEpisode(api, state, view, setConnection);
}
