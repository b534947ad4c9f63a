import { Hono } from "hono";
import type { AppEnv } from "../env";
import { skillStats } from "../stats/query";

export const statsRoutes = new Hono<AppEnv>();

/** Published figures are recomputed at most once a minute per location (Cache API). */
export const STATS_MAX_AGE_SECONDS = 60;

statsRoutes.get("/api/stats", async (c) => {
  // Free and public: any origin may read it (set here too, whatever the app-wide CORS does).
  c.header("Access-Control-Allow-Origin", "*");
  const cache = typeof caches === "undefined" ? undefined : caches.default;
  const key = new Request(new URL("/api/stats", c.req.url).toString());
  const hit = await cache?.match(key);
  if (hit) {
    const res = new Response(hit.body, hit);
    res.headers.set("Access-Control-Allow-Origin", "*");
    res.headers.set("X-Stats-Cache", "hit");
    return res;
  }
  const doc = await skillStats(c.env.DB);
  const res = c.json(doc, 200, {
    "Cache-Control": `public, max-age=${STATS_MAX_AGE_SECONDS}`,
    "X-Stats-Cache": "miss",
  });
  if (cache) {
    const put = cache.put(key, res.clone());
    try {
      c.executionCtx.waitUntil(put);
    } catch {
      await put;
    }
  }
  return res;
});
