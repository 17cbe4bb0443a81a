// Rating studies: the list, with the form that makes one (study-form.js), and one study's
// progress per rater and per episode, kept current while the page is open, with the gold checks
// that flagged a rater, a new link for a rater, and closing the study.

import { append, clear, h, routeLink, when, words } from "../dom.js";
import { rateLink } from "./rate.js";
import { REASONS, backStack, pageSize, pager } from "./common.js";
import { studyForm } from "./study-form.js";

const REFRESH_MS = 3000;

function studyProgress(progress, label) {
  return [
    h("progress", { max: Math.max(1, progress.assigned), value: progress.rated, "aria-label": label }),
    ` ${progress.rated} / ${progress.assigned}`,
  ];
}

function studyRows(list) {
  return list.nodes.map((study) =>
    h(
      "tr",
      { dataset: { study: study.id } },
      h("td", {}, h("a", { href: `#/studies/${encodeURIComponent(study.id)}` }, study.name)),
      h("td", {}, when(study.createdAt)),
      h("td", {}, studyProgress(study.progress, `${study.progress.rated} of ${study.progress.assigned} ratings`)),
      h("td", {}, study.closedAt ? `closed ${when(study.closedAt)}` : study.progress.finished ? "every rating in" : "open"),
    ),
  );
}

export async function studiesPage({ api, query, main }) {
  const after = query.get("after");
  const stack = backStack(query);
  const page = { first: pageSize(query), after };
  const list = (await api.request("StudyList", page)).ratingStudies;
  const caption = h("caption", {}, `Rating studies, newest first (${list.totalCount})`);
  const body = h("tbody", {}, studyRows(list));
  const empty = h("p", { class: "empty", hidden: list.nodes.length > 0 }, "No rating studies yet.");
  // A study made here is listed at once (on the first page, where the newest are).
  const made = async () => {
    if (after) return;
    const again = (await api.request("StudyList", page)).ratingStudies;
    caption.textContent = `Rating studies, newest first (${again.totalCount})`;
    body.replaceChildren(...studyRows(again));
    empty.hidden = again.nodes.length > 0;
  };
  const making = h(
    "details",
    { class: "new-study", open: list.totalCount === 0 || query.has("experiment") },
    h("summary", { class: "button" }, "Make a study"),
    await studyForm(api, made, query.get("experiment")),
  );
  main.append(
    h("h1", {}, "Rating studies"),
    h(
      "p",
      {},
      "People rate completed episodes, blind, through links of their own; their ratings are stored as Sotopia's annotations. Make a study here, with ",
      h("code", {}, "parley study create"),
      " or with the createRatingStudy mutation.",
    ),
    making,
    h("h2", {}, "Studies"),
    h(
      "table",
      { class: "studies" },
      caption,
      h("thead", {}, h("tr", {}, ["Name", "Made", "Ratings", "State"].map((t) => h("th", { scope: "col" }, t)))),
      body,
    ),
    empty,
    pager((params) => routeLink("/studies", params), { first: query.get("first"), after }, list.pageInfo, stack),
  );
}

function raterRow(api, study, rater, links) {
  const renew = h("button", { type: "button", class: "renew" }, "New link");
  renew.disabled = Boolean(study.closedAt);
  renew.addEventListener("click", async () => {
    renew.disabled = true;
    try {
      const answer = (await api.request("RenewRaterLink", { studyId: study.id, rater: rater.rater })).renewRaterLink;
      clear(links);
      if (answer.userErrors.length) {
        links.append(...answer.userErrors.map((e) => h("p", { role: "alert" }, e.message)));
        return;
      }
      const address = new URL(rateLink(study.id, rater.rater, answer.raterLink.token), document.baseURI).href;
      links.append(
        h("p", { class: "notice" }, `${rater.name}'s new link (shown this once; their old link opens nothing now):`),
        h("code", { class: "rater-link", dataset: { rater: rater.rater } }, address),
      );
    } finally {
      renew.disabled = false;
    }
  });
  const flagged = rater.goldFlagged ? h("strong", { class: "gold-flag" }, `${rater.goldFlagged} flagged`) : "none flagged";
  return h(
    "tr",
    { dataset: { rater: rater.rater } },
    h("td", {}, `${rater.rater + 1}. ${rater.name}`),
    h(
      "td",
      { class: "rater-progress" },
      studyProgress(rater, `${rater.name}: ${rater.rated} of ${rater.assigned} rated`),
      h("span", { class: "gold-line" }, "Gold: ", rater.goldRated ? [`${rater.goldRated} rated, `, flagged] : "none rated yet"),
    ),
    h("td", {}, renew),
  );
}

