// `node scripts/bench.mjs --throughput`: requests per second of the built bundle under plain
// `workerd serve` (no wrangler dev proxy, which caps everything near 1-2k req/s), as ratios to the
// app's own no-op route and to an empty Worker in the same run, plus start-up, bundle size and the
// bundle's biggest contributors. `--profile <route>` instead records a CPU profile of one route.
//
// Load generator: autocannon is not installed in this tree, so a bounded keep-alive loop on
// node:http (N connections, fixed duration, 127.0.0.1 only) stands in for it.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { benchInputs } from "./inputs.mjs";
import { entryOf, serve, writeConfig } from "./workerd-config.mjs";

/**
 * Builds a Worker with `wrangler deploy --dry-run` into `outdir` (its `[build]` command runs
 * scripts/build-worker.mjs first: split ES modules); returns its module files. `metafile` gets
 * esbuild's metafile of that build (every chunk, sources as inputs), not wrangler's of the entry.
 */
export function buildBundle(root, { config, outdir, minify = true, metafile }) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const args = ["deploy", "--dry-run", "--outdir", outdir, ...(config ? ["-c", config] : [])];
  if (minify) args.push("--minify");
  try {
    execFileSync(path.join(root, "node_modules/.bin/wrangler"), args, {
      cwd: root,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", WORKER_BUILD_MINIFY: minify ? "1" : "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (e) {
    throw new Error(`wrangler ${args.join(" ")} failed:\n${e.stderr}\n${e.stdout}`);
  }
  if (metafile) copyFileSync(`${buildDir(root, config)}.meta.json`, metafile);
  return readdirSync(outdir).filter(
    (f) => statSync(path.join(outdir, f)).isFile() && !/\.(map|md|json)$/.test(f),
  );
}

/** The `base_dir` of a wrangler config: where its `[build]` command writes the split modules. */
function buildDir(root, config = path.join(root, "wrangler.toml")) {
  const dir = readFileSync(config, "utf8").match(/^base_dir\s*=\s*"([^"]+)"/m)?.[1];
  if (!dir) throw new Error(`${config}: no base_dir`);
  return path.resolve(path.dirname(config), dir);
}

export function gzipSize(dir, files) {
  let raw = 0;
  let gz = 0;
  for (const f of files) {
    const bytes = readFileSync(path.join(dir, f));
    raw += bytes.length;
    gz += gzipSync(bytes, { level: 9 }).length;
  }
  return { raw, gz };
}

/**
 * The output chunks `start` imports statically, itself included, from an esbuild metafile's
 * `outputs`: what workerd evaluates at start-up when `start` is the entry chunk (the build splits
 * every `import()` target into chunks of its own). test/scripts/start-up-imports.test.ts uses it too.
 */
export function staticClosure(meta, start) {
  const seen = new Set([start]);
  const queue = [start];
  for (let chunk = queue.shift(); chunk !== undefined; chunk = queue.shift()) {
    for (const imp of meta.outputs[chunk]?.imports ?? []) {
      if (imp.kind !== "import-statement" || imp.external || seen.has(imp.path)) continue;
      seen.add(imp.path);
      queue.push(imp.path);
    }
  }
  return seen;
}

/** File names of the chunks the entry chunk (index.mjs, as scripts/build-worker.mjs names it) imports statically. */
function entryImports(metafile) {
  const meta = JSON.parse(readFileSync(metafile, "utf8"));
  const start = Object.keys(meta.outputs).find((k) => path.basename(k) === "index.mjs");
  const closure = staticClosure(meta, start);
  closure.delete(start);
  return [...closure].map((f) => path.basename(f));
}

/** Output bytes per package (or per src/ folder) from an esbuild metafile, biggest first. */
export function topContributors(metafile, n = 10) {
  const meta = JSON.parse(readFileSync(metafile, "utf8"));
  const by = new Map();
  for (const out of Object.values(meta.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(out.inputs ?? {})) {
      const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      const key = m ? m[1] : input.replace(/^(src\/[^/]+)\/.*$/, "$1");
      by.set(key, (by.get(key) ?? 0) + bytesInOutput);
    }
  }
  return [...by.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
}

export function vars(tomlText) {
  const section = tomlText.split(/^\[vars\]\s*$/m)[1]?.split(/^\[/m)[0] ?? "";
  const out = {};
  for (const m of section.matchAll(/^([A-Z0-9_]+)\s*=\s*"([^"]*)"/gm)) out[m[1]] = m[2];
  return out;
}

/**
 * Keep-alive load: `connections` loops, each sending one request after another for `seconds`.
 * Returns requests per second and the count of answers with another status than `expect`.
 */
export function load({ port, method, path: p, body, expect, seconds, connections }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const payload = body === undefined ? undefined : Buffer.from(body);
  const headers = payload ? { "content-type": "application/json", "content-length": payload.length } : {};
  const end = performance.now() + seconds * 1000;
  let done = 0;
  let wrong = 0;
  const statuses = {};
  const one = () =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port, method, path: p, agent, headers }, (res) => {
        if (res.statusCode !== expect) {
          wrong++;
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        }
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
      req.end(payload);
    });
  const loop = async () => {
    while (performance.now() < end) {
      await one();
      done++;
    }
  };
  const t0 = performance.now();
  return Promise.all(Array.from({ length: connections }, loop)).then(() => {
    agent.destroy();
    if (wrong) console.warn(`${method} ${p}: unexpected statuses ${JSON.stringify(statuses)}`);
    return { rps: done / ((performance.now() - t0) / 1000), wrong, done };
  });
}

function routes() {
  const inputs = new Map(benchInputs().map(([slug, label, body]) => [`${slug} ${label}`, body]));
  const post = (name, slug, label, { paid = false } = {}) => ({
    name,
    method: "POST",
    path: `/api/skills/${slug}`,
    body: JSON.stringify(inputs.get(`${slug} ${label}`)),
    expect: paid ? 402 : 200,
    paid,
  });
  return [
    { name: "empty Worker, GET /", method: "GET", path: "/", expect: 200, empty: true },
    { name: "app no-op, GET /__bench/noop", method: "GET", path: "/__bench/noop", expect: 200 },
    // The floor of a 1 KB call: the same sha256 work with no framework (read, parse, digest, JSON),
    // in the bench Worker's own isolate (scripts/bench/worker.ts).
    { ...post("floor: sha256 1 KB without Hono or middleware", "sha256", "1 KB"), path: "/__bench/floor" },
    // The same work as a route of the app: its outermost middleware and router, no skill steps.
    {
      ...post("app floor: the same sha256 as an app route, no skill steps", "sha256", "1 KB"),
      path: "/__bench/app-floor",
    },
    post("sha256, 1 KB", "sha256", "1 KB"),
    post("slugify, 1 KB", "slugify", "1 KB"),
    post("json_sort, 1 KB", "json-sort", "1 KB"),
    post("text_diff, 1 KB", "text-diff", "1 KB"),
    post("token_count, 1 KB", "token-count", "1 KB cl100k"),
    // The no-op again, from the process that serves the unpaid routes (payments on): the paid
    // rows' ratios are also taken to it, the no-op of their own process.
    {
      name: "app no-op, payments on (the 402's process)",
      method: "GET",
      path: "/__bench/noop",
      expect: 200,
      paid: true,
    },
    post("unpaid → 402 (slugify, payments on)", "slugify", "1 KB", { paid: true }),
    // slugify's exact 402 answer sent by an app route with no skill steps (scripts/bench/worker.ts).
    {
      ...post("app floor of the 402: its answer from an app route, no skill steps", "slugify", "1 KB", {
        paid: true,
      }),
      path: "/__bench/offer-floor",
    },
    // The same answer, every header included, from a bare fetch handler: the 402's floor on workerd.
    {
      ...post("floor of the 402: its answer without Hono or middleware", "slugify", "1 KB", { paid: true }),
      path: "/__bench/floor/offer",
    },
  ];
}

// Linux reports process CPU time in clock ticks of 1/100 s (USER_HZ).
const CLOCK_TICKS = 100;

/** CPU ticks (user + system) of every process whose command line names `configFile` (workerd). */
export function cpuTicks(configFile) {
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((x) => /^\d+$/.test(x))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(configFile)) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended between the listing and the read
    }
  }
  return ticks;
}

