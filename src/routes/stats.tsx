import { type Context, Hono } from "hono";
import { publicConfig } from "../config";
import { statsSchema } from "../discovery/openapi-components";
import { CLIENT_ERROR, ERROR, json, operation } from "../discovery/operation";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { DeadlineError } from "../http/shared-load";
import { ReliabilityPage } from "../pages/reliability";
import {
  callPolicy,
  logUnavailable,
  publishedStats,
  STATS_MAX_AGE_SECONDS,
  StatsFailureRemembered,
} from "../stats/published";

export const statsRoutes = new Hono<AppEnv>();

export const statsOperation = operation({
  method: "get",
  path: "/api/stats",
  operationId: "get_stats",
  summary: "Measured reliability per skill over 24 h and 7 days (free, CORS-open, recomputed every 5 min)",
  tags: ["discovery"],
  responses: {
    "200": json("Per-skill calls, success rate, p50/p95 server time", statsSchema),
    "4XX": CLIENT_ERROR,
    "503": ERROR(
      "No stored copy, and the figures could not be computed now (not within 10 s, or the database failed); Retry-After says when to ask again",
    ),
  },
});

/** How long a caller waits before asking again for figures that could not be had. */
const RETRY_AFTER_SECONDS = 30;

/**
 * The figures, or why there are none now (answered 503 with Retry-After): no stored copy, and a
 * computation (a fresh deployment, a slow D1) has not finished within its wait, or D1 failed
 * (logged). Either passes with time; a bare 500 told a caller nothing. While a failed computation
 * is remembered (stats/published.ts) none starts before its minute is out: Retry-After is the time
 * left, as a caller told 30 s came back to the same refusal.
 */
async function figuresOrWhy(
  c: Context<AppEnv>,
): Promise<Awaited<ReturnType<typeof publishedStats>> | { unavailable: string; retryAfter: string }> {
  try {
    return await publishedStats(c);
  } catch (e) {
    const computing = e instanceof DeadlineError;
    if (!computing) logUnavailable(e);
    return {
      unavailable: computing
        ? "The published figures are being computed; try again shortly."
        : "The published figures cannot be read right now; try again shortly.",
      retryAfter: String(e instanceof StatsFailureRemembered ? e.retryAfterSeconds() : RETRY_AFTER_SECONDS),
    };
  }
}

statsRoutes.get(statsOperation.route, async (c) => {
  const figures = await figuresOrWhy(c);
  if ("unavailable" in figures)
    return detail(c, 503, figures.unavailable, {}, { "Retry-After": figures.retryAfter });
  const { doc, hit } = figures;
  return c.json(doc, 200, {
    // Free and public: any origin may read it (set here too, whatever the app-wide CORS does).
    "Access-Control-Allow-Origin": "*",
    "Cache-Control": `public, max-age=${STATS_MAX_AGE_SECONDS}`,
    "X-Stats-Cache": hit ? "hit" : "miss",
  });
});

/**
 * The policy and figures as a docs page, /docs/reliability. Taken by name on the /docs/:slug route
 * (the skills' pages; this router is mounted first): a static path beside a parameter makes Hono's
 * RegExpRouter refuse the app, and every request then paid the slower TrieRouter. Without figures
 * it is still the page (a person reads it: the policy stands, and a note says to come back), with
 * the API's 503 and Retry-After; a JSON error shown raw in a browser told them neither.
 */
statsRoutes.get("/docs/:slug", async (c, next) => {
  if (c.req.param("slug") !== "reliability") return next();
  const figures = await figuresOrWhy(c);
  const policy = callPolicy(publicConfig(c.env, c.req.url));
  if ("unavailable" in figures) {
    return c.html(<ReliabilityPage unavailable={figures.unavailable} policy={policy} />, 503, {
      "Retry-After": figures.retryAfter,
    });
  }
  return c.html(<ReliabilityPage doc={figures.doc} policy={policy} />);
});
