import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InputError } from "../../src/http/validation";
import { normalizeUrl, trimTrailingDots } from "../../src/skills/url-normalize";

/**
 * Laws of url_normalize over hostile inputs (IDN, IPv4/IPv6 spellings, escapes, dot segments,
 * repeated and empty keys, backslashes, userinfo, odd ports), and the runtime's URL parser against
 * cases of the Web Platform Tests' url/resources/urltestdata.json (WHATWG's reference answers).
 */

type Result = ReturnType<typeof normalizeUrl>;

/** The answer, or the 422 reason; anything else thrown is a bug and fails the test. */
function attempt(url: string): Result | string {
  try {
    return normalizeUrl(url);
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    return e.items[0]?.type ?? "?";
  }
}

const components = ({ stripped_tracking: _s, ...rest }: Result) => rest;

/** `query` as [key, value] pairs in order (a repeated key once per value). */
const pairs = (query: Result["query"]) =>
  Object.entries(query).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => [k, x]));

const piece = <T>(...xs: T[]) => fc.constantFrom(...xs);
const hostileUrl = fc
  .tuple(
    piece(
      "http://",
      "https://",
      "HTTP://",
      "",
      "http:\\\\",
      "https:/",
      " https://",
      "ht\ttp://",
      "\u0001http://",
    ),
    piece("", "u@", "u:p@", ":@", "@", "a%40b:c@", "us er:p%3A@"),
    fc.oneof(
      fc.domain(),
      piece(
        "Bücher.example",
        "ＥＸＡＭＰＬＥ.com",
        "xn--bcher-kva.example",
        "faß.de",
        "ex\u00ad.com",
        "%65x.com",
        "127.1",
        "0x7f.1",
        "0177.0.0.1",
        "4294967295",
        "0x..",
        "1.2.3.4..",
        "1.2.3.256..",
        "999999999999..",
        "[::FFFF:127.0.0.1]",
        "[0:0::1]",
        "ex.com.",
        "ex.com...",
        `${"a".repeat(63)}.com`,
        `${"b".repeat(70)}.example`,
        "a..b",
      ),
    ),
    piece("", ":", ":80", ":443", ":0", ":080", ":00443", ":65535", ":8080"),
    fc.array(
      fc.oneof(
        fc.webSegment(),
        piece(".", "..", "%2e", "%2E%2e", ".%2e", "a", "%c3%a9", "é", "a b", "%zz", "", "😀", "%2F", "a\\b"),
      ),
      { maxLength: 5 },
    ),
    fc.array(
      fc.tuple(
        piece(
          "",
          "a",
          "A",
          "b",
          "utm_source",
          "UTM_Campaign",
          "gclid",
          "%61",
          "a+b",
          "a%20b",
          "?",
          "é",
          "%F0%9F",
        ),
        piece("", "=", "=1", "=x+y", "=x%20y", "=%2B", "=%", "=%zz", "=a=b", "=%F0%9F", "=😀", "=%26"),
      ),
      { maxLength: 6 },
    ),
    piece("&", "&&", ";"),
    piece("", "#", "#x?y=1&z"),
  )
  .map(([scheme, user, host, port, path, query, sep, hash]) => {
    const q = query.map(([k, v]) => k + v).join(sep);
    return `${scheme}${user}${host}${port}/${path.join("/")}${query.length ? `?${q}` : ""}${hash}`;
  });

