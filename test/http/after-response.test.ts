import { afterEach, describe, expect, it, vi } from "vitest";
import {
  LAST_WRITE_ATTEMPT,
  logWriteFailure,
  outlastingClient,
  retryWrite,
} from "../../src/http/after-response";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a write retried after the answer", () => {
  it("logs each failed attempt, and marks the last (final: true): nothing tries it again", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    logWriteFailure("req-final", "payments ledger", new Error("D1 down"), 1);
    await retryWrite(
      () => Promise.reject(new Error("D1 down")),
      (e, attempt) => logWriteFailure("req-final", "payments ledger", e, attempt),
    );
    const lines = error.mock.calls.map((c) => JSON.parse(String(c[0])) as Record<string, unknown>);
    expect(lines.map((l) => [l.attempt, l.final])).toEqual([
      [1, undefined],
      [2, undefined],
      [3, undefined],
      [LAST_WRITE_ATTEMPT, true],
    ]);
    expect(lines[3]).toEqual({
      level: "error",
      request_id: "req-final",
      attempt: 4,
      final: true,
      error: "payments ledger write: Error: D1 down",
    });
  });
});

describe("work that must outlast a client going away (outlastingClient)", () => {
  type Ctx = Parameters<typeof outlastingClient>[0];
  const contexts: [string, () => unknown][] = [
    [
      "no execution context (the getter throws)",
      () => {
        throw new Error("This context has no ExecutionContext");
      },
    ],
    [
      "a waitUntil that throws",
      () => ({
        waitUntil: () => {
          throw new Error("refused");
        },
      }),
    ],
    ["a working waitUntil", () => ({ waitUntil: (p: Promise<unknown>) => handed.push(p) })],
  ];
  let handed: Promise<unknown>[] = [];

  it.each(contexts)(
    "with %s: the caller gets the work itself, its value and its failure",
    async (label, ctx) => {
      for (const outcome of ["resolves", "rejects"] as const) {
        handed = [];
        const work = outcome === "resolves" ? Promise.resolve("done") : Promise.reject(new Error("failed"));
        const c = {
          get executionCtx() {
            return ctx();
          },
        } as unknown as Ctx;
        const got = outlastingClient(c, work);
        expect(got).toBe(work);
        if (outcome === "resolves") await expect(got).resolves.toBe("done");
        else await expect(got).rejects.toThrow("failed");
        // What waitUntil holds never rejects: its failure is the awaiting caller's alone.
        // A working context holds it past the answer; the others cannot.
        expect(handed).toHaveLength(label === "a working waitUntil" ? 1 : 0);
        for (const p of handed) await expect(p).resolves.toBe(outcome === "resolves" ? "done" : undefined);
      }
    },
  );
});
