// Local stand-ins for the four hosted partners of spec 2.8, for `npm start` and the e2e tests.
// PriceFeed is itself an x402 server (@x402/hono on the local chain, at the partner's own price),
// so the marketplace must pay it upstream; TextKit and Data Refinery answer plain JSON; NotifyHook
// answers unpaid calls with the 403 grant challenge. POST /_control on any of them sets a failure
// mode for the tests: {"mode": "ok" | "fail" | "slow"}.
import { serve } from "@hono/node-server";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/hono";
import { Hono } from "hono";
import { NETWORK, USDC_ADDRESS } from "./chain.mjs";

const USDC_EXTRA = { name: "USD Coin", version: "2" };
const atomic = (usd) => String(Math.round(usd * 1_000_000));

function controls() {
  const state = { mode: "ok", calls: 0 };
  return {
    state,
    async apply(c, next) {
      state.calls++;
      if (state.mode === "fail") return c.json({ error: "partner failure (test mode)" }, 500);
      if (state.mode === "slow") await new Promise((r) => setTimeout(r, 12_000));
      return next();
    },
    route(app) {
      app.post("/_control", async (c) => {
        Object.assign(state, await c.req.json());
        return c.json(state);
      });
      app.get("/_control", (c) => c.json(state));
    },
  };
}

function listen(app) {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        close: () => new Promise((r) => server.close(() => r())),
      }),
    );
  });
}

function priceFeed({ facilitatorUrl, payTo }) {
  const app = new Hono();
  const ctl = controls();
  ctl.route(app);
  const paid = (price) => ({
    accepts: {
      scheme: "exact",
      network: NETWORK,
      payTo,
      price: { amount: atomic(price), asset: USDC_ADDRESS, extra: USDC_EXTRA },
    },
    description: "PriceFeed data",
    mimeType: "application/json",
  });
  const routes = {
    "GET /price": paid(0.01),
    "GET /price/*": paid(0.02),
    "GET /portfolio": paid(0.05),
    "GET /opportunities/latest": paid(0.03),
    "GET /briefing/morning": paid(0.01),
    "GET /research/*": paid(0.02),
    "GET /audit/x402": paid(1.0),
    "POST /receipt/verify": paid(0.05),
    "POST /mcp/call": paid(0.05),
  };
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register(
    NETWORK,
    new ExactEvmScheme(),
  );
  app.use("*", ctl.apply);
  app.use("*", paymentMiddleware(routes, server));
  const prices = { btc: 97000.5, eth: 3400.25, sol: 180.75 };
  app.get("/price", (c) => c.json({ prices }));
  app.get("/price/:coin", (c) => {
    const coin = c.req.param("coin");
    return coin in prices ? c.json({ coin, usd: prices[coin] }) : c.json({ error: "unknown coin" }, 404);
  });
  app.get("/portfolio", (c) => c.json({ weights: { btc: 0.6, eth: 0.3, sol: 0.1 } }));
  app.get("/opportunities/latest", (c) => c.json({ opportunities: [{ pair: "ETH/USDC", note: "spread" }] }));
  app.get("/briefing/morning", (c) => c.json({ briefing: "Markets calm." }));
  app.get("/research/:topic", (c) => c.json({ topic: c.req.param("topic"), notes: ["note 1"] }));
  app.get("/audit/x402", (c) => c.json({ grade: "A" }));
  app.post("/receipt/verify", async (c) => c.json({ tier: "R3", claim: (await c.req.json()).claim }));
  app.get("/mcp/tools", (c) => c.json({ tools: [{ name: "price" }] }));
  app.post("/mcp/call", async (c) =>
    c.json({ result: { tool: (await c.req.json()).tool, usd: prices.eth } }),
  );
  return { app, ctl };
}

function textKit() {
  const app = new Hono();
  const ctl = controls();
  ctl.route(app);
  app.use("*", ctl.apply);
  for (const path of [
    "/api/redact",
    "/api/chunk",
    "/api/outline",
    "/api/normalize-csv",
    "/api/structure",
    "/api/token-count",
    "/api/base64",
    "/api/json-sort",
  ]) {
    app.post(path, async (c) => c.json({ service: path, received: await c.req.json() }));
  }
  return { app, ctl };
}

function refinery() {
  const app = new Hono();
  const ctl = controls();
  ctl.route(app);
  app.use("*", ctl.apply);
  app.post("/api/recipes/:recipe/run", async (c) => {
    const body = await c.req.json();
    if (body.recipe !== c.req.param("recipe")) return c.json({ error: "recipe mismatch" }, 400);
    return c.json({
      recipe: body.recipe,
      output: [`${body.request || "refined"}: ${String(body.raw).slice(0, 40)}`],
    });
  });
  return { app, ctl };
}

function notifyHook() {
  const app = new Hono();
  const ctl = controls();
  ctl.route(app);
  app.use("*", ctl.apply);
  app.post("/v1/hooks", (c) =>
    c.json(
      {
        error: "grant_required",
        watch: c.req.header("x-watch-id") ?? null,
        grant_url: "https://notifyhook.example/grants",
      },
      403,
    ),
  );
  return { app, ctl };
}

/** Starts the four partners; returns their base URLs (keyed by partner id), controls and stop(). */
export async function startPartners({ facilitatorUrl, payTo }) {
  const made = {
    pricefeed: priceFeed({ facilitatorUrl, payTo }),
    textkit: textKit(),
    refinery: refinery(),
    notifyhook: notifyHook(),
  };
  const servers = {};
  for (const [id, { app }] of Object.entries(made)) servers[id] = await listen(app);
  return {
    urls: Object.fromEntries(Object.entries(servers).map(([id, s]) => [id, s.url])),
    stop: async () => {
      await Promise.all(Object.values(servers).map((s) => s.close()));
    },
  };
}