describe("url_normalize laws", () => {
  it("a canonical URL normalizes to itself, component for component, and WHATWG reads it as the components say", () => {
    let accepted = 0;
    fc.assert(
      fc.property(hostileUrl, (url) => {
        const once = attempt(url);
        if (typeof once === "string") {
          expect(["url_parsing", "url_scheme"]).toContain(once);
          return;
        }
        accepted++;
        const twice = attempt(once.canonical);
        expect(typeof twice, once.canonical).toBe("object");
        expect(components(twice as Result)).toEqual(components(once));
        expect((twice as Result).stripped_tracking).toBe(false);

        const parsed = new URL(once.canonical);
        expect(parsed.protocol).toBe("https:");
        expect(parsed.hash).toBe("");
        expect(parsed.hostname).toBe(once.host);
        expect(trimTrailingDots(once.host)).toBe(once.host);
        expect(parsed.port).toBe(once.port === null ? "" : String(once.port));
        expect(parsed.pathname).toBe(once.path);
        expect([...parsed.searchParams]).toEqual(pairs(once.query));
      }),
      { numRuns: 3000, seed: 7 },
    );
    // Most of these inputs are URLs: the law is not checked on refusals only.
    expect(accepted).toBeGreaterThan(2000);
  });

  it("trims every trailing host dot or refuses the host: never a canonical URL that keeps them", () => {
    // "1.2.3.256.." is a domain to WHATWG, "1.2.3.256" an IPv4 address that does not parse; the
    // hostname setter refused it silently and the dots stayed in `canonical` and `host`.
    for (const url of ["http://1.2.3.256../", "http://999999999999../x", "https://0x100000000../"]) {
      expect(attempt(url), url).toBe("url_parsing");
      expect(() => normalizeUrl(url)).toThrow("Input should be a valid URL, invalid IPv4 address");
    }
    // Trimmed hosts that parse are read as WHATWG reads them without the dots.
    expect(normalizeUrl("http://1.2.3.4../x").canonical).toBe("https://1.2.3.4/x");
    expect(normalizeUrl("http://127.1.../").host).toBe("127.0.0.1");
    expect(normalizeUrl("http://Ex.COM..:8080/").canonical).toBe("https://ex.com:8080/");
  });
});

/**
 * Cases of WPT's url/resources/urltestdata.json (web-platform-tests/wpt, commit 04f8022e) for
 * absolute http(s) inputs: [input, expected href] or [input, null] for a parser failure.
 */
