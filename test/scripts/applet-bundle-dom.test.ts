import { readFileSync } from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The applet as it ships (static/assets/applet.js, which test/e2e/applet-bundle.test.ts keeps equal
 * to src/browser), run in Node against a stand-in of the page's elements: what it shows of an
 * answer, and the checkout body its "Buy calls by card" button sends. The page itself is proven in a
 * real browser by test/e2e/pages.test.ts; this one runs in every unit test run.
 */
const bundle = readFileSync(path.resolve(import.meta.dirname, "../../static/assets/applet.js"), "utf8");

type Listener = (event: { preventDefault(): void }) => unknown;
class FakeElement {
  textContent = "";
  hidden = false;
  disabled = false;
  open = false;
  className = "";
  value = "";
  dataset: Record<string, string> = {};
  selectedOptions: { dataset: Record<string, string> }[] = [];
  options: { value: string; dataset: Record<string, string> }[] = [];
  attributes: Record<string, string> = {};
  listeners: Record<string, Listener[]> = {};
  addEventListener(type: string, fn: Listener) {
    this.listeners[type] = [...(this.listeners[type] ?? []), fn];
  }
  setAttribute(name: string, value: string) {
    this.attributes[name] = value;
  }
  focus() {}
  /** Runs the element's listeners for `type` and waits for what they started. */
  async fire(type: string) {
    await Promise.all((this.listeners[type] ?? []).map((fn) => fn({ preventDefault() {} })));
  }
}

const elements = new Map<string, FakeElement>();
const el = (id: string) => {
  let e = elements.get(id);
  if (!e) {
    e = new FakeElement();
    elements.set(id, e);
  }
  return e;
};
/** What the applet sent, and what the stand-in server answers. */
const sent: { url: string; body: string }[] = [];
let answer: () => Response = () => new Response("{}");
const assigned: string[] = [];
const saved: Record<string, unknown> = {};
/** The tab's sessionStorage, holding the draft a cancelled checkout left (the way back from Stripe). */
const storage = new Map<string, string>([
  ["applet-draft", JSON.stringify({ endpoint: "/api/skills/json-sort", body: '{"data": {"kept": 1}}' })],
]);
let bodyOnLoad = "";

/** The select as the page renders it: its first skill chosen, the draft's skill to be chosen by the script. */
function renderSkillSelect() {
  el("skill").value = "/api/skills/sha256";
  el("skill").selectedOptions = [{ dataset: { skillId: "json_sort", pack: "Buy 170 calls for $0.51" } }];
  el("skill").options = [
    { value: "/api/skills/sha256", dataset: { skillId: "sha256", example: '{"text": "a"}' } },
    { value: "/api/skills/json-sort", dataset: { skillId: "json_sort", example: '{"data": {}}' } },
  ];
}

beforeAll(() => {
  renderSkillSelect();
  const globals: Record<string, unknown> = {
    document: { getElementById: el },
    window: { location: { search: "?skill=json_sort", assign: (url: string) => assigned.push(url) } },
    sessionStorage: {
      getItem: (k: string) => storage.get(k) ?? null,
      setItem: (k: string, v: string) => storage.set(k, v),
      removeItem: (k: string) => storage.delete(k),
    },
    fetch: async (url: string, init: { body: string }) => {
      sent.push({ url, body: init.body });
      return answer();
    },
  };
  for (const [name, value] of Object.entries(globals)) {
    saved[name] = (globalThis as Record<string, unknown>)[name];
    (globalThis as Record<string, unknown>)[name] = value;
  }
  // In this realm's global scope, as a <script> runs.
  vm.runInThisContext(bundle, { filename: "applet.js" });
  bodyOnLoad = el("body").value;
});
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) (globalThis as Record<string, unknown>)[name] = value;
});

describe("the applet as built", () => {
  it("opened as /applet?skill=… after a cancelled checkout, puts back the body typed before it, once", () => {
    expect(el("skill").value).toBe("/api/skills/json-sort");
    expect(bodyOnLoad).toBe('{"data": {"kept": 1}}');
    expect(storage.has("applet-draft")).toBe(false);
  });

  it("shows a JSON answer indented with its digits and key order as the server wrote them", async () => {
    const body =
      '{"skill":"json_sort","ok":true,"sorted":{"big":12345678901234567890,"b":1,"a":3,"10":2,"x":1.50,"e":1e400}}';
    answer = () => new Response(body, { status: 200, headers: { "content-type": "application/json" } });
    el("body").value = '{"data":{"10":2,"a":3}}';
    await el("applet").fire("submit");
    expect(sent.at(-1)?.url).toBe("/api/skills/json-sort");
    expect(el("output").textContent).toBe(
      [
        "{",
        '  "skill": "json_sort",',
        '  "ok": true,',
        '  "sorted": {',
        '    "big": 12345678901234567890,',
        '    "b": 1,',
        '    "a": 3,',
        '    "10": 2,',
        '    "x": 1.50,',
        '    "e": 1e400',
        "  }",
        "}",
      ].join("\n"),
    );
    expect(el("status").textContent).toMatch(/^200/);
  });

  it("shows an answer that is not JSON as it came", async () => {
    answer = () => new Response("<h1>Bad gateway</h1>", { status: 502 });
    await el("applet").fire("submit");
    expect(el("output").textContent).toBe("<h1>Bad gateway</h1>");
  });

  it("sends the first-call payload to the checkout as typed: long integers, 1.50 and 1e400 unchanged", async () => {
    const typed = '{"data": {"b": 12345678901234567890, "a": 1.50, "c": 1e400}}';
    el("body").value = typed;
    answer = () =>
      Response.json({ checkout_url: "https://checkout.stripe.test/c/1", calls: 170, amount_usd: 0.51 });
    await el("buy").fire("click");
    expect(sent.at(-1)).toEqual({
      url: "/api/cardpay/checkout",
      body: `{"skill_id":"json_sort","payload":${typed}}`,
    });
    expect(JSON.parse(sent.at(-1)?.body ?? "")).toMatchObject({ skill_id: "json_sort" });
    expect(assigned.at(-1)).toBe("https://checkout.stripe.test/c/1");
    // Kept for the way back, should the buyer cancel on Stripe's page.
    expect(JSON.parse(storage.get("applet-draft") ?? "null")).toEqual({
      endpoint: "/api/skills/json-sort",
      body: typed,
    });
  });

  it("buys without a payload when the body is not a JSON object", async () => {
    for (const typed of ["[1, 2]", "{not json", "  "]) {
      el("body").value = typed;
      await el("buy").fire("click");
      expect(sent.at(-1)?.body).toBe('{"skill_id":"json_sort"}');
    }
  });

  it("a draft left for another skill is not put back: the linked skill shows its example", () => {
    // A fresh page (the same ?skill=json_sort link), with a draft kept for sha256.
    elements.clear();
    renderSkillSelect();
    storage.set("applet-draft", JSON.stringify({ endpoint: "/api/skills/sha256", body: '{"text": "mine"}' }));
    vm.runInThisContext(bundle, { filename: "applet.js" });
    expect(el("skill").value).toBe("/api/skills/json-sort");
    expect(el("body").value).toBe('{"data": {}}');
  });
});
