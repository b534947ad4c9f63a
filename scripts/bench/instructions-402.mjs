#!/usr/bin/env node
// `node scripts/bench/instructions-402.mjs [--requests N] [--warm N] [--route PATH]... <dir>...`:
// instructions per request of the unpaid 402 (and any other POST route answered 402) for bench
// Worker bundles built beforehand (as for ab-402.mjs), each served by plain workerd under valgrind's
// callgrind with payments on. Instrumentation is off while workerd starts and warms up, and is
// switched on (`callgrind_control -i on`) only around N requests, so the count is those requests'
// work in every workerd thread, and nothing else. On this shared machine CPU time per request moved
// ±10 % between identical bundles; an instruction count moves ~±3 % (a GC cycle falling inside the
// window or not), whatever the load. It does not see memory stalls: confirm a win in CPU time too.
// `--free`: the bundles served with FREE_BETA=true instead, and a free 1 KB sha256 call (answered
// 200) through its whole skill chain beside its app floor (/__bench/app-floor) as default routes.
// A route given as "GET /path" is fetched with GET and must answer 200 (the no-op, a page; an empty
// Worker's directory, holding only its worker.js, answers every path: stop 37).
// `--skill <slug>` sends that skill's 1 KB bench input instead of sha256's (or slugify's).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { takeOption, takeOptions } from "../lib/proc.mjs";
import { underCallgrind } from "./callgrind.mjs";
import { benchInputs } from "./inputs.mjs";
import { withPaymentsOn } from "./paid-bundles.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const argv = process.argv.slice(2);
const requests = Number(takeOption(argv, "--requests", 600));
const warm = Number(takeOption(argv, "--warm", 1000));
const free = argv.includes("--free");
if (free) argv.splice(argv.indexOf("--free"), 1);
const routes = takeOptions(argv, "--route");
if (!routes.length)
  routes.push(
    ...(free
      ? ["/api/skills/sha256", "/__bench/app-floor"]
      : ["/api/skills/slugify", "/__bench/offer-floor"]),
  );
// `--skill <slug>`: the 1 KB bench input of another skill as every POST route's body (stop 39's
// text_diff); a route then names that skill's path.
const slug = takeOption(argv, "--skill", free ? "sha256" : "slugify");
const dirs = argv.map((d) => path.resolve(d));
const body = JSON.stringify(benchInputs().find(([s, l]) => s === slug && l === "1 KB")[2]);
const expect = free ? 200 : 402;
const workerd = path.join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");

async function send(port, route, n, connections = 4) {
  const get = route.startsWith("GET ");
  const p = get ? route.slice(4) : route;
  const want = get ? 200 : expect;
  let left = n;
  let wrong = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (left-- > 0) {
        const r = await fetch(
          `http://127.0.0.1:${port}${p}`,
          get ? {} : { method: "POST", headers: { "content-type": "application/json" }, body },
        );
        await r.arrayBuffer();
        if (r.status !== want) wrong++;
      }
    }),
  );
  if (wrong) console.warn(`${route}: ${wrong} answers not ${want}`);
}

await withPaymentsOn(root, async (paidConfig) => {
  for (const [i, dir] of dirs.entries()) {
    const { cfg, port } = await paidConfig(dir, `cg${i}`, { freeBeta: free });
    const cg = await underCallgrind({ workerd, cfg, dir, probeUrl: `http://127.0.0.1:${port}/__bench/noop` });
    try {
      const figures = [];
      for (const p of routes) {
        await send(port, p, warm);
        await cg.instrument(true);
        await send(port, p, requests);
        const total = await cg.instrument(false, p.replace(/\W+/g, "_"));
        figures.push(`${p} ${(total / requests / 1000).toFixed(1)} kIr/request`);
      }
      console.log(`${path.basename(dir)}\t${figures.join("\t")}`);
    } finally {
      await cg.stop();
    }
  }
});