const fmt = (xs, digits = 2) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return xs.length > 1
    ? `${mean.toFixed(digits)} (${lo.toFixed(digits)}–${hi.toFixed(digits)})`
    : mean.toFixed(digits);
};

/** The whole --throughput run; returns markdown lines. */
export async function throughputReport(
  root,
  { freePort, facilitatorUrl, payTo, rounds = 2, seconds = 6, connections = 10, startupRoundCount = 9 },
) {
  // Other test runs share this machine: the load average before and after goes next to the figures.
  const loadBefore = os.loadavg()[0];
  const work = path.join(root, ".dev/throughput");
  const benchDir = path.join(work, "bench");
  const prodDir = path.join(work, "prod");
  const emptyDir = path.join(work, "empty");
  mkdirSync(emptyDir, { recursive: true });
  const benchFiles = buildBundle(root, {
    config: path.join(root, "scripts/bench/wrangler.bench.toml"),
    outdir: benchDir,
  });
  const metafile = path.join(work, "prod-meta.json");
  const prodFiles = buildBundle(root, { outdir: prodDir, metafile });
  const prodSize = gzipSize(prodDir, prodFiles);
  writeFileSync(
    path.join(emptyDir, "worker.js"),
    "export default { fetch() { return new Response('ok'); } };\n",
  );
  const bindings = {
    ...vars(readFileSync(path.join(root, "scripts/bench/wrangler.bench.toml"), "utf8")),
    PAY_TO: payTo,
    FACILITATOR_URL: facilitatorUrl,
  };
  const list = routes();
  const rps = new Map(list.map((r) => [r.name, []]));
  const wrong = new Map(list.map((r) => [r.name, 0]));
  const cpu = new Map(list.map((r) => [r.name, []]));
  const startups = { empty: [], app: [] };
  for (let round = 0; round < rounds; round++) {
    const emptyPort = await freePort();
    const appPort = await freePort();
    const emptyCfg = writeConfig(emptyDir, {
      name: "empty",
      files: ["worker.js"],
      main: "worker.js",
      port: emptyPort,
    });
    const appCfg = writeConfig(benchDir, {
      name: "app",
      files: benchFiles,
      main: entryOf(benchFiles),
      port: appPort,
      bindings,
      assets: path.join(root, "static"),
    });
    // The same bundle with payments on (FREE_BETA=false) in its own process: its own socket
    // rather than the bench Worker's /paid mount, whose per-request URL rewrite would be measured.
    const paidPort = await freePort();
    const paidCfg = writeConfig(benchDir, {
      name: "paid",
      files: benchFiles,
      main: entryOf(benchFiles),
      port: paidPort,
      bindings: { ...bindings, FREE_BETA: "false" },
      assets: path.join(root, "static"),
    });
    const empty = await serve(root, emptyCfg, { port: emptyPort, probePath: "/" });
    const app = await serve(root, appCfg, { port: appPort, probePath: "/__bench/noop" });
    const paid = await serve(root, paidCfg, { port: paidPort, probePath: "/__bench/noop" });
    startups.empty.push(empty.startupMs);
    startups.app.push(app.startupMs);
    try {
      const portOf = (r) => (r.empty ? emptyPort : r.paid ? paidPort : appPort);
      const configOf = (r) => (r.empty ? emptyCfg : r.paid ? paidCfg : appCfg);
      for (const r of list) await load({ ...r, port: portOf(r), seconds: 1, connections }); // warm-up
      // Each route gets `seconds` seconds in one-second slices taken in turn, so a burst of load
      // from elsewhere on this shared machine falls on every route alike instead of on one.
      const sum = new Map(list.map((r) => [r.name, { done: 0, secs: 0, ticks: 0 }]));
      for (let slice = 0; slice < seconds; slice++) {
        for (const r of list) {
          const before = cpuTicks(configOf(r));
          const res = await load({ ...r, port: portOf(r), seconds: 1, connections });
          const acc = sum.get(r.name);
          acc.ticks += cpuTicks(configOf(r)) - before;
          acc.done += res.done;
          acc.secs += res.done / res.rps;
          wrong.set(r.name, wrong.get(r.name) + res.wrong);
        }
      }
      for (const r of list) {
        const { done, secs, ticks } = sum.get(r.name);
        rps.get(r.name).push(done / secs);
        cpu.get(r.name).push((ticks * (1e6 / CLOCK_TICKS)) / done);
        console.log(`round ${round + 1}: ${r.name}: ${(done / secs).toFixed(0)} req/s`);
      }
    } finally {
      await paid.stop();
      await app.stop();
      await empty.stop();
    }
  }
  // First call of each skill in a fresh isolate (lazy tables, wasm, first JIT), timed inside
  // workerd by the bench Worker's /__bench/time route; the largest input of each kind is used so
  // token_count o200k and html_clean markdown load what they load.
  const firsts = [];
  {
    const port = await freePort();
    const cfg = writeConfig(benchDir, {
      name: "first",
      files: benchFiles,
      main: entryOf(benchFiles),
      port,
      bindings,
      assets: path.join(root, "static"),
    });
    const app = await serve(root, cfg, { port, probePath: "/__bench/noop" });
    try {
      const seen = new Set();
      for (const [slug, label, body] of benchInputs()) {
        const key = `${slug} ${/o200k|markdown/.test(label) ? label : ""}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const res = await fetch(`http://127.0.0.1:${port}/__bench/time/${slug}`, {
          method: "POST",
          body: JSON.stringify({ body, iterations: 1 }),
        });
        if (!res.ok) throw new Error(`${slug}: ${res.status} ${await res.text()}`);
        firsts.push([`${slug}, ${label}`, (await res.json()).first_ms]);
      }
    } finally {
      await app.stop();
    }
  }
  // Start-up of the production bundle (what is deployed), alternating with an empty Worker: the
  // bench Worker's starts above are one per round, too few to read against a 150 ms target.
  const { median, startupRounds } = await import("./startup.mjs");
  const prodStarts = (await startupRounds(root, [prodDir], { rounds: startupRoundCount, freePort })).get(
    prodDir,
  );
  const emptyName = list[0].name;
  const noopName = list[1].name;
  const ratio = (name, to) => rps.get(name).map((v, i) => v / rps.get(to)[i]);
  const lines = [];
  const say = (s = "") => lines.push(s);
  say(
    `## Throughput under plain workerd (${new Date().toISOString().slice(0, 16)}Z, ${connections} connections, ${seconds} s per route in 1 s slices taken in turn, ${rounds} rounds)`,
  );
  say();
  say(
    "`node scripts/bench.mjs --throughput`: the bench Worker (scripts/bench/worker.ts) built like the production Worker (`wrangler deploy --dry-run --minify`, whose `[build]` runs scripts/build-worker.mjs), served by plain `workerd serve` (the unpaid route from a second process of the same bundle with FREE_BETA=false; generated capnp config: the bundle's modules, text bindings, KV bound to a stub the measured routes never touch, D1 to a stub that acknowledges every statement, so the call statistics' batched write takes its production path), the local facilitator for /supported. Load: a keep-alive node:http loop (autocannon is not installed here), 127.0.0.1 only. Each figure is the mean of the rounds with the rounds' range (the machine's spread) in brackets; ratios are taken within a round.",
  );
  say();
  say(
    `Machine: ${os.cpus().length} CPUs, 1-minute load average ${loadBefore.toFixed(1)} at the start and ${os.loadavg()[0].toFixed(1)} at the end of the run (other engineers' tests share it).`,
  );
  say();
  say(
    "CPU µs per request: the workerd process's user+system time over the slices divided by the requests answered (from /proc; the load generator is not in it). It moves far less with the machine's load than req/s does, so it is the figure to compare between runs.",
  );
  say();
  say(
    "| route | req/s | ratio to the app's no-op | ratio to an empty Worker | CPU µs per request | wrong status |",
  );
  say("|---|---:|---:|---:|---:|---:|");
  for (const r of list) {
    say(
      `| ${r.name} | ${fmt(rps.get(r.name), 0)} | ${fmt(ratio(r.name, noopName))} | ${fmt(ratio(r.name, emptyName))} | ${fmt(cpu.get(r.name), 0)} | ${wrong.get(r.name)} |`,
    );
  }
  const paidNoop = list.find((r) => r.paid && r.method === "GET");
  if (paidNoop) {
    say();
    say(
      `The rows with payments on, as ratios to the no-op of their own process (${paidNoop.name}): ${list
        .filter((r) => r.paid && r !== paidNoop)
        .map((r) => `${r.name} ${fmt(ratio(r.name, paidNoop.name))}`)
        .join("; ")}.`,
    );
  }
  const extra = startups.app.map((v, i) => v - startups.empty[i]);
  say();
  say(
    `Start-up of the production bundle (spawn to the first answer of an unrouted path, minus an empty Worker's start in the same round, ${prodStarts.length} alternating rounds): **median ${median(prodStarts).toFixed(0)} ms** (min ${Math.min(...prodStarts).toFixed(0)}, max ${Math.max(...prodStarts).toFixed(0)}; target ≤ 150 ms). The bench Worker in the throughput rounds above (one start per round, it also carries the bench routes): app ${fmt(startups.app, 0)} ms, empty Worker ${fmt(startups.empty, 0)} ms, app minus empty ${fmt(extra, 0)} ms.`,
  );
  say();
  say(
    "First call of each skill in a fresh isolate (in-isolate time of `run`, local workerd's 1 ms timer; target < 300 ms):",
  );
  say();
  say(firsts.map(([k, v]) => `${k}: ${v.toFixed(0)} ms`).join("; "));
  say();
  const entry = gzipSize(prodDir, [entryOf(prodFiles)]);
  const staticChunks = entryImports(metafile);
  const atStart = gzipSize(prodDir, [entryOf(prodFiles), ...staticChunks]);
  const dataModules = prodFiles.filter((f) => f.endsWith(".bin"));
  const wasm = prodFiles.filter((f) => f.endsWith(".wasm"));
  const lazyChunks = prodFiles.length - 1 - staticChunks.length - wasm.length - dataModules.length;
  const kib = ({ raw, gz }) => `${(raw / 1024).toFixed(0)} KiB raw, ${(gz / 1024).toFixed(0)} KiB gzip`;
  say(
    `Production bundle (\`wrangler deploy --dry-run --minify\`, wrangler.toml: scripts/build-worker.mjs's split ES modules, the entry chunk bundled by wrangler): all ${prodFiles.length} modules ${(prodSize.raw / 1024 / 1024).toFixed(2)} MiB raw, **${(prodSize.gz / 1024 / 1024).toFixed(2)} MiB gzip** (gzip -9 per module; target ≤ 1.5 MB, free-plan limit 3 MB); the entry module ${entryOf(prodFiles)} ${kib(entry)}; the entry with the ${staticChunks.length} chunks it imports statically (evaluated at start-up) ${kib(atStart)}; the other ${lazyChunks} chunks and the wasm are evaluated on first use (workerd still compiles every JavaScript module at load: docs/PERFORMANCE.md, "Start-up"); the ${dataModules.length} Data modules (${dataModules.map((f) => f.replace(/-\w+\.bin$/, "")).join(", ")}: JSON, not compiled) are parsed by the chunk that imports them, on first use.`,
  );
  const bpeDir = path.join(root, "static/assets/bpe");
  const bpe = gzipSize(bpeDir, readdirSync(bpeDir));
  say();
  say(
    `Not in the script: token_count's BPE tables are Workers Static Assets (static/assets/bpe/, read through the ASSETS binding on first use; no script limit applies, 25 MiB per file): ${(bpe.raw / 1024 / 1024).toFixed(2)} MiB raw, ${(bpe.gz / 1024 / 1024).toFixed(2)} MiB gzip.`,
  );
  say();
  say("Top 10 contributors to the production bundle (esbuild metafile, minified bytes in output):");
  say();
  say("| package or source folder | KiB |");
  say("|---|---:|");
  for (const [name, bytes] of topContributors(metafile)) say(`| ${name} | ${(bytes / 1024).toFixed(0)} |`);
  return lines;
}