const WPT: [string, string | null][] = [
  ["http://example\t.\norg", "http://example.org/"],
  ["http://user:pass@foo:21/bar;par?b#c", "http://user:pass@foo:21/bar;par?b#c"],
  ["https://test:@test", "https://test@test/"],
  ["https://:@test", "https://test/"],
  ["http://f:21/ b ? d # e ", "http://f:21/%20b%20?%20d%20#%20e"],
  ["http://f:/c", "http://f/c"],
  ["http://f:0/c", "http://f:0/c"],
  ["http://f:00000000000000/c", "http://f:0/c"],
  ["http://f:00000000000000000000080/c", "http://f/c"],
  ["http://f:\n/c", "http://f/c"],
  ["http://f:b/c", null],
  ["http://f: /c", null],
  ["http://f:fifty-two/c", null],
  ["http://f:999999/c", null],
  ["http://f: 21 / b ? d # e ", null],
  ["http://a:b@c:29/d", "http://a:b@c:29/d"],
  ["http://&a:foo(b]c@d:2/", "http://&a:foo(b%5Dc@d:2/"],
  ["http://::@c@d:2", "http://:%3A%40c@d:2/"],
  ["http://foo.com:b@d/", "http://foo.com:b@d/"],
  ["http://foo.com/\\@", "http://foo.com//@"],
  ["http://[::1.2.]", null],
  ["http://[::1.]", null],
  ["http://foo:💩@example.com/bar", "http://foo:%F0%9F%92%A9@example.com/bar"],
  ["https://@test@test@example:800/", "https://%40test%40test@example:800/"],
  ["https://@@@example", "https://%40%40@example/"],
  ["http://`{}:`{}@h/`{}?`{}", "http://%60%7B%7D:%60%7B%7D@h/%60%7B%7D?`{}"],
  ["http://host/?'", "http://host/?%27"],
  ...[..."\u0000\u0001\u0008\u000b\u000c\u000e\u001f <>[]^|\u007f"].map((c): [string, null] => [
    `http://a${c}b/`,
    null,
  ]),
  ["http://a%b/", null],
  ["http://ho\tst/", "http://host/"],
  ["http://ho\nst/", "http://host/"],
  ["http://ho\rst/", "http://host/"],
  ...[
    "00",
    "01",
    "09",
    "0A",
    "1F",
    "20",
    "23",
    "25",
    "2F",
    "3A",
    "3C",
    "3E",
    "3F",
    "40",
    "5B",
    "5C",
    "5D",
    "7C",
    "7F",
  ].map((h): [string, null] => [`http://ho%${h}st/`, null]),
  ["http://!\"$&'()*+,-.;=_`{}~/", "http://!\"$&'()*+,-.;=_`{}~/"],
  ["https://example.com%80/", null],
  ["https://example.com%A0/", null],
  ["https://%e2%98%83", "https://xn--n3h/"],
  ["http://127.0.0.1:10100/relative_import.html", "http://127.0.0.1:10100/relative_import.html"],
  ["http://facebook.com/?foo=%7B%22abc%22", "http://facebook.com/?foo=%7B%22abc%22"],
  ["https://localhost:3000/jqueryui@1.2.3", "https://localhost:3000/jqueryui@1.2.3"],
  [
    "h\tt\nt\rp://h\to\ns\rt:9\t0\n0\r0/p\ta\nt\rh?q\tu\ne\rry#f\tr\na\rg",
    "http://host:9000/path?query#frag",
  ],
  ["http://foo.bar/baz?qux#foo\bbar", "http://foo.bar/baz?qux#foo%08bar"],
  ['http://foo.bar/baz?qux#foo"bar', "http://foo.bar/baz?qux#foo%22bar"],
  ["http://0x7f.0.0.0x7g", "http://0x7f.0.0.0x7g/"],
  ["http://0X7F.0.0.0X7G", "http://0x7f.0.0.0x7g/"],
  ["http://[::127.0.0.0.1]", null],
  ["http://[0:1:0:1:0:1:0:1]", "http://[0:1:0:1:0:1:0:1]/"],
  ["http://[1:0:1:0:1:0:1:0]", "http://[1:0:1:0:1:0:1:0]/"],
  ["http://example.org/test?\u0022", "http://example.org/test?%22"],
  ["http://example.org/test?\u0023", "http://example.org/test?#"],
  ["http://example.org/test?\u003C", "http://example.org/test?%3C"],
  ["http://example.org/test?\u2323", "http://example.org/test?%E2%8C%A3"],
  ["http://example.org/test?%23%23", "http://example.org/test?%23%23"],
  ["http://example.org/test?%GH", "http://example.org/test?%GH"],
  ["http://example.org/test?a#%EF", "http://example.org/test?a#%EF"],
  ["http://example.org/test?a#b\u0000c", "http://example.org/test?a#b%00c"],
  [
    "https://www.example.com/path{\u007Fpath.html?query'\u007F=query#fragment<\u007Ffragment",
    "https://www.example.com/path%7B%7Fpath.html?query%27%7F=query#fragment%3C%7Ffragment",
  ],
  ["https://user:pass[\u007F@foo/bar", "https://user:pass%5B%7F@foo/bar"],
  [
    "http://example.com/\ud800\ud801\udffe\udfff\ufdd0\ufdcf\ufdef\ufdf0\ufffe\uffff?\ud800\ud801\udffe\udfff\ufdd0\ufdcf\ufdef\ufdf0\ufffe\uffff",
    "http://example.com/%EF%BF%BD%F0%90%9F%BE%EF%BF%BD%EF%B7%90%EF%B7%8F%EF%B7%AF%EF%B7%B0%EF%BF%BE%EF%BF%BF?%EF%BF%BD%F0%90%9F%BE%EF%BF%BD%EF%B7%90%EF%B7%8F%EF%B7%AF%EF%B7%B0%EF%BF%BE%EF%BF%BF",
  ],
];

