import { describe, expect, it } from "vitest";
import { slugify } from "../../src/skills/slugify";
import { postJson } from "../helpers";

const slug = async (text: string) =>
  await (await postJson("/api/skills/slugify", { text })).json<{
    slug: string;
    chars: number;
    empty: boolean;
  }>();

// The description names the scripts slugify transliterates and those it cannot; each is held to it.
describe("slugify does what its description says for each script", () => {
  it.each([
    ["Latin", "Crème Brûlée", "creme-brulee"],
    ["Greek", "Αθήνα", "athina"],
    ["Cyrillic", "Москва", "moskva"],
    ["Armenian", "Հայաստան", "hayastan"],
    ["Georgian", "თბილისი", "tbilisi"],
    ["Arabic", "القاهرة", "alqahrt"],
    ["Thaana", "ދިވެހި", "dhivehi"],
  ])("transliterates %s", async (script, text, expected) => {
    expect(slugify.description).toContain(script);
    expect((await slug(text)).slug).toBe(expected);
  });

  it.each([
    ["Chinese", "中文标题"],
    ["Japanese", "日本語のテキスト"],
    ["Korean", "한국어"],
    ["Hebrew", "עברית"],
    ["Indic", "हिन्दी"],
    ["Thai", "ภาษาไทย"],
  ])("says %s leaves nothing, and answers empty", async (script, text) => {
    expect(slugify.description).toContain(script);
    expect(await slug(text)).toMatchObject({ slug: "", chars: 0, empty: true });
    // Words of a transliterated script beside them are kept.
    expect((await slug(`${text} Tokyo 2024`)).slug).toBe("tokyo-2024");
  });

  it("no longer claims to take any text", () => {
    expect(slugify.description).not.toMatch(/any text/i);
  });
});
