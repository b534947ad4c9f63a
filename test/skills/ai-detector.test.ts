import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { analyzeText } from "../../src/skills/lib/stylometry";
import { skillById } from "../../src/skills/registry";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { detailOf, postJson, postJsonSettled } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

interface DetectorBody {
  skill: string;
  url: string | null;
  text_preview: string;
  verdict: string;
  ai_likelihood: number;
  human_likelihood: number;
  signals: Record<string, unknown> & { avg_sentence_words: number; repetition_detected: boolean };
  supported: string[];
  source: string;
  cache?: string;
}

async function detect(body: Record<string, unknown>) {
  const res = await postJsonSettled("/api/skills/ai-detector", body);
  expect(res.status).toBe(200);
  return res.json<DetectorBody>();
}

describe("ai_detector", () => {
  it(
    "the catalog example is its real output",
    async () => {
      const skill = skillById("ai_detector");
      const res = await postJson("/api/skills/ai-detector", skill?.example_request);
      expect(await res.json()).toEqual(skill?.example_response);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each([[{}], [{ text: null, url: null }], [{ text: "" }], [{ url: "" }]])(
    "%j is 422",
    async (body) => {
      const res = await postJson("/api/skills/ai-detector", body);
      expect(res.status).toBe(422);
      expect((await detailOf(res))[0]).toMatchObject({
        loc: ["body"],
        msg: expect.stringMatching(/either text or url/),
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "reads a page through the fetcher and the html_clean logic (no script text)",
    async () => {
      const body = await detect({ url: `${FIXTURE}/pages/human.html` });
      expect(body).toMatchObject({
        url: `${FIXTURE}/pages/human.html`,
        source: "url",
        supported: ["text", "url"],
      });
      expect(body.text_preview).toMatch(/^So I finally fixed the bike\. Took three hours!/);
      expect(JSON.stringify(body)).not.toContain("tracking");
      expect(body.verdict).toBe("likely_human");
      expect(body.ai_likelihood).toBeLessThan(0.35);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "uniform, connective-heavy, repetitive prose reads as likely_ai",
    async () => {
      const body = await detect({ url: `${FIXTURE}/pages/ai.html` });
      expect(body.verdict).toBe("likely_ai");
      expect(body.ai_likelihood).toBeGreaterThan(0.65);
      expect(body.signals.repetition_detected).toBe(true);
      expect(body.signals.burstiness as number).toBeLessThan(0.2);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "accepts text/plain pages",
    async () => {
      const body = await detect({ url: `${FIXTURE}/pages/plain.txt` });
      expect(body.text_preview).toBe("Plain text is fine for the detector. It has two sentences.");
      expect(body.signals.avg_sentence_words).toBe(5.5);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "text wins over url: the url is echoed and not fetched",
    async () => {
      const url = `${FIXTURE}/pages/human.html?never=${crypto.randomUUID()}`;
      const body = await detect({ text: "Short text here.", url });
      expect(body).toMatchObject({ url, source: "text", text_preview: "Short text here." });
      expect(await upstreamRequests(url.slice(FIXTURE.length))).toBe(0);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "short texts are uncertain whatever their style",
    async () => {
      const body = await detect({ text: "Furthermore, it is important. Moreover, it is essential." });
      expect(body.verdict).toBe("uncertain");
      expect(Math.abs(body.ai_likelihood - 0.5)).toBeLessThan(0.1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "likelihoods always sum to 1 and stay in [0, 1]",
    () => {
      fc.assert(
        fc.property(fc.string({ maxLength: 2000 }), (text) => {
          const r = analyzeText(text);
          expect(r.ai_likelihood + r.human_likelihood).toBeCloseTo(1, 12);
          expect(Math.round((r.ai_likelihood + r.human_likelihood) * 1000)).toBe(1000);
          expect(r.ai_likelihood).toBeGreaterThanOrEqual(0);
          expect(r.ai_likelihood).toBeLessThanOrEqual(1);
          expect(["likely_ai", "likely_human", "uncertain"]).toContain(r.verdict);
        }),
        { numRuns: 300, seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a refused url is a 422 on url, and a failing page a 502",
    async () => {
      const refused = await postJson("/api/skills/ai-detector", {
        url: "http://169.254.169.254/latest/meta-data/",
      });
      expect(refused.status).toBe(422);
      expect((await detailOf(refused))[0]).toMatchObject({ loc: ["body", "url"], type: "url_refused" });
      const failing = await postJson("/api/skills/ai-detector", { url: `${FIXTURE}/pages/upstream-failure` });
      expect(failing.status).toBe(502);
      expect(await failing.json()).toMatchObject({ charged: false });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "url results are cached",
    async () => {
      const url = `${FIXTURE}/pages/ai.html?cache-test=${crypto.randomUUID()}`;
      expect((await detect({ url })).cache).toBe("miss");
      const second = await detect({ url });
      expect(second.cache).toBe("hit");
      expect(await upstreamRequests(url.slice(FIXTURE.length))).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );
});
