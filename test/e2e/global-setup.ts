import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
// @ts-expect-error plain JS helper shared with the scripts
import { freePort, portIsFree, waitFor } from "../../scripts/lib/proc.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    stack: { base_url: string; stack_dir: string; [key: string]: unknown };
  }
}

/** Starts the real local stack exactly as `npm start` does, once for all e2e files. */
export default async function setup(project: TestProject) {
  // A stack already running (`STACK_DIR=… PORT=… npm start`), named by its directory: reused as
  // it is, and left running.
  const running = process.env.E2E_STACK_DIR;
  if (running) {
    const stack = JSON.parse(readFileSync(path.join(running, "stack.json"), "utf8"));
    project.provide("stack", { ...stack, stack_dir: running });
    return;
  }
  const port: number = await freePort();
  const stackDir = mkdtempSync(path.join(os.tmpdir(), "skills-stack-"));
  const child = spawn(process.execPath, ["scripts/dev-stack.mjs"], {
    // reconcile.test.ts and books.test.ts keep settlements in the mempool (anvil's automine off):
    // the facilitator gives up on each after this wait, twice per call. With automine on, every
    // receipt is there within milliseconds, so 10 s (not the stack's 30 s) is still ample.
    env: { FACILITATOR_RECEIPT_WAIT_MS: "10000", ...process.env, PORT: String(port), STACK_DIR: stackDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => {
    output += d;
  });
  child.stderr.on("data", (d) => {
    output += d;
  });
  try {
    const proc = Object.assign(child, { recentOutput: () => output });
    await waitFor("npm start", async () => output.includes("ready: "), { timeoutMs: 150_000, child: proc });
  } catch (e) {
    child.kill("SIGINT");
    throw e;
  }
  const stack = JSON.parse(readFileSync(path.join(stackDir, "stack.json"), "utf8"));
  project.provide("stack", { ...stack, stack_dir: stackDir });

  return async () => {
    // Ctrl-C must stop every process the stack started: the port is free afterwards.
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGINT");
    await exited;
    await waitFor("port release", () => portIsFree(port), { timeoutMs: 10_000 });
  };
}
