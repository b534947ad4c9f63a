import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InputError } from "../../src/http/validation";
import { sha256 } from "../../src/skills/sha256";
import { reportable } from "./reportable";

/**
 * sha256 against node:crypto's createHash over bytes made independently of the skill: for every
 * documented encoding, the text written from random bytes (or random text) hashes to the hash of
 * those bytes, with their length.
 */

type Answer = { bytes: number; hex: string; hex_prefix: string; encoding: string };
/** The skill's answer, or null when it refuses the text (422). */
async function ours(text: string, encoding: string): Promise<Answer | null> {
  // Through the input schema, as a request is read: it names the encoding (aliases, any case).
  const input = sha256.input().safeParse({ text, encoding });
  if (!input.success) throw new Error(`${encoding}: ${input.error.message}`);
  try {
    return (await sha256.run(input.data as never, {} as never)) as Answer;
  } catch (e) {
    if (e instanceof InputError) return null;
    throw e;
  }
}
const reference = (bytes: Uint8Array) => ({
  bytes: bytes.length,
  hex: createHash("sha256").update(bytes).digest("hex"),
});

/** Base64 as people write it: padded or not, either alphabet, wrapped at 76 with CRLF or spaces. */
function base64Spellings(bytes: Uint8Array): string[] {
  const std = Buffer.from(bytes).toString("base64");
  const url = Buffer.from(bytes).toString("base64url");
  const wrapped = std.replace(/.{1,76}/g, "$&\r\n");
  return [
    std,
    std.replace(/=+$/, ""),
    url,
    url.padEnd(Math.ceil(url.length / 4) * 4, "="),
    wrapped,
    ` ${std}\t`,
  ];
}

describe("sha256 laws", () => {
  it("base64, hex, latin1 and ascii text of random bytes hash as those bytes", async () => {
    const cases = fc.sample(fc.uint8Array({ maxLength: 120 }), { numRuns: 400, seed: 21 });
    for (const bytes of cases) {
      const want = reference(bytes);
      const hex = Buffer.from(bytes).toString("hex");
      const latin1 = String.fromCharCode(...bytes);
      const ascii = Uint8Array.from(bytes, (b) => b & 0x7f);
      const texts: [string, string, ReturnType<typeof reference>][] = [
        ...base64Spellings(bytes).map((t): [string, string, typeof want] => [t, "base64", want]),
        [hex, "hex", want],
        [hex.toUpperCase(), "HEX", want],
        [latin1, "latin1", want],
        [latin1, "ISO-8859-1", want],
        [String.fromCharCode(...ascii), "ascii", reference(ascii)],
      ];
      for (const [text, encoding, expected] of texts) {
        const got = await ours(text, encoding);
        expect(got && { bytes: got.bytes, hex: got.hex }, `${encoding} ${JSON.stringify(text)}`).toEqual(
          expected,
        );
        expect(got?.hex_prefix).toBe(expected.hex.slice(0, 16));
      }
    }
  });

  it("utf-8 and utf-16le hash the text's own bytes; a lone surrogate is refused, never replaced", async () => {
    const texts = fc.sample(
      fc.oneof(
        fc.string({ unit: "binary", maxLength: 40 }),
        fc.string({ unit: "grapheme", maxLength: 40 }),
        // fc's binary unit is whole code points: lone surrogates come from here.
        fc.string({
          unit: fc.constantFrom("a", "é", "😀", "\ud83d", "\ude00", "\udbff", "\ufeff"),
          maxLength: 8,
        }),
      ),
      { numRuns: 600, seed: 22 },
    );
    let refused = 0;
    for (const text of texts) {
      const [utf8, utf16] = [await ours(text, "utf-8"), await ours(text, "utf16le")];
      const check = reportable(() => {
        if (!text.isWellFormed()) {
          refused++;
          expect([utf8, utf16]).toEqual([null, null]);
          return;
        }
        expect(utf8 && { bytes: utf8.bytes, hex: utf8.hex }).toEqual(reference(Buffer.from(text, "utf8")));
        expect(utf16 && { bytes: utf16.bytes, hex: utf16.hex }).toEqual(
          reference(Buffer.from(text, "utf16le")),
        );
      });
      check();
    }
    // Both branches run.
    expect(refused).toBeGreaterThan(20);
  });

  it("text a byte encoding cannot hold is refused: latin1 past U+00FF, ascii past U+007F, malformed base64 and hex", async () => {
    for (const [text, encoding] of [
      ["\u0100", "latin1"],
      ["\u0080", "ascii"],
      ["😀", "latin1"],
      ["QQ=", "base64"],
      ["Q", "base64"],
      ["QQ==QQ==", "base64"],
      ["+_8=", "base64"],
      ["0g", "hex"],
      ["abc", "hex"],
    ])
      expect(
        await ours(text as string, encoding as string),
        `${encoding} ${JSON.stringify(text)}`,
      ).toBeNull();
  });
});
