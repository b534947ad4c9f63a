import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { netConfig } from "../../src/net/config";
import { fetchApiJson, UpstreamError } from "../../src/net/fetcher";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * osint_graph and research read Wikidata and Wikipedia through fetchApiJson (up to 8 MiB): the
 * answer is checked as every JSON body is (scanJson) before it is parsed.
 */
const API = "https://api.example/w/api.php";

function serve(text: string) {
  vi.spyOn(globalThis, "fetch").mockImplementation(
    async () => new Response(text, { headers: { "content-type": "application/json" } }),
  );
}
const read = () => fetchApiJson(API, { action: "query" }, netConfig(env), "Wikipedia");

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a configured API's JSON answer", () => {
  it(
    "of more than 500,000 arrays and objects is a 502, not parsed",
    async () => {
      const parse = vi.spyOn(JSON, "parse");
      serve(`{"query":[${"{},".repeat(500_000)}{}]}`);
      const err = (await read().catch((e) => e)) as UpstreamError;
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err).toMatchObject({ status: 502 });
      expect(err.message).toMatch(
        /^Wikipedia answered JSON nested deeper than 200 levels or of more than 500000/,
      );
      expect(parse).not.toHaveBeenCalled();
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "nested deeper than 200 levels is a 502",
    async () => {
      serve(`{"query":${"[".repeat(250)}${"]".repeat(250)}}`);
      const err = (await read().catch((e) => e)) as UpstreamError;
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err).toMatchObject({ status: 502 });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "of ordinary shape is read as before",
    async () => {
      serve('{"query":{"search":[{"title":"A","pageid":1}]}}');
      expect(await read()).toEqual({ query: { search: [{ title: "A", pageid: 1 }] } });
    },
    SKILL_TEST_TIMEOUT,
  );
});
