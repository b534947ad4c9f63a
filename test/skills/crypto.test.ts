import { describe, expect, it } from "vitest";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

const hash = async (text: string, encoding?: string) => {
  const res = await postJson("/api/skills/sha256", { text, encoding });
  return { status: res.status, body: await res.json<Record<string, unknown>>() };
};

describe("sha256", () => {
  it(
    "hashes the bytes of each encoding (known vectors)",
    async () => {
      const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
      expect((await hash("abc")).body).toMatchObject({
        algo: "sha256",
        bytes: 3,
        hex: abc,
        hex_prefix: abc.slice(0, 16),
      });
      expect((await hash("616263", "hex")).body.hex).toBe(abc);
      expect((await hash("YWJj", "base64")).body.hex).toBe(abc);
      expect((await hash("abc", "ascii")).body.hex).toBe(abc);
      expect((await hash("", "utf-8")).body.hex).toBe(
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      );
      expect((await hash("é", "latin1")).body).toMatchObject({ bytes: 1 });
      expect((await hash("é", "UTF8")).body).toMatchObject({ bytes: 2, encoding: "utf-8" });
      expect((await hash("ab", "utf-16le")).body).toMatchObject({ bytes: 4 });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "base64 in the URL alphabet is read with or without its padding (RFC 4648 §5)",
    async () => {
      const fbff = (await hash("-_8", "base64")).body.hex;
      expect((await hash("-_8=", "base64")).body).toMatchObject({ bytes: 2, hex: fbff });
      expect((await hash("-_8==", "base64")).status).toBe(422);
      expect((await hash("-_=", "base64")).status).toBe(422);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each([
    ["é", "ascii"],
    ["€", "latin1"],
    ["abc", "hex"],
    ["zz", "hex"],
    ["a$b=", "base64"],
    ["\ud800", "utf-8"],
  ])(
    "%j is not valid %s: 422 on text",
    async (text, encoding) => {
      const r = await hash(text, encoding);
      expect(r.status).toBe(422);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an unknown encoding is 422 literal_error",
    async () => {
      const res = await postJson("/api/skills/sha256", { text: "a", encoding: "ebcdic" });
      expect((await detailOf(res))[0]).toMatchObject({ loc: ["body", "encoding"], type: "literal_error" });
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("token_count", () => {
  const count = async (text: string, encoding?: string) =>
    (await postJson("/api/skills/token-count", { text, encoding })).json<Record<string, number | string>>();

  it(
    "counts real BPE tokens and echoes the canonical encoding",
    async () => {
      expect(await count("hello world")).toMatchObject({
        encoding: "cl100k_base",
        approx_tokens: 2,
        chars: 11,
        words: 2,
      });
      expect(await count("hello world", "o200k")).toMatchObject({ encoding: "o200k_base", approx_tokens: 2 });
      // "tokenization" is 2 tokens in cl100k_base; a chars/4 guess would say 3.
      expect((await count("tokenization")).approx_tokens).toBe(2);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "counts special-token text as plain text instead of failing",
    async () => {
      const r = await count("<|endoftext|>");
      expect(r.approx_tokens).toBeGreaterThan(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "prices the count with the small model's input price",
    async () => {
      const r = await count("word ".repeat(1000));
      expect(r.usd_hint_gpt_4o_mini).toBeCloseTo((r.approx_tokens as number) * 0.15e-6, 12);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "refuses other encodings",
    async () => {
      const res = await postJson("/api/skills/token-count", { text: "a", encoding: "p50k_base" });
      expect((await detailOf(res))[0]).toMatchObject({ loc: ["body", "encoding"], type: "literal_error" });
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("uuid_mint", () => {
  it(
    "mints count distinct ids of the asked version",
    async () => {
      for (const version of [1, 4]) {
        const res = await postJson("/api/skills/uuid-mint", { count: 32, version });
        const body = await res.json<{ ids: string[]; count: number; version: number }>();
        expect(body.ids).toHaveLength(32);
        expect(new Set(body.ids).size).toBe(32);
        for (const id of body.ids) expect(id[14]).toBe(String(version));
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "defaults to one v4 id for an empty object",
    async () => {
      const body = await (await postJson("/api/skills/uuid-mint", {})).json<{
        ids: string[];
        version: number;
      }>();
      expect(body.version).toBe(4);
      expect(body.ids).toHaveLength(1);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("json_schema_validate", () => {
  const validate = async (instance: unknown, schema: unknown) =>
    (await postJson("/api/skills/json-schema-validate", { instance, schema })).json<{
      valid: boolean;
      errors: { instance_path: string; message: string; keyword: string }[];
      checked: boolean;
    }>();

  it(
    "format ipv4 is a dotted quad without leading zeros, as JSON Schema's test suite has it",
    async () => {
      for (const ip of ["1.1.1.1", "0.0.0.0", "255.255.255.255", "192.168.0.10"])
        expect((await validate(ip, { format: "ipv4" })).valid, ip).toBe(true);
      for (const ip of ["01.1.1.1", "010.001.001.001", "256.1.1.1", "1.1.1", "1.1.1.1\n"])
        expect((await validate(ip, { format: "ipv4" })).valid, ip).toBe(false);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "reports each failure with its instance path",
    async () => {
      const r = await validate(
        { name: 3, tags: ["a", 2] },
        {
          type: "object",
          properties: { name: { type: "string" }, tags: { type: "array", items: { type: "string" } } },
        },
      );
      expect(r.valid).toBe(false);
      const paths = r.errors.map((e) => e.instance_path);
      expect(paths).toContain("#/name");
      expect(paths).toContain("#/tags/1");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "supports 2020-12 and draft 7 keywords",
    async () => {
      expect(
        (await validate([1, "x"], { prefixItems: [{ type: "integer" }, { type: "string" }] })).valid,
      ).toBe(true);
      const d7 = {
        $schema: "http://json-schema.org/draft-07/schema#",
        items: [{ type: "integer" }],
        additionalItems: false,
      };
      expect((await validate([1, 2], d7)).valid).toBe(false);
      expect((await validate("a@b.co", { format: "email" })).valid).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "reports an invalid schema as valid:false, not a 500",
    async () => {
      for (const schema of [
        { type: "strin" },
        42,
        { required: "name" },
        { $ref: "#/missing" },
        { pattern: "(" },
      ]) {
        const r = await validate("x", schema);
        expect(r.valid).toBe(false);
        expect(r.errors[0]?.keyword).toBe("schema");
      }
    },
    SKILL_TEST_TIMEOUT,
  );
});
