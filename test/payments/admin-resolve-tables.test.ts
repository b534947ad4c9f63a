import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";

/** The resolve route's {table} is a word from the URL: only its three tables are tables. */
const token = "resolve-tables-t0ken-0123456789abcdefghij";
const resolve = (table: string, body: unknown) =>
  createApp().fetch(
    new Request(`https://skills.test/api/admin/resolve/${table}/1`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    { ...env, ADMIN_TOKEN: token },
  );

describe("POST /api/admin/resolve/{table}/{key}", () => {
  it("a table named like an object's own property (constructor, toString, __proto__) is an unknown table: 404, never a 500", async () => {
    for (const table of ["constructor", "toString", "hasOwnProperty", "valueOf", "__proto__"])
      for (const outcome of ["queue", "landed", "not_landed"]) {
        const res = await resolve(table, { outcome, tx_hash: `0x${"ab".repeat(32)}` });
        expect([table, outcome, res.status]).toEqual([table, outcome, 404]);
        expect((await res.json<{ detail: string }>()).detail).toContain(
          "refunds, payment_nonces or upstream_payments",
        );
      }
  });
});
