import { francAll } from "franc";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { keywordsInLanguage, textLanguage } from "../../src/skills/lib/text-language";

/** Every text franc is handed, to count what it reads (franc itself still answers). */
vi.mock("franc", async (importOriginal) => {
  const franc = await importOriginal<typeof import("franc")>();
  return { ...franc, francAll: vi.fn(franc.francAll) };
});
const read = () => vi.mocked(francAll).mock.calls.map(([text]) => text?.length ?? 0);

/** Stopword-poor English: no stopword list decides, franc does. */
const LISTICLE =
  "Remote work benefits: flexibility, productivity, savings. Companies gain access, reduce overhead, improve retention. Employees enjoy autonomy, balance, comfort. ";

// franc was handed any text of up to 2,048 characters whole (its own limit), ~5.6 ms on 2 KB of
// stopword-poor text, and its answer changed at 2,049 characters, where the windows began.
describe("franc reads windows of at most 512 characters, at most four", () => {
  beforeEach(() => vi.mocked(francAll).mockClear());

  it.each([500, 1000, 2000, 2048, 2049, 200_000])("%i characters", (length) => {
    const text = LISTICLE.repeat(Math.ceil(length / LISTICLE.length)).slice(0, length);
    expect(textLanguage(text).language).toBe("eng");
    const lengths = read();
    expect(lengths.length).toBe(Math.min(4, Math.ceil(length / 512)));
    expect(Math.max(...lengths)).toBeLessThanOrEqual(512);
  });
});

// keyword_extract read franc's windows on every stopword-poor text (~1 ms each: the bench's 1 KB of
// syllable prose went 0.057 -> 6.5 ms under load), though a franc-named list is used only when it
// covers 15% of the words, which no list does there.
describe("keyword_extract asks franc only when its answer could change the stopwords", () => {
  beforeEach(() => vi.mocked(francAll).mockClear());

  it("not on text no stopword list covers 15% of", () => {
    const text = LISTICLE.repeat(20);
    expect(keywordsInLanguage(text, 5).language).toBe("und");
    expect(read()).toEqual([]);
    expect(textLanguage(text).language).toBe("eng"); // ai_detector still asks
    expect(read().length).toBe(4);
  });
});
