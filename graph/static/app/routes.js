// Every page of the app: the address it answers (a pattern over the hash route), the function
// that draws it, and the menu section it belongs to. The router in main.js reads this list, and
// so does the browser test that visits every page.

import { COMPARE_ROUTE, comparePage } from "./pages/compare.js";
import { describePage } from "./pages/describe.js";
import { CALLS_ROUTE, callsPage } from "./pages/episode-calls.js";
import { episodePage } from "./pages/episode.js";
import { episodesPage } from "./pages/episodes.js";
import { experimentRoutes } from "./pages/experiments.js";
import { RATE_ROUTE, ratePage } from "./pages/rate.js";
import { SEAT_ROUTE, seatPage } from "./pages/seat.js";
import { startPage } from "./pages/start.js";
import { studyRoutes } from "./pages/studies.js";
import { worldRoutes } from "./pages/world.js";

export const ROUTES = [
  [/^\/$/, episodesPage, "episodes"],
  [/^\/episodes\/([^/]+)$/, episodePage, "episodes"],
  [CALLS_ROUTE, callsPage, "episodes"],
  [COMPARE_ROUTE, comparePage, "episodes"],
  [/^\/start$/, startPage, "start"],
  [/^\/describe$/, describePage, "describe"],
  [SEAT_ROUTE, seatPage, "episodes"],
  [RATE_ROUTE, ratePage, "studies"],
  ...experimentRoutes,
  ...studyRoutes,
  ...worldRoutes,
];
