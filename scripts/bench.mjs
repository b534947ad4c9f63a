#!/usr/bin/env node
// `npm run bench`: figures for the README. Serves scripts/bench/worker.ts (the real app plus a
// no-op route) with wrangler dev, times each skill's run inside workerd, then compares HTTP
// latency of a 1 KB paid-size call with a no-op route. Writes bench/results.md.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchInputs } from "./bench/inputs.mjs";
import { freePort, startProcess, stopProcess, waitFor } from "./lib/proc.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  ...process.env,
  PATH: `${path.join(root, "node_modules/.bin")}:${process.env.PATH}`,
  WRANGLER_SEND_METRICS: "false",
};
const worker = startProcess(
  "bench-worker",
  path.join(root, "node_modules/.bin/wrangler"),
  [
    "dev",
    "-c",
    "scripts/bench/wrangler.bench.toml",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--log-level",
    "error",
    "--persist-to",
    path.join(root, ".dev/bench-state"),
    "--show-interactive-dev-session=false",
  ],
  { cwd: root, env },
);
const lines = [];
const say = (s = "") => {
  console.log(s);
  lines.push(s);
};

try {
  await waitFor("bench worker", async () => (await fetch(`${base}/__bench/noop`)).ok, {
    child: worker,
    timeoutMs: 90_000,
  });
  say(
    `# Benchmarks (${new Date().toISOString().slice(0, 10)}, ${process.platform}, Node ${process.version}, wrangler dev / workerd)`,
  );
  say();
  say(
    "In-isolate time of `run` per call (validation and HTTP excluded): median of 7 timed batches, each long enough for the 1 ms timer of local workerd; first = the first call (includes lazy table loads). Targets: max input < 200 ms, token_count and html_clean at 400k < 100 ms, 1 KB < 1 ms.",
  );
  say();
  say("| skill | input | body | first ms | median ms | calls timed |");
  say("|---|---|---:|---:|---:|---:|");
  for (const [slug, label, body] of benchInputs()) {
    const size = JSON.stringify(body).length;
    const iterations = 7;
    const res = await fetch(`${base}/__bench/time/${slug}`, {
      method: "POST",
      body: JSON.stringify({ body, iterations }),
    });
    if (!res.ok) throw new Error(`${slug} ${label}: ${res.status} ${await res.text()}`);
    const r = await res.json();
    say(
      `| ${slug} | ${label} | ${(size / 1024).toFixed(0)} KB | ${r.first_ms.toFixed(0)} | ${r.median_ms.toFixed(3)} | ${r.n} |`,
    );
  }

  // HTTP latency: a 1 KB skill call vs a no-op route on the same Worker (FREE_BETA=true, no payment).
  const median = async (fn, n) => {
    const t = [];
    for (let i = 0; i < n; i++) {
      const s = performance.now();
      await fn();
      t.push(performance.now() - s);
    }
    t.sort((a, b) => a - b);
    return t[Math.floor(n / 2)];
  };
  const small = JSON.stringify({ text: "x".repeat(1000) });
  const noop = () => fetch(`${base}/__bench/noop`).then((r) => r.text());
  const call = (p, b) => () => fetch(`${base}${p}`, { method: "POST", body: b }).then((r) => r.text());
  await median(noop, 50);
  const noopMs = await median(noop, 300);
  say();
  say("HTTP round trip on loopback, median of 300 sequential requests:");
  say();
  say("| route | median ms | ratio to no-op |");
  say("|---|---:|---:|");
  say(`| GET no-op | ${noopMs.toFixed(3)} | 1.00 |`);
  for (const [p, b] of [
    ["/api/skills/sha256", small],
    ["/api/skills/slugify", small],
    ["/api/skills/keyword-extract", small],
    ["/api/skills/token-count", small],
  ]) {
    await median(call(p, b), 20);
    const ms = await median(call(p, b), 300);
    say(`| POST ${p} (1 KB) | ${ms.toFixed(3)} | ${(ms / noopMs).toFixed(2)} |`);
  }
  mkdirSync(path.join(root, "bench"), { recursive: true });
  writeFileSync(path.join(root, "bench/results.md"), `${lines.join("\n")}\n`);
  console.log("\nwritten to bench/results.md");
} finally {
  await stopProcess(worker);
}
