import { describe, expect, it } from "vitest";
import { call } from "../helpers";

/** The JSON body `{"text":"abc"}` gzip-compressed, as a client that compresses its requests sends it. */
async function gzipped(text: string) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

describe("request bodies in a content coding", () => {
  it("a gzip body is a 415 naming the coding to use, not a 422 about its compressed bytes", async () => {
    // Not a list of identity: another coding's name, or two names without their comma.
    for (const coding of ["identityidentity", "identity identity", "identity, gzip"]) {
      const res = await call("/api/skills/sha256", {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": coding },
        body: '{"text":"abc"}',
      });
      expect(res.status, coding).toBe(415);
      await res.arrayBuffer();
    }
    for (const path of [
      "/api/skills/sha256",
      "/api/skills/refinery-recipes",
      "/api/partners/pricefeed/try/mcp_tools",
    ]) {
      const res = await call(path, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body: await gzipped('{"text":"abc"}'),
      });
      expect(res.status, path).toBe(415);
      expect(res.headers.get("accept-encoding")).toBe("identity");
      const body = await res.json<{ detail: string }>();
      expect(body.detail).toMatch(/^Unsupported Content-Encoding "gzip": send the request body uncompressed/);
    }
  });

  it("identity (or an empty header) is the body as sent", async () => {
    for (const coding of ["identity", "IDENTITY", "", "identity, identity", " Identity ,"]) {
      const res = await call("/api/skills/sha256", {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": coding },
        body: '{"text":"abc"}',
      });
      expect(res.status, coding).toBe(200);
      expect((await res.json<{ hex: string }>()).hex).toBe(
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      );
    }
  });
});
