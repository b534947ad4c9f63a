#!/usr/bin/env node
// `node scripts/bench/ab-402.mjs [--slices N] <dirA> <dirB> ...`: the unpaid 402's
// CPU per request for bench Worker bundles built beforehand (`wrangler deploy --dry-run --minify
// -c scripts/bench/wrangler.bench.toml --outdir <dir>`), each served by its own plain workerd
// process with payments on, loaded in 1 s slices taken in turn (A, B, A, B, ...) so the shared
// machine's bursts fall on every bundle alike. Prints, per bundle, CPU µs per request (the workerd
// process's user+system time over its slices divided by its answers) and req/s; also the 402's
// app floor (/__bench/offer-floor) of each bundle, which no candidate here changes. `--free`: the
// bundles served with FREE_BETA=true, and a free 1 KB sha256 call beside its app floor instead.
// `--route P` (repeatable) measures P instead; "GET /path" is fetched with GET and must answer 200
// (the no-op, a page; an empty Worker's directory answers every path: stop 37).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { takeOption, takeOptions } from "../lib/proc.mjs";
import { benchInputs } from "./inputs.mjs";
import { withPaymentsOn } from "./paid-bundles.mjs";
import { cpuTicks, load } from "./throughput.mjs";
import { serve } from "./workerd-config.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const argv = process.argv.slice(2);
const opt = (name, fallback) => takeOption(argv, name, fallback);
const slices = Number(opt("--slices", 10));
const free = argv.includes("--free");
if (free) argv.splice(argv.indexOf("--free"), 1);
const given = takeOptions(argv, "--route");
// `--skill <slug>`: that skill's 1 KB bench input as the POST body (stop 39: text_diff).
const slug = opt("--skill", free ? "sha256" : "slugify");
const dirs = argv.map((d) => path.resolve(d));
if (dirs.length < 2) throw new Error("give two or more bundle directories");
const body = JSON.stringify(benchInputs().find(([s, l]) => s === slug && l === "1 KB")[2]);
const expect = free ? 200 : 402;
const routes = given.length
  ? given.map((g) =>
      g.startsWith("GET ")
        ? { name: g, path: g.slice(4), method: "GET", expect: 200 }
        : { name: g, path: g, method: "POST", body, expect },
    )
  : free
    ? [
        { name: "sha256 1 KB", path: "/api/skills/sha256" },
        { name: "app floor", path: "/__bench/app-floor" },
      ]
    : [
        { name: "unpaid 402", path: "/api/skills/slugify" },
        { name: "402 app floor", path: "/__bench/offer-floor" },
      ];

await withPaymentsOn(root, async (paidConfig) => {
  const servers = [];
  try {
    for (const [i, dir] of dirs.entries()) {
      const { cfg, port } = await paidConfig(dir, `ab${i}`, { freeBeta: free });
      servers.push({ dir, port, cfg, proc: await serve(root, cfg, { port, probePath: "/__bench/noop" }) });
    }
    const run = (s, r, seconds) =>
      load({
        port: s.port,
        method: r.method ?? "POST",
        path: r.path,
        body: r.method === "GET" ? undefined : body,
        expect: r.expect ?? expect,
        seconds,
        connections: 10,
      });
    for (const s of servers) for (const r of routes) await run(s, r, 1); // warm-up
    const sum = servers.map(() => routes.map(() => ({ ticks: 0, done: 0, secs: 0 })));
    for (let k = 0; k < slices; k++) {
      // Alternate the order too, so neither bundle always follows the other.
      const order = k % 2 ? [...servers.keys()].reverse() : [...servers.keys()];
      for (const i of order)
        for (const [j, r] of routes.entries()) {
          const before = cpuTicks(servers[i].cfg);
          const res = await run(servers[i], r, 1);
          const acc = sum[i][j];
          acc.ticks += cpuTicks(servers[i].cfg) - before;
          acc.done += res.done;
          acc.secs += res.done / res.rps;
        }
    }
    for (const [i, s] of servers.entries())
      for (const [j, r] of routes.entries()) {
        const { ticks, done, secs } = sum[i][j];
        console.log(
          `${path.basename(s.dir)}\t${r.name}\tCPU µs/req ${((ticks * 1e4) / done).toFixed(1)}\treq/s ${(done / secs).toFixed(0)}`,
        );
      }
  } finally {
    for (const s of servers) await s.proc.stop();
  }
});
