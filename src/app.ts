import { Hono } from "hono";
import type { AppEnv } from "./env";
import { answerError } from "./http/app-error";
import { limitBody } from "./http/body-limit";
import { identityBodyOnly } from "./http/content-encoding";
import { edgeHeaders } from "./http/edge-headers";
import { detail } from "./http/errors";
import { MAX_BODY_BYTES } from "./http/limits";
import { allowedMethodsFinder } from "./http/method-not-allowed";
import { privateAnswer } from "./http/private-answer";
import { adminRoutes } from "./routes/admin";
import { adminDashboardRoutes } from "./routes/admin-dashboard";
import { catalogRoutes } from "./routes/catalog";
import { checkoutRoutes } from "./routes/checkout";
import { discoveryRoutes } from "./routes/discovery";
import { healthRoutes } from "./routes/health";
import { mcpRoutes } from "./routes/mcp";
import { notFound } from "./routes/not-found";
import { pageRoutes } from "./routes/pages";
import { HEAD_REFUSED_PATHS, partnerRoutes } from "./routes/partners";
import { skillRoutes } from "./routes/skills";
import { statsRoutes } from "./routes/stats";

/** Builds the whole application; tests build their own instance to add probes before routing. */
export function createApp() {
  const app = new Hono<AppEnv>();

  app.use(edgeHeaders);
  for (const path of ["/admin", "/admin/*", "/api/admin/*"]) app.use(path, privateAnswer);
  app.use(
    "/api/*",
    limitBody(MAX_BODY_BYTES, (c) => detail(c, 413, `Request body larger than ${MAX_BODY_BYTES} bytes`)),
  );
  app.use("/api/*", identityBodyOnly);

  app.route("/", healthRoutes);
  app.route("/", catalogRoutes);
  app.route("/", skillRoutes);
  app.route("/", adminRoutes);
  app.route("/", statsRoutes);
  app.route("/", adminDashboardRoutes);
  app.route("/", checkoutRoutes);
  app.route("/", partnerRoutes);
  app.route("/", discoveryRoutes);
  // MCP tools/call runs each paid call through this same app (same payment chain, same ledger).
  app.route(
    "/",
    mcpRoutes((req, env, ctx) => app.fetch(req, env, ctx)),
  );
  app.route("/", pageRoutes);

  app.notFound(notFound(allowedMethodsFinder(app, HEAD_REFUSED_PATHS)));

  // Skill routes answer errors through http/app-error.ts via chain(), not app.onError: change it there.
  app.onError(answerError);
  return app;
}
