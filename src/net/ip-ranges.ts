/**
 * IP literal parsing and the address ranges an outbound fetch must never reach.
 *
 * Both families are parsed here rather than trusted to the URL parser alone: WHATWG URL already
 * turns `0x7f.1`, `017700000001` and `2130706433` into `127.0.0.1`, but a DoH answer or a host
 * written in a form some parser leaves alone is checked by the same code.
 */

/** A WHATWG-style IPv4 host (1 to 4 parts; decimal, 0x hex or leading-0 octal), as a uint32. */
export function parseIPv4(host: string): number | null {
  const parts = host.endsWith(".") ? host.slice(0, -1).split(".") : host.split(".");
  if (parts.length === 0 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const part of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(part)) n = part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
    else if (/^0[0-7]+$/.test(part)) n = Number.parseInt(part.slice(1), 8);
    else if (/^(0|[1-9][0-9]*)$/.test(part)) n = Number(part);
    else return null;
    if (!Number.isFinite(n)) return null;
    nums.push(n);
  }
  const last = nums.pop() as number;
  if (nums.some((n) => n > 255)) return null;
  if (last >= 256 ** (4 - nums.length)) return null;
  let value = last;
  nums.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return value >>> 0;
}

/** True when the last label looks numeric, so WHATWG URL reads the whole host as IPv4. */
export function looksLikeIPv4(host: string): boolean {
  const labels = (host.endsWith(".") ? host.slice(0, -1) : host).split(".");
  const last = labels[labels.length - 1] ?? "";
  return /^(0x[0-9a-f]*|[0-9]+)$/i.test(last);
}

