import slugifyLib from "@sindresorhus/slugify";
import { describe, expect, it } from "vitest";
import { LATIN_BASE } from "../../src/skills/lib/latin-letters";
import { slugify } from "../../src/skills/slugify";
import { postJson } from "../helpers";

/**
 * slugify's description promises to transliterate Latin letters; 117 letters of U+00C0–U+024F
 * (and more of the IPA letters African orthographies write) gave nothing, hidden by empty:false
 * when other letters survived.
 */
const slug = async (text: string) =>
  await (await postJson("/api/skills/slugify", { text })).json<{ slug: string; empty: boolean }>();

/** Every letter (\p{L}) of the blocks the description's "Latin" covers. */
function lettersOf(...blocks: [number, number][]) {
  const out: string[] = [];
  for (const [from, to] of blocks)
    for (let c = from; c <= to; c++) {
      const ch = String.fromCodePoint(c);
      if (/\p{L}/u.test(ch)) out.push(ch);
    }
  return out;
}
const LATIN = lettersOf([0xc0, 0x24f], [0x250, 0x2af], [0x1e00, 0x1eff]);

const run = async (text: string) =>
  (await slugify.run({ text, max_len: 80 }, {} as never)) as { slug: string; empty: boolean };

describe("slugify spells every Latin letter", () => {
  it.each([
    ["Ƙasar Ɗan", "kasar-dan"], // Hausa: hooked K and D
    ["Ŋuorra", "nuorra"], // Northern Sami eng
    ["Ǿresund", "oresund"], // O with stroke and acute
    ["Ɛwe Ɔkɔ", "ewe-oko"], // open e, open o
    ["Ɓaƙi ƴaƴa", "baki-yaya"],
    ["Ǽlfred Ŧromsø", "aelfred-tromso"],
  ])("%s → %s", async (text, expected) => {
    expect(await slug(text)).toEqual({
      skill: "slugify",
      ok: true,
      slug: expected,
      chars: expected.length,
      empty: false,
    });
  });

  it("every letter of U+00C0–U+024F, the IPA letters U+0250–U+02AF and U+1E00–U+1EFF gives a non-empty ASCII slug", async () => {
    expect(LATIN.length).toBeGreaterThan(600);
    const nothing: string[] = [];
    for (const letter of LATIN) {
      const { slug: s, empty } = await run(letter);
      if (empty || !/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(s)) nothing.push(letter);
    }
    expect(nothing).toEqual([]);
  });

  it("the table spells only what the library leaves out, so its own spellings stay (ä ae, ö oe, ß ss, ø o, ə a)", async () => {
    for (const [letter] of LATIN_BASE) {
      expect(slugifyLib(letter, { decamelize: false }), letter).toBe("");
    }
    expect((await run("Ärger Öl Straße Smørrebrød Əliyev")).slug).toBe(
      "aerger-oel-strasse-smorrebrod-aliyev",
    );
  });
});
