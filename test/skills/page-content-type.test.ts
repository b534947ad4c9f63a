import { afterEach, describe, expect, it, vi } from "vitest";
import { FIXTURE } from "../fixtures/upstream-requests";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * A page of a type seo or ai_detector does not read is refused from its headers, before its body
 * is read: a 3 MB PDF was downloaded up to the 2 MiB cap and answered 502 "larger than 2048 KiB",
 * where a 3 KB one got the 422 url_content_type.
 */

/** Serves `size` bytes of `type` at a fresh fixture URL; `pulled()` says how many bytes were read. */
function serveFile(type: string, size: number, declareLength: boolean) {
  const path = `/pages/file-${crypto.randomUUID()}`;
  let sent = 0;
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (req.url !== `${FIXTURE}${path}`) return real(input, init);
    const chunk = new Uint8Array(64 * 1024).fill(0x25);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= size) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const headers: Record<string, string> = { "content-type": type };
    if (declareLength) headers["content-length"] = String(size);
    return new Response(body, { headers });
  });
  return { url: `${FIXTURE}${path}`, pulled: () => sent };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a page of a type the skill does not read", () => {
  it.each([
    ["seo", "a 3 MB PDF", 3_000_000, true],
    ["seo", "a 3 MB PDF sent without a length", 3_000_000, false],
    ["seo", "a 3 KB PDF", 3_000, true],
    ["ai-detector", "a 3 MB PDF", 3_000_000, true],
  ])(
    "%s: %s is a 422 url_content_type, its body not downloaded",
    async (skill, _what, size, declareLength) => {
      const { url, pulled } = serveFile("application/pdf", size as number, declareLength as boolean);
      const res = await postJson(`/api/skills/${skill}`, { url });
      expect(res.status, await res.clone().text()).toBe(422);
      expect((await detailOf(res))[0]).toMatchObject({
        loc: ["body", "url"],
        type: "url_content_type",
        ctx: { content_type: "application/pdf" },
      });
      // At most what a stream buffers ahead of a reader that never comes (one chunk or two).
      expect(pulled()).toBeLessThanOrEqual(2 * 64 * 1024);
    },
    SKILL_TEST_TIMEOUT,
  );
});
