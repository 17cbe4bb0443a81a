// The episodes list: newest first, filters, status counts, cursor pages, live statuses.

import { agentChoice, agentFinder, choiceBox, scenarioChoice, scenarioFinder } from "../choice.js";
import { clear, h, routeLink, words } from "../dom.js";
import { STATUSES, statusBadge } from "../status.js";
import { backStack, episodeRow, episodeTable, pageSize, pager } from "./common.js";

function filterOf(query) {
  const filter = {};
  for (const key of ["tag", "status", "agentId", "scenarioId"]) {
    if (query.get(key)) filter[key] = query.get(key);
  }
  return filter;
}

/** A filter's choices among a few fixed values. */
function select(name, label, choices, current) {
  return h(
    "div",
    { class: "field" },
    h("label", { for: `filter-${name}` }, label),
    h(
      "select",
      { id: `filter-${name}`, name },
      h("option", { value: "" }, "any"),
      choices.map(([value, text]) => h("option", { value, selected: value === current }, text)),
    ),
  );
}

function matches(filter, episode) {
  if (filter.status && episode.status !== filter.status) return false;
  if (filter.tag && (episode.tag || "").toLowerCase() !== filter.tag.toLowerCase()) return false;
  if (filter.agentId && !episode.agents.some((a) => a && a.id === filter.agentId)) return false;
  if (filter.scenarioId && (!episode.scenario || episode.scenario.id !== filter.scenarioId)) return false;
  return true;
}

export async function episodesPage({ api, query, main, setConnection }) {
  const filter = filterOf(query);
  const after = query.get("after");
  const stack = backStack(query);
  const countFilters = Object.fromEntries(
    STATUSES.map((status) => [status.toLowerCase(), { ...filter, status }]),
  );
  const [list, counts, agent, scenario] = await Promise.all([
    api.request("EpisodeList", { filter, first: pageSize(query), after }),
    api.request("EpisodeCounts", countFilters),
    agentChoice(api, filter.agentId),
    scenarioChoice(api, filter.scenarioId),
  ]);

  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter episodes" },
    h(
      "div",
      { class: "field" },
      h("label", { for: "filter-tag" }, "Tag"),
      h("input", { id: "filter-tag", name: "tag", type: "search", value: filter.tag || "" }),
    ),
    select("status", "Status", STATUSES.map((s) => [s, words(s)]), filter.status),
    choiceBox({ id: "filter-agentId", name: "agentId", label: "Agent", current: agent, find: agentFinder(api), noun: "agent", none: "any" }),
    choiceBox({ id: "filter-scenarioId", name: "scenarioId", label: "Scenario", current: scenario, find: scenarioFinder(api), noun: "scenario", none: "any" }),
    h("button", { type: "submit" }, "Filter"),
    Object.keys(filter).length ? h("a", { href: "#/" }, "Clear") : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form).entries());
    location.hash = routeLink("/", values);
  });
  for (const control of form.querySelectorAll("select, input[type=hidden]")) {
    control.addEventListener("change", () => form.requestSubmit());
  }

  const countList = h("ul", { class: "counts", "aria-label": "Episodes by status" });
  const total = h("p", { class: "total" });
  const showCounts = (data) => {
    clear(countList);
    let sum = 0;
    for (const status of STATUSES) {
      const count = data[status.toLowerCase()].totalCount;
      sum += count;
      const link = routeLink("/", { ...filter, status });
      countList.append(
        h("li", { dataset: { status } }, h("a", { href: link }, statusBadge(status), " ", h("span", { class: "count" }, String(count)))),
      );
    }
    total.textContent = `${sum} ${sum === 1 ? "episode matches" : "episodes match"} the tag, agent and scenario.`;
  };
  showCounts(counts);

  const table = episodeTable(list.episodes.nodes, "Episodes, newest first");
  const body = table.querySelector("tbody");
  const empty = h("p", { class: "empty", hidden: list.episodes.nodes.length > 0 }, "No episodes match.");
  const link = (params) => routeLink("/", params);
  const paging = pager(link, { ...filter, first: query.get("first"), after }, list.episodes.pageInfo, stack);

  main.append(
    h("h1", {}, "Episodes"),
    form,
    countList,
    total,
    table,
    empty,
    paging,
    h("p", {}, h("a", { href: "#/start", class: "button" }, "Start a simulation")),
  );

  // Live: statuses change in place; new episodes appear at the top of the first page.
  let countsTimer = null;
  const refreshCounts = () => {
    clearTimeout(countsTimer);
    countsTimer = setTimeout(async () => {
      try {
        showCounts(await api.request("EpisodeCounts", countFilters));
      } catch {
        // the next event tries again
      }
    }, 200);
  };
  const onEvent = async (event) => {
    if (event.kind === "CURSOR_EXPIRED") return refreshCounts();
    const row = body.querySelector(`tr[data-episode="${CSS.escape(event.episodeId)}"]`);
    if (row) {
      row.querySelector(".status-cell").replaceChildren(statusBadge(event.status));
      if (event.kind === "STATUS") {
        const found = await api.request("EpisodeRowById", { id: event.episodeId });
        if (found.episode && row.isConnected) row.replaceWith(episodeRow(found.episode));
      }
    } else if (event.kind === "STATUS" && event.status === "QUEUED" && !after) {
      const found = await api.request("EpisodeRowById", { id: event.episodeId });
      const episode = found.episode;
      if (episode && matches(filter, episode) && !body.querySelector(`tr[data-episode="${CSS.escape(episode.id)}"]`)) {
        body.prepend(episodeRow(episode));
        empty.hidden = true;
      }
    }
    if (event.kind === "STATUS") refreshCounts();
  };
  const stop = api.follow("WatchUpdates", { tag: filter.tag || null }, {
    event: (event) => {
      onEvent(event).catch(() => {});
    },
    state: setConnection,
    failed: (error) => main.prepend(h("div", { class: "error", role: "alert" }, error.message)),
  });
  return () => {
    clearTimeout(countsTimer);
    stop();
  };
}