export function formatIPv4(ip: number): string {
  return [ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join(".");
}

/** Eight 16-bit groups, or null. Accepts `::` compression and a dotted IPv4 tail; no zone ids. */
export function parseIPv6(text: string): number[] | null {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (s.includes("%")) return null;
  const lastColon = s.lastIndexOf(":");
  if (lastColon >= 0 && s.slice(lastColon + 1).includes(".")) {
    // A dotted IPv4 tail ("::ffff:127.0.0.1") is rewritten as its two hex groups.
    const v4 = s.slice(lastColon + 1);
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(v4)) return null;
    const o = v4.split(".").map(Number) as [number, number, number, number];
    if (o.some((x) => x > 255)) return null;
    s = `${s.slice(0, lastColon + 1)}${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0] ?? "");
  const rest = halves.length === 2 ? groups(halves[1] ?? "") : [];
  const all = [...head, ...rest];
  if (all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return null;
  const nums = (gs: string[]) => gs.map((g) => Number.parseInt(g, 16));
  if (halves.length === 2) {
    if (all.length > 7) return null;
    return [...nums(head), ...new Array(8 - all.length).fill(0), ...nums(rest)];
  }
  if (all.length !== 8) return null;
  return nums(head);
}

type V4Range = [base: string, bits: number, reason: string];

// IANA IPv4 Special-Purpose Address Registry, plus multicast and the reserved class E.
const V4_RANGES: V4Range[] = [
  ["0.0.0.0", 8, "'this network' (0.0.0.0/8)"],
  ["10.0.0.0", 8, "private network (10.0.0.0/8)"],
  ["100.64.0.0", 10, "carrier-grade NAT (100.64.0.0/10)"],
  ["127.0.0.0", 8, "loopback (127.0.0.0/8)"],
  ["169.254.0.0", 16, "link-local / cloud metadata (169.254.0.0/16)"],
  ["172.16.0.0", 12, "private network (172.16.0.0/12)"],
  ["192.0.0.0", 24, "IETF protocol assignments (192.0.0.0/24)"],
  ["192.0.2.0", 24, "documentation (192.0.2.0/24)"],
  ["192.31.196.0", 24, "AS112 (192.31.196.0/24)"],
  ["192.52.193.0", 24, "AMT (192.52.193.0/24)"],
  ["192.88.99.0", 24, "6to4 relay anycast (192.88.99.0/24)"],
  ["192.168.0.0", 16, "private network (192.168.0.0/16)"],
  ["192.175.48.0", 24, "AS112 (192.175.48.0/24)"],
  ["198.18.0.0", 15, "benchmarking (198.18.0.0/15)"],
  ["198.51.100.0", 24, "documentation (198.51.100.0/24)"],
  ["203.0.113.0", 24, "documentation (203.0.113.0/24)"],
  ["224.0.0.0", 4, "multicast (224.0.0.0/4)"],
  ["240.0.0.0", 4, "reserved (240.0.0.0/4, broadcast included)"],
];
const V4_TABLE = V4_RANGES.map(([base, bits, reason]) => ({
  base: parseIPv4(base) as number,
  mask: bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0,
  reason,
}));

/** Why an IPv4 address may not be fetched, or null when it is public unicast. */
export function reservedIPv4(ip: number): string | null {
  for (const r of V4_TABLE) if ((ip & r.mask) >>> 0 === r.base) return r.reason;
  return null;
}

const embeddedV4 = (g: number[]) => (((g[6] as number) << 16) | (g[7] as number)) >>> 0;

/** Why an IPv6 address may not be fetched, or null when it is global unicast outside special blocks. */
export function reservedIPv6(g: number[]): string | null {
  const [a = 0, b = 0] = g;
  const zeroUntil = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUntil(8)) return "unspecified address (::)";
  if (zeroUntil(7) && g[7] === 1) return "loopback (::1)";
  if (zeroUntil(5) && g[5] === 0xffff) {
    const v4 = embeddedV4(g);
    return `IPv4-mapped address of ${formatIPv4(v4)}${reservedIPv4(v4) ? ` (${reservedIPv4(v4)})` : ""}`;
  }
  if (zeroUntil(4) && g[4] === 0xffff && g[5] === 0) return "IPv4-translated address (::ffff:0:0/96)";
  if (zeroUntil(6)) return `IPv4-compatible address of ${formatIPv4(embeddedV4(g))}`;
  if (a === 0x64 && b === 0xff9b) {
    const v4 = embeddedV4(g);
    const inner = reservedIPv4(v4);
    if (g.slice(2, 6).every((x) => x === 0))
      return inner
        ? `NAT64 address embedding ${formatIPv4(v4)} (${inner})`
        : `NAT64 address (64:ff9b::/96) of ${formatIPv4(v4)}`;
    return "local-use NAT64 (64:ff9b:1::/48)";
  }
  if (a === 0x100 && g.slice(1, 4).every((x) => x === 0)) return "discard-only (100::/64)";
  if ((a & 0xfe00) === 0xfc00) return "unique local address (fc00::/7)";
  if ((a & 0xffc0) === 0xfe80) return "link-local (fe80::/10)";
  if ((a & 0xffc0) === 0xfec0) return "site-local (fec0::/10)";
  if ((a & 0xff00) === 0xff00) return "multicast (ff00::/8)";
  if (a === 0x2001 && b === 0x0db8) return "documentation (2001:db8::/32)";
  if (a === 0x2001 && b < 0x200) return "IETF protocol assignments, Teredo included (2001::/23)";
  if (a === 0x2002) return "6to4 address (2002::/16)";
  if ((a & 0xfff0) === 0x3ff0 && a <= 0x3fff) return "documentation (3fff::/20)";
  if (a === 0x5f00) return "segment routing (5f00::/16)";
  if ((a & 0xe000) !== 0x2000) return "not global unicast (outside 2000::/3)";
  return null;
}

/**
 * For a host that is an IP literal: `{ ip, reason }` (reason null when public); for a name: null.
 * A numeric-looking host that does not parse is reported as refused, never passed on as a name.
 */
export function classifyHost(host: string): { ip: string; reason: string | null } | null {
  if (host.startsWith("[") || host.includes(":")) {
    const g = parseIPv6(host);
    if (!g) return { ip: host, reason: "malformed IPv6 address" };
    return { ip: host, reason: reservedIPv6(g) };
  }
  if (looksLikeIPv4(host)) {
    const ip = parseIPv4(host);
    if (ip === null) return { ip: host, reason: "malformed numeric host" };
    return { ip: formatIPv4(ip), reason: reservedIPv4(ip) };
  }
  return null;
}

/**
 * The network a request comes from (CF-Connecting-IP): its IPv4 address, or the /64 prefix of its
 * IPv6 address. A /64 is one subscriber's LAN, the least an ISP hands out: a host there may change
 * its address between two tries, and can pick a new one per request (2^64 of them), so per-IP
 * limits and a checkout's Idempotency-Key scope count the /64. Without the header (local tools)
 * every caller is one network.
 */
export function callerNetwork(ip: string | undefined) {
  return callerNetworks(ip)[0] as string;
}

/**
 * The networks that hold a request's address, narrowest first: an IPv4 address alone; for IPv6
 * its /64 (callerNetwork), then the /56 and the /48 around it. A /48 is what a tunnel broker
 * routes for free and many hosts give a customer: 65,536 /64s, so a per-/64 budget alone is one
 * such holder's budget 65,536 times over; ISPs give a home a /56 or a /64, and many homes share a
 * /48 (payments/quotas.ts counts each per-IP budget in all three, with wider figures).
 */
export function callerNetworks(ip: string | undefined): [string, ...string[]] {
  if (!ip) return ["unknown"];
  const g = parseIPv6(ip);
  if (!g) return [ip]; // IPv4, as the edge writes it
  // ::ffff:a.b.c.d is the IPv4 address a.b.c.d.
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return [[g[6] ?? 0, g[7] ?? 0].flatMap((x) => [x >> 8, x & 255]).join(".")];
  }
  const prefix = (groups: number[], bits: number) =>
    `${groups.map((x) => x.toString(16)).join(":")}::/${bits}`;
  const [a = 0, b = 0, c = 0, d = 0] = g;
  return [prefix([a, b, c, d], 64), prefix([a, b, c, d & 0xff00], 56), prefix([a, b, c], 48)];
}
