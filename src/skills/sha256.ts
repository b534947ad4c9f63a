import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const sha256 = defineSkill({
  id: "sha256",
  name: "SHA-256",
  category: "text_ops",
  price_usd: 0.003,
  kind: "utility",
  description:
    "Hash a text with SHA-256 after encoding it as utf-8 (default), utf-16le, latin1, ascii, base64 or hex. Returns the byte length, the 64-character hex digest and its 16-character prefix. Deterministic and offline.",
  input: z.object({
    text: z.string().max(400000).meta({ description: "Text to hash." }),
    encoding: z
      .string()
      .max(16)
      .default("utf-8")
      .meta({ description: "utf-8, utf-16le, latin1, ascii, base64 or hex." }),
  }),
  example_request: { text: "hello world" },
  example_response: { skill: "sha256", ok: true },
  run: () => notImplemented(),
});