/** The --profile run: CPU profile of the routes whose name contains `match`, unminified build. */
export async function profileReport(
  root,
  { freePort, facilitatorUrl, payTo, match, seconds = 5, connections = 10 },
) {
  const { inspect, saveProfile, selfTimes } = await import("./profile.mjs");
  const dir = path.join(root, ".dev/throughput/bench-unminified");
  const files = buildBundle(root, {
    config: path.join(root, "scripts/bench/wrangler.bench.toml"),
    outdir: dir,
    minify: false,
  });
  const bindings = {
    ...vars(readFileSync(path.join(root, "scripts/bench/wrangler.bench.toml"), "utf8")),
    PAY_TO: payTo,
    FACILITATOR_URL: facilitatorUrl,
  };
  const port = await freePort();
  const inspectorPort = await freePort();
  // One process per profile run: the payments-on one only when no route of the other matches.
  const matching = routes().filter((x) => !x.empty && x.name.includes(match));
  const paidRoutes = matching.length > 0 && matching.every((x) => x.paid);
  const cfg = writeConfig(dir, {
    name: "app",
    files,
    main: entryOf(files),
    port,
    bindings: paidRoutes ? { ...bindings, FREE_BETA: "false" } : bindings,
    assets: path.join(root, "static"),
  });
  const app = await serve(root, cfg, { port, probePath: "/__bench/noop", inspectorPort });
  const lines = [];
  try {
    for (const r of routes().filter(
      (x) => !x.empty && x.name.includes(match) && Boolean(x.paid) === paidRoutes,
    )) {
      await load({ ...r, port, seconds: 1, connections });
      const cdp = await inspect(inspectorPort);
      await cdp.send("Profiler.enable");
      await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
      await cdp.send("Profiler.start");
      const res = await load({ ...r, port, seconds, connections });
      const { result } = await cdp.send("Profiler.stop");
      cdp.close();
      const file = await saveProfile(path.dirname(dir), r.name, result.profile);
      const { total, top } = selfTimes(result.profile, 25);
      lines.push(
        `### ${r.name}: ${res.done} requests, ${total.toFixed(0)} ms sampled (${path.relative(root, file)})`,
      );
      lines.push("");
      lines.push("| self ms | per request µs | function |");
      lines.push("|---:|---:|---|");
      for (const [k, v] of top)
        lines.push(`| ${v.toFixed(0)} | ${((v * 1000) / res.done).toFixed(1)} | \`${k}\` |`);
      lines.push("");
    }
  } finally {
    await app.stop();
  }
  return lines;
}
