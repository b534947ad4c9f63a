#!/usr/bin/env node
import { readFileSync } from "node:fs";
// `node scripts/bench/ab-token.mjs [--rounds 10] [--input "1 KB cl100k"] <tree> <tree> ...`:
// token_count on one of the bench's inputs (scripts/bench/inputs.mjs, by label), trees of this repository compared (docs/PERFORMANCE.md "Stop 33"). Each tree's bench
// Worker is built as `--throughput` builds it (wrangler deploy --dry-run --minify) and served by
// its own plain workerd process with that tree's static assets (its BPE tables). Round by round,
// trees in turn (order reversed every other round): the in-isolate median of `run` (what `npm run
// bench`'s first table reads, /__bench/time) and a 1 s autocannon slice of the route, whose CPU
// µs per request is the workerd process's user+system time over its answers (ab-402.mjs's way).
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, takeOption } from "../lib/proc.mjs";
import { benchInputs } from "./inputs.mjs";
import { median } from "./startup.mjs";
import { buildBundle, cpuTicks, load, vars } from "./throughput.mjs";
import { entryOf, serve, writeConfig } from "./workerd-config.mjs";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const argv = process.argv.slice(2);
const opt = (name, fallback) => takeOption(argv, name, fallback);
const rounds = Number(opt("--rounds", 10));
const label = opt("--input", "1 KB cl100k");
const trees = argv.filter((a) => !a.startsWith("--")).map((a) => path.resolve(a));
if (trees.length < 2) throw new Error("give two or more trees");
const input = benchInputs().find(([s, l]) => s === "token-count" && l === label)?.[2];
if (!input) throw new Error(`no token-count bench input "${label}"`);
const body = JSON.stringify(input);

const servers = [];
try {
  for (const [i, root] of trees.entries()) {
    const config = path.join(root, "scripts/bench/wrangler.bench.toml");
    const outdir = path.join(os.tmpdir(), `ab-token-${process.pid}-${i}`);
    const files = buildBundle(root, { config, outdir });
    const port = await freePort();
    const cfg = writeConfig(outdir, {
      name: `abtoken${i}`,
      files,
      main: entryOf(files),
      port,
      bindings: vars(readFileSync(config, "utf8")),
      assets: path.join(root, "static"),
    });
    servers.push({ root, port, cfg, proc: await serve(here, cfg, { port, probePath: "/__bench/noop" }) });
  }
  const slice = (s) =>
    load({
      port: s.port,
      method: "POST",
      path: "/api/skills/token-count",
      body,
      expect: 200,
      seconds: 1,
      connections: 10,
    });
  const timed = async (s) => {
    const r = await fetch(`http://127.0.0.1:${s.port}/__bench/time/token-count`, {
      method: "POST",
      body: JSON.stringify({ body: input, iterations: 7 }),
    });
    if (!r.ok) throw new Error(`${s.root}: ${r.status} ${await r.text()}`);
    return (await r.json()).median_ms;
  };
  for (const s of servers) {
    await timed(s); // the table's load, then warm
    await slice(s);
  }
  const acc = servers.map(() => ({ medians: [], cpu: [], ticks: 0, done: 0, secs: 0 }));
  for (let k = 0; k < rounds; k++) {
    const order = k % 2 ? [...servers.keys()].reverse() : [...servers.keys()];
    for (const i of order) {
      const s = servers[i];
      const a = acc[i];
      a.medians.push(await timed(s));
      const before = cpuTicks(s.cfg);
      const res = await slice(s);
      const ticks = cpuTicks(s.cfg) - before;
      a.cpu.push((ticks * 1e4) / res.done);
      a.ticks += ticks;
      a.done += res.done;
      a.secs += res.done / res.rps;
    }
  }
  for (const [i, s] of servers.entries()) {
    const a = acc[i];
    const range = (xs, d) =>
      `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;
    console.log(
      `${s.root}\tin-isolate median µs ${range(
        a.medians.map((m) => m * 1000),
        1,
      )}\tCPU µs/req ${((a.ticks * 1e4) / a.done).toFixed(1)}, slices ${range(a.cpu, 0)}\treq/s ${(a.done / a.secs).toFixed(0)}`,
    );
  }
} finally {
  for (const s of servers) await s.proc.stop();
}
