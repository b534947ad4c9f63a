import { describe, expect, it } from "vitest";
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
