import net from "node:net";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));

/** A free loopback port, for a server a global setup starts later. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });

// The Stripe emulator for unit tests listens on a port chosen here, so the Worker's bindings can
// name it; test/stripe-setup.ts starts it. Vitest evaluates this file more than once in the same
// process, so the port is chosen once and kept in process.env.
process.env.TEST_STRIPE_PORT ??= String(await freePort());
const stripePort = Number(process.env.TEST_STRIPE_PORT);
// Fixture upstreams of the analytic skills (test/fixtures/upstreams.mjs), chosen the same way.
process.env.TEST_UPSTREAMS_PORT ??= String(await freePort());
const upstreams = `http://127.0.0.1:${process.env.TEST_UPSTREAMS_PORT}`;
// A copy of them of its own for the slow-facilitator project (below), with its own request log.
process.env.TEST_SLOW_UPSTREAMS_PORT ??= String(await freePort());
const slowUpstreams = `http://127.0.0.1:${process.env.TEST_SLOW_UPSTREAMS_PORT}`;
// Tests that need the Worker's own bindings changed run in a project of their own: a request sent
// through the real entry point (exports.default.fetch) is one workerd cancels when its client goes.
const SLOW_FACILITATOR = "test/payments/slow-facilitator";

/**
 * The Worker in workerd as the tests run it: wrangler.toml's bindings, these variables on top.
 * wrangler.toml's main is the built entry chunk (scripts/build-worker.mjs); the pool runs the
 * source through vite instead.
 */
const workerPool = (bindings: Record<string, string>) =>
  cloudflareTest({
    wrangler: { configPath: "./wrangler.toml" },
    main: path.join(import.meta.dirname, "src/index.ts"),
    miniflare: { bindings },
  });
const STUBS = { alias: { "@coinbase/x402": path.join(import.meta.dirname, "test/stubs/coinbase-x402.ts") } };

export default defineConfig({
  test: {
    // The JSON report is what .ci/run counts for its closing "N passed, N failed" line.
    reporters: ["default", "json"],
    outputFile: { json: "test-output/vitest.json" },
    projects: [
      {
        plugins: [
          workerPool({
            TEST_MIGRATIONS: migrations,
            BASE_URL: "https://skills.test",
            // wrangler.toml ships PAY_TO empty (a deployment names its own wallet); tests sell
            // to anvil's account #2, the local stack's pay-to.
            PAY_TO: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
            // Limits are proven in test/payments/quotas.test.ts, which turns them on; the other files
            // test skill logic with many calls from one (absent) client IP.
            RATE_LIMITS: "off",
            // Tests read call_log right after a call: no batching window.
            CALL_LOG_FLUSH_MS: "0",
            // Unit tests exercise skill logic and validation; payments are proven end to end
            // against the real local chain in test/e2e.
            FREE_BETA: "true",
            // The emulator's key is a test-mode key: the deployment sells in Stripe's test mode.
            STRIPE_MODE: "test",
            STRIPE_SECRET_KEY: "sk_test_unit_tests_key_000000000000",
            STRIPE_WEBHOOK_SECRET: "whsec_unit_tests_secret_0000000000",
            STRIPE_API_BASE: `http://127.0.0.1:${stripePort}`,
            WIKIPEDIA_API_BASE: `${upstreams}/wikipedia/api.php`,
            WIKIDATA_API_BASE: `${upstreams}/wikidata/api.php`,
            DOH_RESOLVER: `${upstreams}/doh`,
            // Only the fixture host may be fetched from loopback; nothing else is allow-listed.
            FETCH_ALLOW_HOSTS: upstreams.slice("http://".length),
            FETCH_TIMEOUT_MS: "1500",
            // Test-only Ed25519 key (private JWK) that signs offers and receipts.
            RECEIPT_SIGNING_KEY:
              '{"kty":"OKP","crv":"Ed25519","kid":"test-1","d":"KxjY12ysDmPLNp7ySPMiHYWbAUixrNgi59jQcPDdx4I","x":"jR00Wq-LXBVak1omarPQP4tcVUJepo1zglTErrn4oTA"}',
          }),
        ],
        resolve: STUBS,
        test: {
          name: "workers",
          // One isolate for all files: re-sending the whole module graph (tokenizer tables, x402,
          // viem) to a fresh isolate per file exceeds the pool's socket message limit.
          isolate: false,
          // No test leans on vitest's 5 s default: the first paid call builds the x402 server and
          // the first token_count loads its tables, which a busy 2-core machine (CI beside a
          // bench) can stretch past 5 s. Tests that need more set their own.
          testTimeout: 30_000,
          hookTimeout: 60_000,
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**", "test/scripts/**", `${SLOW_FACILITATOR}/**`],
          setupFiles: ["./test/apply-migrations.ts"],
          globalSetup: ["./test/stripe-setup.ts", "./test/fixtures/upstreams-setup.ts"],
        },
      },
      {
        // FACILITATOR_URL is the fixture page that answers after 4 s (its query takes the client's
        // "/supported"); only what a priced call needs besides.
        plugins: [
          workerPool({
            TEST_MIGRATIONS: migrations,
            BASE_URL: "https://skills.test",
            PAY_TO: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
            RATE_LIMITS: "off",
            FREE_BETA: "true",
            FACILITATOR_URL: `${slowUpstreams}/pages/upstream-slow?`,
            // Stripe as slow as the facilitator for sessions named "upstream_slow".
            // The emulator's key is a test-mode key: the deployment sells in Stripe's test mode.
            STRIPE_MODE: "test",
            STRIPE_SECRET_KEY: "sk_test_unit_tests_key_000000000000",
            STRIPE_WEBHOOK_SECRET: "whsec_unit_tests_secret_0000000000",
            STRIPE_API_BASE: slowUpstreams,
          }),
        ],
        resolve: STUBS,
        test: {
          name: "workers-slow-facilitator",
          // The facilitator's 4 s, the gate's 10 s bound, and a cold first load of the x402 stack.
          testTimeout: 60_000,
          include: [`${SLOW_FACILITATOR}/**/*.test.ts`],
          setupFiles: ["./test/apply-migrations.ts"],
          globalSetup: [`./${SLOW_FACILITATOR}/upstreams-setup.ts`],
        },
      },
      {
        // Node scripts (deploy-check): no Worker, no stack.
        test: {
          name: "scripts",
          include: ["test/scripts/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          globalSetup: ["./test/e2e/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          // Tests a file runs side by side (a11y.test.ts) are CPU-bound on a 2-core machine beside
          // the stack: two at a time use both cores; more only stretch each towards its timeout.
          maxConcurrency: 2,
        },
      },
    ],
  },
});
