import { describe, expect, it } from "vitest";
import { scanJson } from "../../src/http/json-text";
import { call, detailOf, postJson } from "../helpers";

// 422 details as a FastAPI 0.142 / pydantic 2.13 app answers them, item for item (a reviewer ran
// one beside ours). Each case here differed before.

describe("a missing query parameter echoes input null, as FastAPI does", () => {
  it("GET /checkout/success without session_id", async () => {
    const res = await call("/checkout/success");
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([
      { loc: ["query", "session_id"], msg: "Field required", type: "missing", input: null },
    ]);
  });

  it("a missing body field still echoes its parent object, as pydantic does", async () => {
    const res = await postJson("/api/skills/sha256", { encoding: "hex" });
    expect(await detailOf(res)).toContainEqual({
      loc: ["body", "text"],
      msg: "Field required",
      type: "missing",
      input: { encoding: "hex" },
    });
  });
});

describe("bodies with nothing in them", () => {
  const missing = { loc: ["body"], msg: "Field required", type: "missing", input: null };

  it.each([
    ["an empty body", ""],
    ["JSON null", "null"],
    ["JSON null in whitespace", " null\n"],
  ])("%s is 422 missing with input null", async (_, body) => {
    const res = await postJson("/api/skills/uuid-mint", body);
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([missing]);
  });

  // Python's json.loads (Starlette's request.json()) skips the whitespace and finds no value there.
  it.each([
    ["   ", 3],
    ["\n", 1],
    [" \t\r\n ", 5],
    // A byte order mark alone: Python's json.loads drops it (utf-8-sig) and finds no value.
    ["\ufeff", 0],
  ])("whitespace only (%j) is json_invalid at the end of the whitespace", async (body, pos) => {
    const res = await postJson("/api/skills/uuid-mint", body);
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([
      {
        loc: ["body", pos],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: "Expecting value" },
      },
    ]);
  });
});

describe("a string for an integer or boolean is pydantic's *_parsing (still refused: strict)", () => {
  it.each([
    ["uuid-mint", { count: "2" }, ["count"]],
    ["uuid-mint", { count: "abc" }, ["count"]],
    ["keyword-extract", { text: "x", limit: "" }, ["limit"]],
  ])("%s %j", async (slug, body, path) => {
    const res = await postJson(`/api/skills/${slug}`, body);
    expect(res.status).toBe(422);
    const [item] = await detailOf(res);
    expect(item).toEqual({
      loc: ["body", ...path],
      msg: "Input should be a valid integer, unable to parse string as an integer",
      type: "int_parsing",
      input: (body as Record<string, unknown>)[path[0] as string],
    });
  });

  it.each([["yes"], ["true"], [""]])("json-sort reverse %j is bool_parsing", async (value) => {
    const res = await postJson("/api/skills/json-sort", { data: 1, reverse: value });
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([
      {
        loc: ["body", "reverse"],
        msg: "Input should be a valid boolean, unable to interpret input",
        type: "bool_parsing",
        input: value,
      },
    ]);
  });

  it.each([
    ["uuid-mint", { count: true }, "count", "int_type", "Input should be a valid integer"],
    ["uuid-mint", { count: [] }, "count", "int_type", "Input should be a valid integer"],
    ["json-sort", { data: 1, reverse: 1 }, "reverse", "bool_type", "Input should be a valid boolean"],
    ["json-sort", { data: 1, reverse: null }, "reverse", "bool_type", "Input should be a valid boolean"],
  ])("%s %j: other types stay %s", async (slug, body, field, type, msg) => {
    const res = await postJson(`/api/skills/${slug}`, body);
    expect(res.status).toBe(422);
    expect((await detailOf(res))[0]).toMatchObject({ loc: ["body", field], type, msg });
  });
});

describe("the checkout success page takes an empty session id as FastAPI's `session_id: str` does", () => {
  it("?session_id= is the not-found page an unknown id gets, not a 422", async () => {
    const empty = await call("/checkout/success?session_id=", { headers: { accept: "text/html" } });
    const unknown = await call("/checkout/success?session_id=cs_test_unknown", {
      headers: { accept: "text/html" },
    });
    expect(empty.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(empty.headers.get("content-type")).toContain("text/html");
    expect(empty.headers.get("cache-control")).toBe("no-store");
  });
});

describe("a number out of double range is 422 finite_number, never a silent null", () => {
  const finite = (loc: (string | number)[]) => ({
    loc: ["body", ...loc],
    msg: "Input should be a finite number",
    type: "finite_number",
    input: null,
  });

  it("json-sort names each one at its path", async () => {
    const res = await postJson("/api/skills/json-sort", '{"data":{"max":1e400,"min":-1e999}}');
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([finite(["data", "max"]), finite(["data", "min"])]);
  });

  it.each([
    ["json-flatten", '{"data":{"x":1e400}}', ["data", "x"]],
    ["json-flatten", '{"data":[1,[2,1E+309]]}', ["data", 1, 1]],
    ["json-flatten", '{"data":1,"options":{"max_depth":1e400}}', ["options", "max_depth"]],
    ["json-sort", '{"data":-1.5e308000}', ["data"]],
    // A mantissa long enough to pass 1.8e308 with a short exponent.
    ["json-sort", `{"data":{"a":${"9".repeat(250)}.5e99}}`, ["data", "a"]],
    ["uuid-mint", '{"count":1e400}', ["count"]],
    // Where integers are not kept exact, a 400-digit integer is out of range too.
    ["uuid-mint", `{"count":${"1".repeat(400)}}`, ["count"]],
    ["json-schema-validate", '{"schema":{"maximum":1e999},"instance":1}', ["schema", "maximum"]],
    ["json-schema-validate", '{"schema":{},"instance":[1e400]}', ["instance", 0]],
    ["keyword-extract", '{"text":"x","limit":-1e400}', ["limit"]],
  ])("%s %s", async (slug, body, loc) => {
    const res = await postJson(`/api/skills/${slug}`, body);
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([finite(loc)]);
  });

  it.each([
    [
      '{"data":{"x":1e308,"y":-1.7976931348623157e308,"z":1e-400}}',
      { x: 1e308, y: -1.7976931348623157e308, z: 0 },
    ],
    ['{"data":{"s":"1e400"}}', { s: "1e400" }],
  ])("finite numbers and strings that look like big ones pass: %s", async (body, sorted) => {
    const res = await postJson("/api/skills/json-sort", body);
    expect(res.status).toBe(200);
    expect((await res.json<{ sorted: unknown }>()).sorted).toEqual(sorted);
  });

  it("json-sort keeps a 400-digit integer digit for digit (an integer, exact, not a double)", async () => {
    const digits = "1".repeat(400);
    const res = await postJson("/api/skills/json-sort", `{"data":{"n":${digits}}}`);
    expect(res.status).toBe(200);
    expect((await res.json<{ canonical: string }>()).canonical).toBe(`{"n":${digits}}`);
  });

  it.each([
    ['{"x":1e400}', true],
    ['{"x":1E+309}', true],
    ['{"x":-1e-400}', true],
    [`{"x":${"9".repeat(250)}}`, true],
    ["1e400", true],
    ['{"x":1e99,"y":1.5e+9,"z":123456789012345678}', false],
    ['{"s":"1e400"}', false],
  ])("scanJson flags %s as a number that may be out of range: %s", (text, expected) => {
    expect(scanJson(text).mayOverflow).toBe(expected);
  });
});
