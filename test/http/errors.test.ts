import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { call, ORIGIN } from "../helpers";

describe("error shapes", () => {
  it("unknown path is 404 JSON", async () => {
    const res = await call("/api/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "Not Found" });
  });

  it("wrong method is 405 JSON with Allow", async () => {
    const res = await call("/api/skills/sha256");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await res.json()).toEqual({ detail: "Method Not Allowed" });
    const catalog = await call("/api/catalog", { method: "DELETE" });
    expect(catalog.status).toBe(405);
    expect(catalog.headers.get("allow")).toBe("GET, HEAD");
  });

  it("an uncaught error is 500 JSON with a request id and no stack", async () => {
    const app = createApp();
    app.get("/__boom", () => {
      throw new Error("secret internals at /src/x.ts:1");
    });
    const res = await app.fetch(new Request(`${ORIGIN}/__boom`), env);
    expect(res.status).toBe(500);
    const body = await res.json<{ detail: string; request_id: string }>();
    expect(body.detail).toBe("Internal Server Error");
    expect(body.request_id).toBe(res.headers.get("x-request-id"));
    expect(JSON.stringify(body)).not.toContain("secret internals");
  });

  it("every response carries a request id", async () => {
    const res = await call("/health");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("a body over the size cap is 413 JSON", async () => {
    const res = await call("/api/skills/sha256", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "x".repeat(6 * 1024 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/larger than/);
  });

  it("a streamed body with no Content-Length is counted: over the cap is 413, under it runs", async () => {
    const stream = (bytes: number) => {
      const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
      let sent = 0;
      return new ReadableStream<Uint8Array>({
        pull(ctl) {
          if (sent >= bytes) return ctl.close();
          ctl.enqueue(chunk);
          sent += chunk.length;
        },
      });
    };
    const over = await call("/api/skills/sha256", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream(6 * 1024 * 1024),
      duplex: "half",
    } as RequestInit);
    expect(over.status).toBe(413);
    expect((await over.json<{ detail: string }>()).detail).toMatch(/larger than/);
    const small = new TextEncoder().encode('{"text":"abc"}');
    const under = await call("/api/skills/sha256", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        start(ctl) {
          ctl.enqueue(small);
          ctl.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(under.status).toBe(200);
    expect((await under.json<{ hex: string }>()).hex).toBe(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  });
});
