import { afterEach, describe, expect, it, vi } from "vitest";
import { uuidMint } from "../../src/skills/uuid-mint";

afterEach(() => vi.restoreAllMocks());

const mint = async (count: number, version: 1 | 4) =>
  ((await uuidMint.run({ count, version } as never, {} as never)) as { ids: string[] }).ids;

/** A v1 id's 60-bit timestamp (100 ns since 1582): time_hi, time_mid, time_low. */
const timeOf = (id: string) => {
  const h = id.replace(/-/g, "");
  return BigInt(`0x${h.slice(13, 16)}${h.slice(8, 12)}${h.slice(0, 8)}`);
};

/** 100 ns intervals from 1582-10-15 (v1's epoch) to 1970-01-01, then the millisecond's. */
const msecsToV1Time = (ms: number) => 122_192_928_000_000_000n + BigInt(ms) * 10_000n;

const RFC9562 = /^[0-9a-f]{8}-[0-9a-f]{4}-([14])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("uuid_mint laws", () => {
  it("every id has its version's nibble and RFC 9562's variant bits, and all are distinct", async () => {
    for (const version of [1, 4] as const) {
      const seen = new Set<string>();
      for (let call = 0; call < 200; call++) {
        const ids = await mint(32, version);
        expect(ids).toHaveLength(32);
        for (const id of ids) {
          expect(RFC9562.exec(id)?.[1], id).toBe(String(version));
          seen.add(id);
        }
      }
      expect(seen.size).toBe(200 * 32);
    }
  });

  it("v1 ids of one call are in time order, even past 10,000 ids in one millisecond (a clock that stands still)", async () => {
    // workerd's clock stands still between I/O. The uuid package restarted its count at 0 after
    // 10,000 ids in a millisecond: the 313th call of 32 went back in time half way through.
    // The fake clock stands a minute behind the real one: the module keeps its last timestamp for
    // the isolate, which the workers project shares across files, and a fake clock ahead of the
    // real one would leave every later v1 id (other files' too) stamped in its future.
    const real = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(real - 60_000);
    let previous = 0n;
    for (let call = 0; call < 400; call++) {
      const times = (await mint(32, 1)).map(timeOf);
      for (const t of times) {
        expect(t > previous, `call ${call}`).toBe(true);
        previous = t;
      }
    }
    // And a clock that goes back does not take the timestamps with it.
    vi.spyOn(Date, "now").mockReturnValue(real - 120_000);
    expect(timeOf((await mint(1, 1))[0] as string) > previous).toBe(true);

    // Back on the real clock, ids carry the real time again: at most the few milliseconds ahead that
    // past 10,000 ids a millisecond borrow (this file's ids may have been minted in the clock's
    // millisecond), never the fake clock's.
    vi.restoreAllMocks();
    const before = Date.now();
    const stamp = timeOf((await mint(1, 1))[0] as string);
    const after = Date.now();
    expect(stamp >= msecsToV1Time(before) && stamp < msecsToV1Time(after + 1_000)).toBe(true);
  });
});
