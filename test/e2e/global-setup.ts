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
  const { port, stackDir, child: stackChild } = await startStackOnFreePort();
  const stack = JSON.parse(readFileSync(path.join(stackDir, "stack.json"), "utf8"));
  project.provide("stack", { ...stack, stack_dir: stackDir });

  return async () => {
    // Ctrl-C must stop every process the stack started: the port is free afterwards.
    const exited = new Promise((r) => stackChild.once("exit", r));
    stackChild.kill("SIGINT");
    await exited;
    await waitFor("port release", () => portIsFree(port), { timeoutMs: 10_000 });
  };
}

/**
 * A port that was free when chosen can be taken before the stack binds it (another stack, a bench
 * run or any listen(0) on the machine starting in between): the stack then exits saying so, and is
 * started again on another port, up to three times. Any other failure is thrown at once.
 */
async function startStackOnFreePort() {
  for (let attempt = 1; ; attempt++) {
    const port: number = await freePort();
    const stackDir = mkdtempSync(path.join(os.tmpdir(), "skills-stack-"));
    try {
      return { port, stackDir, child: await startStack(port, stackDir) };
    } catch (e) {
      if (attempt >= 3 || !/Address already in use|is in use/.test(String(e))) throw e;
      console.warn(
        `e2e stack: port ${port} was taken before the stack bound it; starting again (${attempt})`,
      );
    }
  }
}

/** Starts `npm start`'s stack on `port`; resolves once it is ready, or throws with its output. */
async function startStack(port: number, stackDir: string) {
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
    return child;
  } catch (e) {
    // Stopped, and its own services with it, before another stack is started.
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGINT");
      await exited;
    }
    throw e;
  }
}
