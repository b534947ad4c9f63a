// Shared by ab-402.mjs, instructions-402.mjs and answers-diff.mjs: the local chain and
// facilitator (for /supported), and a capnp config per prebuilt bench Worker bundle that serves it
// with payments on (FREE_BETA=false), as `--throughput` serves its payments-on process.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { startChain } from "../lib/chain.mjs";
import { startFacilitator } from "../lib/facilitator.mjs";
import { freePort } from "../lib/proc.mjs";
import { vars } from "./throughput.mjs";
import { entryOf, writeConfig } from "./workerd-config.mjs";

/** Runs `work(paidConfig)` with the chain and facilitator up, and stops them afterwards. */
export async function withPaymentsOn(root, work) {
  const chain = await startChain();
  const facilitator = await startFacilitator({ rpcUrl: chain.rpcUrl, privateKey: chain.facilitatorKey });
  try {
    const bindings = {
      ...vars(readFileSync(path.join(root, "scripts/bench/wrangler.bench.toml"), "utf8")),
      PAY_TO: chain.payTo,
      FACILITATOR_URL: facilitator.url,
      FREE_BETA: "false",
    };
    /**
     * A config serving the bundle in `dir` on a free port: { cfg, port }. `freeBeta`: the same with
     * FREE_BETA=true, for a free call through the whole skill chain (`--free` of ab-402.mjs and
     * instructions-402.mjs).
     */
    const paidConfig = async (dir, name, { freeBeta = false } = {}) => {
      const files = readdirSync(dir).filter(
        (f) =>
          statSync(path.join(dir, f)).isFile() &&
          !/\.(map|md|json|capnp)$/.test(f) &&
          !f.startsWith("callgrind."),
      );
      const port = await freePort();
      const cfg = writeConfig(dir, {
        name,
        files,
        main: entryOf(files),
        port,
        bindings: freeBeta ? { ...bindings, FREE_BETA: "true" } : bindings,
        assets: path.join(root, "static"),
      });
      return { cfg, port };
    };
    return await work(paidConfig);
  } finally {
    await facilitator.stop();
    await chain.stop();
  }
}
