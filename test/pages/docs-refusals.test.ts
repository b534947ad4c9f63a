import { expect, it } from "vitest";
import { call } from "../helpers";

const page = async (slug: string) => (await call(`/docs/${slug}`)).text();

it("the docs pages name the 422s a valid body still gets from the page or the answer, and the 502 of an oversized upstream answer", async () => {
  expect(await page("seo")).toMatch(
    /id="content-refusals">A URL that is refused.*not HTML \(url_content_type\).*nested deeper than 512 elements \(value_error, ctx\.max_depth\).*Not charged\./,
  );
  expect(await page("ai-detector")).toMatch(
    /not HTML or plain text \(url_content_type\).*first 8,000 characters/,
  );
  expect(await page("html-clean")).toMatch(
    /id="content-refusals">HTML nested deeper than 512.*output_too_large/,
  );
  expect(await page("slugify")).not.toContain('id="content-refusals"');
  for (const slug of ["research", "osint-graph"])
    expect(await page(slug), slug).toContain("holding more than 500,000 arrays and objects");
});
