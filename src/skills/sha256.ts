import { Buffer } from "node:buffer";
import * as z from "zod";
import { InputError } from "../http/validation";
import { defineSkill } from "./types";

const ALIASES: Record<string, Encoding> = {
  "utf-8": "utf-8",
  utf8: "utf-8",
  "utf-16le": "utf-16le",
  utf16le: "utf-16le",
  latin1: "latin1",
  "iso-8859-1": "latin1",
  binary: "latin1",
  ascii: "ascii",
  "us-ascii": "ascii",
  base64: "base64",
  hex: "hex",
};
type Encoding = "utf-8" | "utf-16le" | "latin1" | "ascii" | "base64" | "hex";
const NAMES = "utf-8, utf-16le, latin1, ascii, base64, hex";
/** Every other name taken, with what it stands for: the description lists all the schema lets through. */
const ALIAS_NAMES = Object.entries(ALIASES)
  .filter(([alias, name]) => alias !== name)
  .map(([alias, name]) => `${alias} (${name})`)
  .join(", ");
/**
 * What the published schema lets through: every name and alias, in any case, with the spaces the
 * server trims. Clients (and the models that fill MCP arguments) build values from the schema.
 */
const caseless = (name: string) =>
  [...name].map((ch) => (/[a-z]/.test(ch) ? `[${ch}${ch.toUpperCase()}]` : ch)).join("");
const ENCODING_PATTERN = `^\\s*(?:${Object.keys(ALIASES).map(caseless).join("|")})\\s*$`;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** pydantic's value_error: the prefix in `msg` only, `ctx.error` the bare message. */
function bad(message: string, text: string): never {
  throw InputError.at(["text"], `Value error, ${message}`, text, "value_error", { error: message });
}

function codeUnitsAtMost(text: string, max: number, name: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > max) {
      // The whole character: the unit alone quoted half an emoji ("\ud83d"). `i` counts code
      // points too (README's characters): all before it are in the BMP, an astral one is refused.
      const ch = String.fromCodePoint(text.codePointAt(i) as number);
      bad(`character ${JSON.stringify(ch)} at index ${i} is not valid ${name}`, text);
    }
    bytes[i] = c;
  }
  return bytes;
}

/** The bytes that get hashed; text that the encoding cannot represent is a 422, never replaced. */
export function encodeText(text: string, encoding: Encoding): Uint8Array {
  switch (encoding) {
    case "utf-8":
      if (!text.isWellFormed()) bad("text contains a lone surrogate, which UTF-8 cannot encode", text);
      return new TextEncoder().encode(text);
    case "utf-16le": {
      if (!text.isWellFormed()) bad("text contains a lone surrogate, which UTF-16 cannot encode", text);
      const bytes = new Uint8Array(text.length * 2);
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        bytes[2 * i] = c & 0xff;
        bytes[2 * i + 1] = c >> 8;
      }
      return bytes;
    }
    case "latin1":
      return codeUnitsAtMost(text, 0xff, "latin1");
    case "ascii":
      return codeUnitsAtMost(text, 0x7f, "ascii");
    case "base64": {
      const compact = text.replace(/[\t\n\r ]/g, "");
      // base64url may carry its padding (RFC 4648 §5): then the whole is a multiple of 4.
      const bare = compact.replace(/={1,2}$/, "");
      const url =
        !BASE64.test(compact) &&
        BASE64URL.test(bare) &&
        bare.length % 4 !== 1 &&
        (bare === compact || compact.length % 4 === 0);
      if (!url && !BASE64.test(compact)) bad("text is not valid base64", text);
      return new Uint8Array(Buffer.from(url ? bare : compact, url ? "base64url" : "base64"));
    }
    case "hex":
      if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) {
        bad("text is not valid hex (an even number of 0-9a-f digits)", text);
      }
      return new Uint8Array(Buffer.from(text, "hex"));
  }
}

export const sha256 = defineSkill({
  id: "sha256",
  name: "SHA-256",
  category: "text_ops",
  price_usd: 0.003,
  kind: "utility",
  description:
    "Hash a text with SHA-256 after encoding it as utf-8 (default), utf-16le, latin1, ascii, base64 or hex. Returns the byte length, the 64-character hex digest and its 16-character prefix. Text the encoding cannot represent is refused, never silently replaced. Deterministic and offline.",
  input: () =>
    z.object({
      text: z.string().max(400000).meta({ description: "Text to hash." }),
      encoding: z
        .string()
        .max(16)
        .default("utf-8")
        .transform((name, ctx) => {
          const key = name.trim().toLowerCase();
          // Own keys only: "constructor" or "__proto__" must be an unknown encoding, not Object's.
          const enc = Object.hasOwn(ALIASES, key) ? ALIASES[key] : undefined;
          if (enc) return enc;
          const message = `Input should be one of ${NAMES}`;
          ctx.addIssue({
            code: "custom",
            message,
            params: { type: "literal_error", ctx: { expected: NAMES } },
          });
          return z.NEVER;
        })
        .meta({
          description: `One of ${NAMES}; also accepted: ${ALIAS_NAMES}; any case.`,
          pattern: ENCODING_PATTERN,
        }),
    }),
  output: () =>
    z.object({
      algo: z.literal("sha256"),
      encoding: z.enum(["utf-8", "utf-16le", "latin1", "ascii", "base64", "hex"]),
      bytes: z.int().min(0).meta({ description: "Byte length of the encoded text." }),
      hex: z.string().regex(/^[0-9a-f]{64}$/),
      hex_prefix: z.string().regex(/^[0-9a-f]{16}$/),
    }),
  example_request: { text: "hello world" },
  example_response: {
    skill: "sha256",
    ok: true,
    algo: "sha256",
    encoding: "utf-8",
    bytes: 11,
    hex: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    hex_prefix: "b94d27b9934d3e08",
  },
  async run({ text, encoding }) {
    const bytes = encodeText(text, encoding);
    const hex = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("hex");
    return { algo: "sha256", encoding, bytes: bytes.length, hex, hex_prefix: hex.slice(0, 16) };
  },
});
