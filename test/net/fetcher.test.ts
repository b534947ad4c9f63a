import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { netConfig } from "../../src/net/config";
import {
  ApiRefusedInput,
  declaredInMeta,
  decodeBody,
  fetchApiJson,
  fetchPublic,
  guardUrl,
  isSearchTextError,
  UpstreamError,
  UrlRefused,
} from "../../src/net/fetcher";
import { parseIPv4, parseIPv6, reservedIPv4, reservedIPv6 } from "../../src/net/ip-ranges";
import { FIXTURE } from "../fixtures/upstream-requests";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "../skills/timeouts";
import { HOSTILE } from "./hostile-urls";

const cfg = netConfig(env);

async function refusal(url: string): Promise<string> {
  try {
    await fetchPublic(url, cfg, "text/html");
  } catch (e) {
    if (e instanceof UrlRefused) return e.reason;
    throw e;
  }
  throw new Error(`${url} was fetched`);
}

describe("SSRF guard of the shared fetcher", () => {
  it(
    "the table is large enough",
    () => {
      expect(HOSTILE.length).toBeGreaterThanOrEqual(30);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each(HOSTILE)(
    "refuses %s",
    async (url) => {
      const reason = await refusal(url);
      expect(reason.length).toBeGreaterThan(5);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "says why",
    async () => {
      expect(await refusal("http://0x7f000001/")).toMatch(/127\.0\.0\.1.*loopback/);
      expect(await refusal("http://[::ffff:a9fe:a9fe]/")).toMatch(/IPv4-mapped.*169\.254\.169\.254/);
      expect(await refusal("http://localtest.me/")).toMatch(/resolves to 127\.0\.0\.1/);
      expect(await refusal("http://internal-v6.example.net/")).toMatch(/fd12:3456::1.*unique local/);
      expect(await refusal("http://cname.example.net/")).toMatch(/192\.168\.10\.10/);
      expect(await refusal("http://mixed.example.net/")).toMatch(/10\.1\.1\.1/);
      expect(await refusal(`${FIXTURE}/pages/redirect-loopback`)).toMatch(
        /^redirect to http:\/\/127\.0\.0\.1:9\/admin refused/,
      );
      expect(await refusal(`${FIXTURE}/pages/redirect-loop`)).toMatch(/more than 5 redirects/);
      expect(await refusal("file:///etc/passwd")).toMatch(/scheme file/);
      expect(await refusal("http://user:pass@example.com/")).toMatch(/userinfo/);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "refuses the fixture host itself when it is not allow-listed (an empty list allows nothing)",
    async () => {
      const strict = netConfig({ ...env, FETCH_ALLOW_HOSTS: "" });
      expect(strict.allowHosts.size).toBe(0);
      await expect(fetchPublic(`${FIXTURE}/pages/good.html`, strict, "text/html")).rejects.toThrow(
        /loopback/,
      );
      const unset = netConfig({ ...env, FETCH_ALLOW_HOSTS: undefined as unknown as string });
      expect(unset.allowHosts.size).toBe(0);
      await expect(fetchPublic(`${FIXTURE}/pages/good.html`, unset, "text/html")).rejects.toBeInstanceOf(
        UrlRefused,
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the allow-list is exact host:port: the same address on another port is refused",
    async () => {
      const port = Number(new URL(FIXTURE).port);
      await expect(refusal(`http://127.0.0.1:${port + 1}/`)).resolves.toMatch(/loopback/);
      const doc = await fetchPublic(`${FIXTURE}/pages/redirect-good`, cfg, "text/html");
      expect(doc).toMatchObject({ url: `${FIXTURE}/pages/good.html`, status: 200, redirects: 1 });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "lets a name through only when every DoH answer is public",
    async () => {
      const signal = AbortSignal.timeout(2000);
      await expect(guardUrl(new URL("https://public.example.net/x"), cfg, signal)).resolves.toBeUndefined();
      await expect(guardUrl(new URL("https://noaddress.example.net/"), cfg, signal)).rejects.toThrow(
        /no A or AAAA/,
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a failing resolver is a 502, not a pass",
    async () => {
      const err = await fetchPublic("http://dohfail.example.net/", cfg, "text/html").catch((e) => e);
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err.status).toBe(502);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "with DoH off, literal checks still refuse",
    async () => {
      const noDns = netConfig({ ...env, DOH_RESOLVER: "off" });
      expect(noDns.doh).toBeNull();
      await expect(fetchPublic("http://[::1]/", noDns, "text/html")).rejects.toBeInstanceOf(UrlRefused);
      await expect(
        fetchPublic("http://metadata.google.internal/", noDns, "text/html"),
      ).rejects.toBeInstanceOf(UrlRefused);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "caps the body while streaming and times out slow pages",
    async () => {
      const big = await fetchPublic(`${FIXTURE}/pages/huge`, cfg, "text/html").catch((e) => e);
      expect(big).toBeInstanceOf(UpstreamError);
      expect(big.message).toMatch(/larger than 2048 KiB/);
      const slow = await fetchPublic(`${FIXTURE}/pages/upstream-slow`, cfg, "text/html").catch((e) => e);
      expect(slow).toBeInstanceOf(UpstreamError);
      expect(slow.status).toBe(504);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("hostile URLs through the seo endpoint", () => {
  it.each(HOSTILE)(
    "%s is 422 on body.url",
    async (url) => {
      const res = await postJson("/api/skills/seo", { url, keywords: null });
      expect(res.status).toBe(422);
      const [item, ...rest] = await detailOf(res);
      expect(rest).toEqual([]);
      expect(item).toMatchObject({ loc: ["body", "url"], type: "url_refused", input: url });
      expect(item?.msg).toMatch(/^URL refused: /);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("ip ranges", () => {
  it.each([
    ["::1", [0, 0, 0, 0, 0, 0, 0, 1]],
    ["::", [0, 0, 0, 0, 0, 0, 0, 0]],
    ["::ffff:127.0.0.1", [0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]],
    ["2001:db8::8:800:200c:417a", [0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a]],
    ["fe80::1:2", [0xfe80, 0, 0, 0, 0, 0, 1, 2]],
  ])(
    "parses %s",
    (text, groups) => {
      expect(parseIPv6(text)).toEqual(groups);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each(["1::2::3", "12345::", "::g", "1:2:3:4:5:6:7:8:9", "fe80::1%25eth0", "::1.2.3.256"])(
    "rejects %s",
    (text) => {
      expect(parseIPv6(text)).toBeNull();
    },
  );

  it(
    "reads WHATWG IPv4 forms",
    () => {
      for (const form of ["127.0.0.1", "127.1", "0x7f.1", "2130706433", "017700000001", "0x7f000001"]) {
        expect(parseIPv4(form), form).toBe(0x7f000001);
      }
      expect(parseIPv4("256.0.0.1")).toBeNull();
      expect(parseIPv4("1.2.3.4.5")).toBeNull();
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "public addresses pass",
    () => {
      expect(reservedIPv4(parseIPv4("8.8.8.8") as number)).toBeNull();
      expect(reservedIPv4(parseIPv4("93.184.216.34") as number)).toBeNull();
      expect(reservedIPv6(parseIPv6("2606:4700:4700::1111") as number[])).toBeNull();
      expect(reservedIPv6(parseIPv6("2a00:1450:4001:82a::200e") as number[])).toBeNull();
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("whose fault a failed page fetch is (the published figures leave the caller's own out)", () => {
  const DOH = "https://doh.test/dns-query";
  const stub = (dohDelayMs: number, dnsStatus = 0) => {
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      const url = new URL(req.url);
      if (url.origin === new URL(DOH).origin) {
        await new Promise((r) => setTimeout(r, dohDelayMs));
        const type = url.searchParams.get("type") === "A" ? 1 : 28;
        return Response.json({
          Status: dnsStatus,
          Answer: dnsStatus === 0 && type === 1 ? [{ type: 1, data: "93.184.216.34" }] : [],
        });
      }
      if (url.hostname === "page.example") {
        // A page that never answers: only the deadline ends the fetch.
        return new Promise<Response>((_, reject) =>
          req.signal.addEventListener("abort", () => reject(req.signal.reason)),
        );
      }
      return real(input, init);
    });
  };
  const failure = async (c: ReturnType<typeof netConfig>) =>
    (await fetchPublic("https://page.example/", c, "text/html").catch((e) => e)) as UpstreamError;
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("a page that times out after a quick DNS check is the caller's target", async () => {
    stub(5);
    const err = await failure({ ...cfg, doh: DOH, timeoutMs: 400 });
    expect(err).toBeInstanceOf(UpstreamError);
    expect([err.status, err.target]).toEqual([504, true]);
  });

  it("one that times out because our resolver took most of the deadline is ours", async () => {
    stub(300);
    const err = await failure({ ...cfg, doh: DOH, timeoutMs: 400 });
    expect([err.status, err.target]).toEqual([504, false]);
  });

  it("DNS SERVFAIL is the name's own fault; REFUSED is our resolver's", async () => {
    stub(1, 2);
    expect((await failure({ ...cfg, doh: DOH, timeoutMs: 2000 })).target).toBe(true);
    vi.restoreAllMocks();
    stub(1, 5);
    expect((await failure({ ...cfg, doh: DOH, timeoutMs: 2000 })).target).toBe(false);
  });
});

describe("MediaWiki errors (HTTP 200 with {error}) of the configured APIs", () => {
  const search = (params: Record<string, string>) =>
    fetchApiJson(
      cfg.wikipediaApi,
      { action: "query", list: "search", format: "json", ...params },
      cfg,
      "Wikipedia",
      { callerFault: isSearchTextError },
    ).then(
      () => null,
      (e: unknown) => e as ApiRefusedInput,
    );

  it(
    "the codes a search's own text causes are the caller's: ApiRefusedInput, a target fault",
    async () => {
      for (const [srsearch, code] of [
        ["", "missingparam"],
        ["insource:/[/", "cirrussearch-regex-syntax-error"],
      ]) {
        const err = await search({ srsearch: srsearch as string });
        expect(err).toBeInstanceOf(ApiRefusedInput);
        expect([err?.code, err?.status, err?.target]).toEqual([code, 502, true]);
      }
      expect(
        ["cirrussearch-parse-error", "cirrussearch-regex-too-complex-error"].every(isSearchTextError),
      ).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "every other code stays the upstream's 502 (a value we chose, a busy or failing backend)",
    async () => {
      const err = await search({ srsearch: "x", action: "nope" });
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err).not.toBeInstanceOf(ApiRefusedInput);
      expect([err?.status, err?.target]).toEqual([502, false]);
      expect(err?.message).toMatch(/^Wikipedia reported an error: /);
      for (const code of [
        "badvalue",
        "cirrussearch-backend-error",
        "cirrussearch-too-busy-error",
        "cirrussearch-regex-too-busy-error",
        "cirrussearch-query-too-long",
      ])
        expect(isSearchTextError(code), code).toBe(false);
      // Without callerFault (wbgetentities, extracts) even missingparam is the upstream's.
      const bare = await fetchApiJson(
        cfg.wikipediaApi,
        { action: "query", list: "search", format: "json" },
        cfg,
        "W",
      ).then(
        () => null,
        (e: unknown) => e as UpstreamError,
      );
      expect(bare).not.toBeInstanceOf(ApiRefusedInput);
      expect(bare?.target).toBe(false);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("the encoding of a fetched page (WHATWG: BOM, header charset, <meta> prescan, UTF-8)", () => {
  const ascii = (html: string) => new TextEncoder().encode(html);

  it.each([
    ['<meta charset="windows-1252">', "windows-1252"],
    ["<META CHARSET=Windows-1252>", "windows-1252"],
    ["<meta charset = ' latin1 '>", "windows-1252"],
    ['<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">', "shift_jis"],
    ["<meta content='text/html;charset=\"euc-jp\"' http-equiv=content-type>", "euc-jp"],
    ['<meta http-equiv="content-type" content="text/html; charset=iso-8859-2; x=y">', "iso-8859-2"],
    ['<meta charset="utf-16">', "utf-8"],
    ['<meta charset="UTF-16BE">', "utf-8"],
    ['<meta charset="x-user-defined">', "windows-1252"],
    ['<meta charset="gbk"><meta charset="windows-1252">', "gbk"],
    ['<meta charset="gbk" charset="windows-1252">', "gbk"],
    ['<!--> <meta charset="gbk">', "gbk"],
    ['<html lang="en"><head><title>x</title><meta/charset="koi8-r">', "koi8-r"],
    ['<meta charset="no-such-encoding">', null],
    ['<meta content="text/html; charset=gbk">', null],
    ['<meta name="description" content="charset=gbk">', null],
    ['<!-- <meta charset="gbk"> -->', null],
    ["<div title='<meta charset=\"gbk\">'>", null],
    [`${" ".repeat(1024)}<meta charset="gbk">`, null],
    ['<meta charset="windows-12', null],
    ["<p>no declaration</p>", null],
  ])("%s → %s", async (html, encoding) => {
    expect(await declaredInMeta(ascii(html))).toBe(encoding);
  });

  it("a byte order mark wins over the header, the header over the <meta>, and only HTML is prescanned", async () => {
    const meta = '<meta charset="windows-1252">caf\u00e9';
    const latin = Uint8Array.from([...meta].map((c) => c.charCodeAt(0)));
    expect(await decodeBody(latin, "text/html", "html")).toBe(meta);
    expect(await decodeBody(latin, "text/plain", null)).toBe('<meta charset="windows-1252">caf\uFFFD');
    const utf8 = ascii(meta);
    expect(await decodeBody(utf8, 'text/html; charset="UTF-8"', "html")).toBe(meta);
    // A label no encoding has is no declaration: the <meta> decides.
    expect(await decodeBody(latin, "text/html; charset=bogus", "html")).toBe(meta);
    const bom = Uint8Array.from([0xef, 0xbb, 0xbf, ...utf8]);
    expect(await decodeBody(bom, "text/html; charset=windows-1252", "html")).toBe(meta);
    const be = Uint8Array.from([
      0xfe,
      0xff,
      ...[..."é"].flatMap((c) => [c.charCodeAt(0) >> 8, c.charCodeAt(0) & 255]),
    ]);
    expect(await decodeBody(be, "text/html; charset=utf-8", "html")).toBe("é");
    expect(await decodeBody(ascii("plain é"), "", "html")).toBe("plain é");
    // XHTML declares its encoding in the XML declaration, not a <meta>.
    const xml = '<?xml version="1.0" encoding="windows-1252"?><p>caf\u00e9</p>';
    const xmlBytes = Uint8Array.from([...xml].map((c) => c.charCodeAt(0)));
    expect(await decodeBody(xmlBytes, "application/xhtml+xml", "xml")).toBe(xml);
    expect(await decodeBody(xmlBytes, "application/xhtml+xml", null)).toContain("caf\uFFFD");
  });
});
