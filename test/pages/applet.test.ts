import type { Element } from "domhandler";
import { DomUtils, parseDocument } from "htmlparser2";
import { describe, expect, it } from "vitest";
import { call } from "../helpers";

/** The applet's <form id="applet">…</form>, as served. */
async function appletForm() {
  const html = await (await call("/applet", { headers: { accept: "text/html" } })).text();
  const form = /<form id="applet"[^>]*>[\s\S]*?<\/form>/.exec(html)?.[0];
  if (!form) throw new Error("no applet form");
  return form;
}

describe("the applet's form, before its script runs", () => {
  it("has no named control, so a native submission puts neither the key nor the body in a URL", async () => {
    const form = await appletForm();
    // What a browser would serialise: every named input, select and textarea (none may exist).
    const named = [...form.matchAll(/<(input|select|textarea|button)\b[^>]*\sname="([^"]*)"/g)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
    expect(named).toEqual([]);
    expect(form).toMatch(/<input id="key" type="password"/);
    expect(form).not.toMatch(/\saction="[^"]*[?&]/);
  });

  it("renders Send disabled (applet.js enables it), so Enter before the script runs submits nothing", async () => {
    const form = await appletForm();
    expect(/<button id="send"[^>]*>/.exec(form)?.[0]).toContain("disabled");
  });
});

describe("what the applet announces", () => {
  it("only its short status lines are live regions, not the answer (a screen reader read ~5 KB of JSON aloud)", async () => {
    const html = await (await call("/applet", { headers: { accept: "text/html" } })).text();
    const doc = parseDocument(html);
    const live = (el: Element) =>
      "aria-live" in el.attribs || ["status", "alert", "log"].includes(el.attribs.role ?? "");
    const regions = DomUtils.findAll(live, doc.children);
    expect(regions.map((el) => el.attribs.id)).toEqual(["body-error", "status", "credits", "pay-status"]);
    for (const el of regions) {
      // Short lines, and none inside another live region (which announced #pay-status twice).
      expect(el.name, el.attribs.id).toBe("p");
      for (let up = el.parent; up && "attribs" in up; up = up.parent)
        expect(live(up as Element), `${el.attribs.id} inside a live region`).toBe(false);
    }
    const output = DomUtils.getElementById("output", doc.children);
    expect(output?.name).toBe("code");
    for (let up = output?.parent; up && "attribs" in up; up = up.parent)
      expect(live(up as Element), "the raw answer inside a live region").toBe(false);
  });
});