describe("the runtime's URL parser against WPT's urltestdata.json", () => {
  it(`gives WPT's href for ${WPT.length} http(s) cases, and url_normalize reads each as WPT does`, () => {
    for (const [input, href] of WPT) {
      const what = JSON.stringify(input);
      expect(URL.canParse(input) ? new URL(input).href : null, what).toBe(href);
      const ours = attempt(input);
      // WPT writes a lone surrogate as U+FFFD; url_normalize refuses it (README).
      if (href === null || !input.isWellFormed()) {
        expect(ours, what).toBe("url_parsing");
        continue;
      }
      const expected = new URL(href);
      const got = ours as Result;
      expect(got.host, what).toBe(trimTrailingDots(expected.hostname));
      expect(got.path, what).toBe(expected.pathname);
      const defaultPort = expected.port === "" || (expected.protocol === "https:" && expected.port === "443");
      expect(got.port, what).toBe(defaultPort ? null : Number(expected.port));
      expect(got, what).toEqual(normalizeUrl(href));
    }
  });

  it("drops tabs and newlines and strips C0 controls before looking for the scheme", () => {
    // Looked for first, the scheme of "ht\ttp://ex.com/" was missing: https:// was put in front and
    // the host became "http".
    expect(normalizeUrl("ht\ttp://Ex.com/a\n/b").canonical).toBe("https://ex.com/a/b");
    expect(normalizeUrl("\u0001http://ex.com/x\u0002").canonical).toBe("https://ex.com/x");
    expect(normalizeUrl("h\nttp://ex.com:80/").canonical).toBe("https://ex.com/");
  });

  it("refuses a would-be scheme that is none (an invisible character in or before it) rather than read it as the host", () => {
    // https:// was put in front, the IDNA mapping dropped the invisible character, and the
    // canonical URL was https://http//a.b/ with host "http".
    for (const url of [
      "\u200bhttp://a.b/",
      "h\u00adttp://a.b/",
      "http\u200b://a.b/",
      "ht\u200dtps://a.b/x",
      "1http://a.b/",
    ]) {
      expect(attempt(url), JSON.stringify(url)).toBe("url_parsing");
    }
    // What people paste without a scheme still reads as https, "://" later in it included.
    expect(normalizeUrl("example.com/go?to=http://x.y/").host).toBe("example.com");
    expect(normalizeUrl("localhost:8080/x").canonical).toBe("https://localhost:8080/x");
    expect(normalizeUrl("//a.b/x").canonical).toBe("https://a.b/x");
  });

  it("strips C0 controls, space and trim()'s Unicode spaces from both ends, in any order (README)", () => {
    // trim() ran first and the C0 loop after: "\u0001\u00a0http://…" was refused, "\u00a0\u0001http://…"
    // accepted, and "/x\u0001\u00a0" lost only the NBSP's share of what it should.
    expect(normalizeUrl("\u0001\u00a0http://a.b/").canonical).toBe("https://a.b/");
    expect(normalizeUrl("\ufeff\u0001http://a.b/").canonical).toBe("https://a.b/");
    expect(normalizeUrl("http://a.b/x\u00a0\u0001\u3000").canonical).toBe("https://a.b/x");
    const edge = fc.array(
      piece("\u0000", "\u0001", "\u001f", " ", "\t", "\n", "\u00a0", "\u2028", "\u3000", "\ufeff"),
    );
    fc.assert(
      fc.property(edge, edge, (before, after) => {
        expect(normalizeUrl(`${before.join("")}http://a.b/x${after.join("")}`).canonical).toBe(
          "https://a.b/x",
        );
      }),
      { numRuns: 500, seed: 7 },
    );
    // The set is exactly C0, space and what trim() strips: any other character but an empty query or
    // fragment's "?" or "#" stays in the path.
    for (let c = 0; c <= 0xffff; c++) {
      if ((c >= 0xd800 && c <= 0xdfff) || c === 0x23 || c === 0x3f) continue;
      const ch = String.fromCharCode(c);
      const stripped = c <= 0x20 || ch.trim() === "";
      const got = attempt(`http://a.b/x${ch}`);
      expect(typeof got === "object" && got.path === "/x", `U+${c.toString(16)}`).toBe(stripped);
    }
  });
});
