import { describe, expect, it } from "vitest";
import { FIXTURE } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Queries cut to a length before they are quoted in an answer or sent upstream are cut whole code
 * points at a time (text-cut.ts): half an emoji is "\ud83d" in the answer's JSON, which strict
 * decoders refuse, and garbage in the search upstream.
 */
const lone = /\\ud8[0-9a-f]{2}(?!\\ud[c-f])/i;

describe("research and seo never quote half an emoji of the caller's", () => {
  it(
    "research's no-match summary quotes the query cut whole",
    async () => {
      const res = await postJson("/api/skills/research", { query: `x${"😀".repeat(150)}` });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain("No Wikipedia article matched");
      expect(text).not.toMatch(lone);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "seo's given keywords are cut whole",
    async () => {
      const res = await postJson("/api/skills/seo", {
        url: `${FIXTURE}/pages/good.html`,
        keywords: [`a${"😀".repeat(60)}`],
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('"keyword":"a😀');
      expect(text).not.toMatch(lone);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("a 422 echoes a long input cut whole code points at a time", () => {
  it("a string of emoji past the bound ends in whole emoji and the ellipsis", async () => {
    const res = await postJson("/api/skills/slugify", { text: `a${"😀".repeat(4000)}` });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text).toContain("😀…");
    expect(text).not.toMatch(lone);
  });

  it("an object key of emoji past the bound too", async () => {
    // text missing: the 422 echoes the body it is missing from, with this key.
    const res = await postJson("/api/skills/slugify", { [`b${"😀".repeat(1000)}`]: 1 });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text).toContain("😀…");
    expect(text).not.toMatch(lone);
  });
});
