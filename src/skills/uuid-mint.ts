import { v1, v4 } from "uuid";
import * as z from "zod";
import { defineSkill } from "./types";

/**
 * The last v1 timestamp minted in this isolate. The uuid package counts ids within a millisecond
 * up to 10,000, then starts again at 0 with another node: with workerd's clock standing still
 * between I/O, the 10,001st id of a millisecond was older than the one before it, inside one call.
 * Past 10,000 the count borrows the next millisecond instead (RFC 9562 §6.2 lets a generator run
 * its timestamp ahead), so v1 ids come out in time order and never repeat a timestamp here; the
 * node and clock sequence are random for each id.
 */
let lastV1 = { msecs: Number.NEGATIVE_INFINITY, nsecs: 0 };

function nextV1(): string {
  const now = Date.now();
  if (now > lastV1.msecs) lastV1 = { msecs: now, nsecs: 0 };
  else if (lastV1.nsecs + 1 < 10_000) lastV1 = { msecs: lastV1.msecs, nsecs: lastV1.nsecs + 1 };
  else lastV1 = { msecs: lastV1.msecs + 1, nsecs: 0 };
  return v1({ msecs: lastV1.msecs, nsecs: lastV1.nsecs });
}

export const uuidMint = defineSkill({
  id: "uuid_mint",
  name: "UUID mint",
  category: "text_ops",
  price_usd: 0.003,
  kind: "utility",
  description:
    "Mint 1 to 32 distinct RFC 9562 UUIDs, version 4 (random, default) or version 1 (time-based with a random node id).",
  input: () =>
    z.object({
      count: z.int().min(1).max(32).default(1).meta({ description: "How many ids." }),
      version: z
        .union([z.literal(1), z.literal(4)])
        .default(4)
        .meta({ description: "UUID version: 4 (default) or 1." }),
    }),
  output: () =>
    z.object({
      version: z.union([z.literal(1), z.literal(4)]),
      count: z.int().min(1).max(32),
      ids: z.array(z.uuid()).min(1).max(32).meta({ description: "count distinct UUIDs." }),
    }),
  example_request: { count: 2, version: 4 },
  example_response: {
    skill: "uuid_mint",
    ok: true,
    version: 4,
    count: 2,
    ids: ["0b5c4e5e-8f5e-4c8a-9a43-2f1f3f6f8f10", "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"],
  },
  run({ count, version }) {
    const mint = version === 1 ? nextV1 : v4;
    const ids = new Set<string>();
    while (ids.size < count) ids.add(mint());
    return { version, count, ids: [...ids] };
  },
});
