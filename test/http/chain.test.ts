import { env } from "cloudflare:test";
import { Hono, type MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { expect, it, vi } from "vitest";
import type { AppEnv } from "../../src/env";
import { answerError } from "../../src/http/app-error";
import { chain } from "../../src/http/chain";

// The skill routes run their steps through chain() instead of as Hono handlers (a cheaper
// dispatch: docs/PERFORMANCE.md, stop 36). Every step's behaviour relies on Hono's semantics: an
// answer returned becomes c.res, a throw is answered by the app's error handler at the step that
// threw (so the steps around it, which free a claim or give a credit back on a failure, see that
// answer), next() once. Each case runs the same steps both ways and must give the same answer and
// the same trace of what each step saw.
type Step = MiddlewareHandler<AppEnv>;

function both(make: (trace: string[]) => Step[]) {
  const run = async (useChain: boolean) => {
    const trace: string[] = [];
    const app = new Hono<AppEnv>();
    const steps = make(trace);
    if (useChain) app.post("/x", chain(steps, answerError));
    else app.post("/x", ...(steps as [Step, ...Step[]]));
    app.onError(answerError);
    const res = await app.request("/x", { method: "POST", body: "{}" }, env);
    return { status: res.status, headers: [...res.headers], body: await res.text(), trace };
  };
  return Promise.all([run(false), run(true)]);
}

/** An outer step that notes what the steps inside it answered (as recordCall and signReceipt read it). */
const watcher =
  (trace: string[], name: string): Step =>
  async (c, next) => {
    trace.push(`${name} in`);
    await next();
    // c.error: what an outer step (call statistics) reads to tell a failure from an answer.
    trace.push(`${name} saw ${c.res.status}${c.error ? ` error ${c.error.message}` : ""}`);
  };
const passOn = (trace: string[], name: string): Step => {
  return (_c, next) => {
    trace.push(name);
    return next();
  };
};
const handler: Step = async (c) => c.json({ ok: true }, 200, { "x-handler": "1" });

const handlerThrows = (t: string[]): Step[] => [
  watcher(t, "outer"),
  passOn(t, "a"),
  watcher(t, "inner"),
  async () => {
    throw new Error("boom");
  },
];

const cases: Record<string, (trace: string[]) => Step[]> = {
  "every step passes the call on": (t) => [
    watcher(t, "outer"),
    passOn(t, "sync"),
    async (_c, next) => next(),
    watcher(t, "inner"),
    handler,
  ],
  "a step answers early": (t) => [
    watcher(t, "outer"),
    passOn(t, "a"),
    async (c) => c.json({ detail: "pay" }, 402),
    passOn(t, "never"),
    handler,
  ],
  "the handler throws": (t) => handlerThrows(t),
  "a step throws before next, synchronously": (t) => [
    watcher(t, "outer"),
    () => {
      throw new Error("sync");
    },
    handler,
  ],
  "a step throws after next": (t) => [
    watcher(t, "outer"),
    async (_c, next) => {
      await next();
      throw new Error("after");
    },
    watcher(t, "inner"),
    handler,
  ],
  "an HTTPException below 500": (t) => [
    watcher(t, "outer"),
    async () => {
      throw new HTTPException(409, { message: "busy" });
    },
  ],
  "next() called twice": (t) => [
    watcher(t, "outer"),
    async (_c, next) => {
      await next();
      await next();
    },
    handler,
  ],
  "a step changes the answer's headers after next": (t) => [
    watcher(t, "outer"),
    async (c, next) => {
      await next();
      c.header("x-after", "yes");
      c.res.headers.set("x-set", "1");
    },
    passOn(t, "a"),
    handler,
  ],
  "a step replaces the answer after next": (t) => [
    watcher(t, "outer"),
    async (c, next) => {
      await next();
      c.res = new Response("replaced", { status: 502 });
    },
    handler,
  ],
  "a step returns an answer after next": (t) => [
    watcher(t, "outer"),
    async (c, next) => {
      await next();
      return c.text("ignored, already answered", 418);
    },
    handler,
  ],
};

for (const [name, make] of Object.entries(cases)) {
  it(`chain() runs steps as Hono runs handlers: ${name}`, async () => {
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const [hono, ours] = await both(make);
      expect(ours).toEqual(hono);
    } finally {
      quiet.mockRestore();
    }
  });
}

it("chain() sets c.error for the steps around a step that threw, as Hono does", async () => {
  const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    const [hono, ours] = await both(handlerThrows);
    expect(ours.trace).toContain("inner saw 500 error boom");
    expect(ours.trace).toEqual(hono.trace);
  } finally {
    quiet.mockRestore();
  }
});

it("chain() answers a step that neither answers nor calls next() as Hono does in an app with middleware (a 500)", async () => {
  const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    const run = async (useChain: boolean) => {
      const app = new Hono<AppEnv>();
      // As the app's edgeHeaders: every route is then a composed one.
      app.use(async (_c, next) => {
        await next();
      });
      const steps: Step[] = [
        async (_c, next) => {
          await next();
        },
        async () => undefined,
        handler,
      ];
      if (useChain) app.post("/x", chain(steps, answerError));
      else app.post("/x", ...(steps as [Step, ...Step[]]));
      app.onError(answerError);
      const res = await app.request("/x", { method: "POST", body: "{}" }, env);
      return { status: res.status, body: await res.text() };
    };
    const [hono, ours] = await Promise.all([run(false), run(true)]);
    expect(ours).toEqual(hono);
    expect(ours.status).toBe(500);
  } finally {
    quiet.mockRestore();
  }
});
