import { Hono } from "hono";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { ReliabilityPage } from "../pages/reliability";
import { callPolicy, publishedStats, STATS_MAX_AGE_SECONDS, waitUntilOf } from "../stats/published";

export const statsRoutes = new Hono<AppEnv>();

statsRoutes.get("/api/stats", async (c) => {
  const { doc, hit } = await publishedStats(c.env.DB, c.req.url, waitUntilOf(c));
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
 * RegExpRouter refuse the app, and every request then paid the slower TrieRouter.
 */
statsRoutes.get("/docs/:slug", async (c, next) => {
  if (c.req.param("slug") !== "reliability") return next();
  const { doc } = await publishedStats(c.env.DB, c.req.url, waitUntilOf(c));
  return c.html(<ReliabilityPage doc={doc} policy={callPolicy(publicConfig(c.env, c.req.url))} />);
});
