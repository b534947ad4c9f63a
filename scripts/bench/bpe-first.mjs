#!/usr/bin/env node
// token_count's first o200k call of 400k characters, each in a fresh workerd isolate (a new
// `workerd serve` per call), source trees alternated round by round so the machine's load falls
// on all alike. `node scripts/bench/bpe-first.mjs [--rounds 7] [--route run|phases] [--cold]
// <source root>...`: each root is a tree of this repository (its src/, scripts/bench/, static/ and
// node_modules/ are used; a candidate library patch goes in that tree's node_modules). Without
// --cold the isolate first counts 1 KB and 400k with cl100k, as `npm run bench` does before its
// o200k row. Prints, per root, the median and range of the in-isolate time and of the workerd
// process's CPU time for that call (docs/PERFORMANCE.md "Stop 32"). `--callgrind` serves each
// isolate under valgrind's callgrind instead and counts the instructions of the o200k call alone
// (every workerd thread; instrumentation off while workerd starts and warms up): a figure the
// machine's load does not move, which does not see cache misses or the GC's memory traffic.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { freePort, takeOption } from "../lib/proc.mjs";
import { underCallgrind } from "./callgrind.mjs";
import { prose } from "./inputs.mjs";
import { median } from "./startup.mjs";
import { serve, writeConfig } from "./workerd-config.mjs";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const workerd = path.join(here, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");
const argv = process.argv.slice(2);
const opt = (name, fallback) => takeOption(argv, name, fallback);
const rounds = Number(opt("--rounds", 7));
const route = opt("--route", "run");
const cold = argv.includes("--cold");
const callgrind = argv.includes("--callgrind");
const roots = argv.filter((a) => !a.startsWith("--")).map((a) => path.resolve(a));
if (roots.length === 0) roots.push(here);

/** Bundles one root's bench worker, its packages resolved from that root's node_modules. */
async function bundle(root, i) {
  const outdir = path.join(os.tmpdir(), `bpe-first-${process.pid}-${i}`);
  mkdirSync(outdir, { recursive: true });
  await build({
    entryPoints: [path.join(root, "scripts/bench/bpe-first-worker.ts")],
    outfile: path.join(outdir, "worker.js"),
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    external: ["node:*", "cloudflare:*"],
    minify: true,
    logLevel: "error",
  });
  return { root, outdir };
}

const post = async (port, p, body) => {
  const r = await fetch(`http://127.0.0.1:${port}${p}`, { method: "POST", body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`${p}: ${r.status} ${await r.text()}`);
  return r.json();
};

/**
 * CPU ms of every thread of a process so far (/proc schedstat, ns): unlike the in-isolate wall
 * time, it hardly moves with the other processes' load on a shared machine.
 */
const cpuMs = (pid) =>
  readdirSync(`/proc/${pid}/task`).reduce(
    (sum, tid) =>
      sum + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1e6,
    0,
  );

const text = prose(400_000);
const bundles = [];
for (const [i, root] of roots.entries()) bundles.push(await bundle(root, i));
const results = bundles.map(() => []);
for (let round = 0; round < rounds; round++) {
  for (const [i, b] of bundles.entries()) {
    const port = await freePort();
    const cfg = writeConfig(b.outdir, {
      name: "bpe",
      files: ["worker.js"],
      main: "worker.js",
      port,
      bindings: {},
      assets: path.join(b.root, "static"),
    });
    const s = callgrind
      ? await underCallgrind({ workerd, cfg, dir: b.outdir, probeUrl: `http://127.0.0.1:${port}/probe` })
      : await serve(here, cfg, { port, probePath: "/probe" });
    try {
      if (!cold) {
        await post(port, "/run", { text: prose(1000), encoding: "cl100k" });
        await post(port, "/run", { text, encoding: "cl100k" });
      }
      const cpu = cpuMs(s.pid);
      await s.instrument?.(true);
      const r = await post(port, `/${route}`, { text, encoding: "o200k" });
      const counted = await s.instrument?.(false, "o200k");
      if (callgrind && counted === undefined) throw new Error("no callgrind dump");
      results[i].push({ ...r, cpu: cpuMs(s.pid) - cpu, ...(counted ? { mIr: counted / 1e6 } : {}) });
      console.error(`round ${round + 1} root ${i}: ${JSON.stringify(r)}`);
    } finally {
      await s.stop();
    }
  }
}
const lines = [];
for (const [i, b] of bundles.entries()) {
  const keys = Object.keys(results[i][0]).filter((k) => k !== "tokens");
  const tokens = [...new Set(results[i].map((r) => r.tokens))].join("/");
  const fig = keys.map((k) => {
    const xs = results[i].map((r) => r[k]);
    return `${k} ${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  });
  lines.push(`root ${i} ${b.root}: ${fig.join(", ")}; tokens ${tokens}; n=${results[i].length}`);
}
console.log(lines.join("\n"));
writeFileSync(path.join(os.tmpdir(), `bpe-first-${process.pid}.json`), JSON.stringify(results));