function raterTable(api, study, links) {
  return h(
    "div",
    { class: "scroll-x" },
    h(
      "table",
      { class: "study-raters" },
      h("caption", {}, "How far each rater has got"),
      h("thead", {}, h("tr", {}, ["Rater", "Rated", "Link"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, study.raters.map((rater) => raterRow(api, study, rater, links))),
    ),
  );
}

function episodeTable(study) {
  const name = (n) => study.raters[n].name;
  return h(
    "div",
    { class: "scroll-x" },
    h(
      "table",
      { class: "study-episodes" },
      h("caption", {}, "Who has rated each episode"),
      h("thead", {}, h("tr", {}, ["Episode", "Rated by", "Given to"].map((t) => h("th", { scope: "col" }, t)))),
      h(
        "tbody",
        {},
        study.episodes.map((episode) =>
          h(
            "tr",
            { dataset: { episode: episode.episodeId, rated: episode.ratedBy.length } },
            h("td", {}, h("a", { href: `#/episodes/${encodeURIComponent(episode.episodeId)}` }, h("code", {}, episode.episodeId)), episode.gold ? h("span", { class: "gold-tag" }, "gold") : null),
            h("td", {}, `${episode.ratedBy.length} of ${episode.raters.length}`),
            h("td", {}, episode.raters.map(name).join(", ")),
          ),
        ),
      ),
    ),
  );
}

function goldFlags(study) {
  const flagged = study.goldChecks.filter((check) => check.flagged);
  if (!flagged.length) return h("p", { class: "gold-flags empty" }, study.goldChecks.length ? "No rater is far off on a gold episode." : "No gold episode is rated yet.");
  const miss = (m) => `agent ${m.agent + 1}'s ${words(m.dimension)}: ${m.given} where ${m.expected} was expected`;
  return h(
    "ul",
    { class: "gold-flags" },
    flagged.map((check) =>
      h("li", { dataset: { rater: check.rater } }, h("strong", {}, study.raters[check.rater].name), ` on `, h("code", {}, check.episodeId), `: ${check.misses.map(miss).join("; ")}`),
    ),
  );
}

function estimate(figure) {
  const why = figure.reason ? ` (${REASONS[figure.reason] ?? figure.reason})` : "";
  if (figure.estimate === null) return h("td", { class: "estimate missing" }, `—${why}`);
  const value = figure.estimate.toFixed(2);
  // No break inside an interval, nor inside a model's line below: at a phone's width a table
  // then scrolls sideways rather than squeezing its figures into a column of fragments.
  const interval = figure.low === null ? why : ` [${figure.low.toFixed(2)},\u00a0${figure.high.toFixed(2)}]`;
  return h("td", { class: "estimate", title: `n = ${figure.n}` }, value, h("span", { class: "interval" }, interval));
}

function figureTable(kind, caption, columns, rows) {
  return h(
    "div",
    { class: "scroll-x" },
    h(
      "table",
      { class: `agreement ${kind}` },
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows),
    ),
  );
}

function agreementTables(agreement) {
  const name = (d) => h("th", { scope: "row" }, words(d.dimension));
  const humans = agreement.map((d) =>
    h("tr", { dataset: { dimension: d.dimension } }, name(d), h("td", {}, `${d.humans.alpha.n}`), estimate(d.humans.alpha), estimate(d.humans.icc1), estimate(d.humans.icck)),
  );
  const judges = agreement.flatMap((d) =>
    d.judgeVsHumans.map((j) => h("tr", { dataset: { dimension: d.dimension, judge: j.judge } }, name(d), h("td", {}, j.judge), estimate(j.pearson), estimate(j.spearman))),
  );
  const models = (r) => r.models.flatMap((m, i) => [i ? h("br") : null, `${m.model}:\u00a0${m.humanMean.toFixed(2)}\u00a0/\u00a0${m.judgeMean.toFixed(2)}`]);
  const rankings = agreement.flatMap((d) =>
    d.rankings.map((r) => h("tr", { dataset: { dimension: d.dimension, judge: r.judge } }, name(d), h("td", {}, r.judge), estimate(r.tau), h("td", {}, models(r)))),
  );
  return [
    figureTable("humans", "Between the raters (95% intervals)", ["Dimension", "Units", "Krippendorff's α", "ICC(2,1)", "ICC(2,k)"], humans),
    figureTable("judges", "Each judge against the raters' mean score", ["Dimension", "Judge", "Pearson's r", "Spearman's ρ"], judges),
    figureTable("rankings", "Each judge's ranking of the models against the raters'", ["Dimension", "Judge", "Kendall's τ", "Model: raters / judge"], rankings),
  ];
}

async function drawAgreement(api, id, box) {
  const study = (await api.request("StudyAgreement", { id })).ratingStudy;
  if (study) append(clear(box), agreementTables(study.agreement));
}

function closeControl(api, study, notes) {
  if (study.closedAt) return h("p", { class: "closed" }, `Closed ${when(study.closedAt)}: its links open nothing; its ratings are kept.`);
  const close = h("button", { type: "button", class: "danger" }, "Close the study");
  const sure = h("button", { type: "button", class: "danger", hidden: true }, "Yes: close it, links stop working");
  close.addEventListener("click", () => {
    sure.hidden = false;
    sure.focus();
  });
  sure.addEventListener("click", async () => {
    const answer = (await api.request("CloseRatingStudy", { id: study.id })).closeRatingStudy;
    clear(notes).append(...answer.userErrors.map((e) => h("p", { role: "alert" }, e.message)));
    if (!answer.userErrors.length) window.dispatchEvent(new HashChangeEvent("hashchange"));
  });
  return h("div", { class: "actions" }, close, sure);
}

function drawStudy(api, study, parts) {
  const { summary, progress, raters, episodes, flags } = parts;
  const p = study.progress;
  clear(summary).append(
    `${study.raters.length} raters, ${study.ratersPerEpisode} per episode, ${study.episodes.length} episodes; made ${when(study.createdAt)}. `,
    study.showsSecrets ? "Raters see the agents' secrets (the rubric rates keeping them)." : "Raters do not see the agents' secrets.",
  );
  clear(progress).append(...studyProgress(p, `${p.rated} of ${p.assigned} ratings`), p.finished ? " — every rating is in." : "");
  progress.dataset.rated = p.rated;
  append(clear(raters), [raterTable(api, study, parts.links)]);
  append(clear(episodes), [episodeTable(study)]);
  append(clear(flags), [goldFlags(study)]);
}

export async function studyPage({ api, main, errorBox }, id) {
  const study = (await api.request("StudyDetail", { id })).ratingStudy;
  if (!study) {
    main.append(h("h1", {}, "No such rating study"), h("p", {}, "There is no rating study ", h("code", {}, id), ". ", h("a", { href: "#/studies" }, "See the rating studies.")));
    return null;
  }
  const parts = {
    summary: h("p", { class: "summary" }),
    progress: h("p", { class: "study-progress", role: "status" }),
    raters: h("div", { class: "raters-box" }),
    links: h("div", { class: "rater-links", "aria-live": "polite" }),
    episodes: h("div", { class: "episodes-box" }),
    flags: h("div", { class: "flags-box" }),
    agreement: h("div", { class: "agreement-box", "aria-live": "polite" }),
  };
  const notes = h("div", { class: "form-errors", "aria-live": "polite" });
  append(main, [
    h("p", {}, h("a", { href: "#/studies" }, "← Rating studies")),
    h("h1", {}, study.name),
    parts.summary,
    h("h2", {}, "Progress"),
    parts.progress,
    parts.raters,
    parts.links,
    h("h2", {}, "Gold episodes"),
    parts.flags,
    h("h2", {}, "Agreement"),
    parts.agreement,
    h("h2", {}, "Episodes"),
    parts.episodes,
    h("h2", {}, "Rubric"),
    h("ul", { class: "rubric" }, study.rubric.map((d) => h("li", {}, `${words(d.name)}: ${d.rangeLow} to ${d.rangeHigh}`))),
    closeControl(api, study, notes),
    notes,
  ]);
  drawStudy(api, study, parts);
  await drawAgreement(api, id, parts.agreement);
  // Live: the study is read again every few seconds while its page is open and the tab shown,
  // and drawn again when it changed (a rater's "New link" button keeps the focus).
  let shown = JSON.stringify(study);
  const timer = setInterval(async () => {
    if (document.hidden) return;
    try {
      const again = (await api.request("StudyDetail", { id })).ratingStudy;
      if (!again || JSON.stringify(again) === shown) return;
      const newRatings = again.progress.rated !== JSON.parse(shown).progress.rated;
      shown = JSON.stringify(again);
      const focused = document.activeElement?.closest("tr[data-rater]")?.dataset.rater;
      drawStudy(api, again, parts);
      // The figures are read again only when a rating came: they cost more than the rest.
      if (newRatings) await drawAgreement(api, id, parts.agreement);
      if (focused !== undefined) parts.raters.querySelector(`tr[data-rater="${focused}"] button`)?.focus();
    } catch (error) {
      clear(notes).append(errorBox(error));
    }
  }, REFRESH_MS);
  return () => clearInterval(timer);
}

export const studyRoutes = [
  [/^\/studies$/, studiesPage, "studies"],
  [/^\/studies\/([^/]+)$/, studyPage, "studies"],
];
