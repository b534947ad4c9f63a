import { checkEndpointSchema, discoverOriginSchema } from "@agentcash/discovery";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const PRICES: Record<string, string> = {
  "/api/skills/osint-graph": "0.01",
  "/api/skills/research": "0.015",
  "/api/skills/seo": "0.012",
  "/api/skills/ai-detector": "0.01",
  "/api/skills/json-flatten": "0.006",
  "/api/skills/json-sort": "0.003",
  "/api/skills/text-diff": "0.006",
  "/api/skills/url-normalize": "0.005",
  "/api/skills/html-clean": "0.008",
  "/api/skills/json-schema-validate": "0.006",
  "/api/skills/keyword-extract": "0.008",
  "/api/skills/token-count": "0.004",
  "/api/skills/sha256": "0.003",
  "/api/skills/uuid-mint": "0.003",
  "/api/skills/slugify": "0.003",
};
/** agentcash's price hint: "<amount> USD", or "<min>-<max> USD" for a dynamic price; anchored both ends. */
const priceHint = (amount: string) => new RegExp(`^${amount.replaceAll(".", "\\.")} USD$`);

interface ListedService {
  partner_id: string;
  listing_status: string;
  price_usd: number;
}
/** The price range a crawler should be quoted, from the stack's own partner listing. */
async function partnerRanges() {
  const { services } = (await (await fetch(`${stack.base_url}/api/partners`)).json()) as {
    services: ListedService[];
  };
  const range = (which: (s: ListedService) => boolean) => {
    const usd = services.filter((s) => s.listing_status === "paid" && s.price_usd > 0 && which(s));
    const prices = usd.map((s) => s.price_usd);
    return `${Math.min(...prices)}-${Math.max(...prices)}`;
  };
  return { tryRoutes: range(() => true), refinery: range((s) => s.partner_id === "refinery") };
}

describe("discovery as crawlers see it", () => {
  it("openapi.json passes a real OpenAPI 3.1 validator", async () => {
    const doc = await (await fetch(`${stack.base_url}/openapi.json`)).json();
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("@agentcash/discovery finds every paid endpoint with its price and no fixable warning", async () => {
    const found = await discoverOriginSchema({ target: stack.base_url });
    expect(found.found).toBe(true);
    if (!found.found) return;
    // Pages stay out of openapi.json so the surface stays within agentcash's 40-route budget.
    expect(found.endpoints.length).toBeLessThanOrEqual(40);
    const paid = found.endpoints.filter((e) => e.authMode === "paid");
    const byRoute = Object.fromEntries(paid.map((e) => [`${e.method} ${e.path}`, e.price]));
    for (const [path, amount] of Object.entries(PRICES))
      expect(byRoute[`POST ${path}`], path).toMatch(priceHint(amount));
    const ranges = await partnerRanges();
    for (const method of ["GET", "POST"]) {
      const route = `${method} /api/partners/{partner_id}/try/{service_id}`;
      expect(byRoute[route], route).toMatch(priceHint(ranges.tryRoutes));
    }
    expect(byRoute["POST /api/skills/refinery-recipes"]).toMatch(priceHint(ranges.refinery));
    expect(found.info?.contactEmail).toContain("@");
  });

  it("its CLI-equivalent audit reports no error or warn for the origin and a probed endpoint", async () => {
    // The CLI prints these warnings; run it as an agent would.
    const { execFileSync } = await import("node:child_process");
    const run = (...args: string[]) =>
      JSON.parse(execFileSync("node_modules/.bin/discovery", [...args, "--json"], { encoding: "utf8" })) as {
        warnings: { code: string; severity: string; message: string }[];
      };
    const origin = run("discover", stack.base_url);
    const bad = origin.warnings.filter((w) => w.severity === "error" || w.severity === "warn");
    expect(bad).toEqual([]);
    const check = await checkEndpointSchema({ url: `${stack.base_url}/api/skills/sha256`, probe: true });
    expect(check.found).toBe(true);
    const endpoint = run("check", `${stack.base_url}/api/skills/sha256`);
    expect(endpoint.warnings.filter((w) => w.severity === "error" || w.severity === "warn")).toEqual([]);
  });

  it("Redocly lint with its recommended rules finds no error and no warning in openapi.json", async () => {
    const { execFile } = await import("node:child_process");
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const os = await import("node:os");
    const path = await import("node:path");
    const dir = mkdtempSync(path.join(os.tmpdir(), "redocly-"));
    const file = path.join(dir, "openapi.json");
    writeFileSync(file, await (await fetch(`${stack.base_url}/openapi.json`)).text());
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        path.resolve("node_modules/.bin/redocly"),
        ["lint", file, "--extends", "recommended", "--format", "json"],
        {
          cwd: dir,
          timeout: 90_000,
          env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        },
        // Exit code 1 means errors were found; the JSON report says which.
        (err, stdout) => (stdout ? resolve(stdout) : reject(err)),
      ),
    );
    const report = JSON.parse(out.slice(out.indexOf("{"))) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string }[];
    };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 120_000);
});
