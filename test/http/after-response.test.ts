import { afterEach, describe, expect, it, vi } from "vitest";
import { LAST_WRITE_ATTEMPT, logWriteFailure, retryWrite } from "../../src/http/after-response";

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
