import * as z from "zod";
import type { Bindings } from "../env";

export const CATEGORIES = [
  "osint_graph",
  "research",
  "marketing",
  "ai_detection",
  "data_prep",
  "text_ops",
  "web_utils",
] as const;
export type Category = (typeof CATEGORIES)[number];

export interface SkillContext {
  env: Bindings;
  requestId: string;
  /** Work past the answer (a cache write) goes here; absent, the skill awaits it (lib/cache.ts). */
  waitUntil?: (work: Promise<unknown>) => void;
  /** Takes a cache write to start once the answer passed the output cap (runSkill); absent, cached() starts it. */
  holdWrite?: (write: () => Promise<unknown>) => void;
}

export type SkillOutput = Record<string, unknown>;

/** `cache` of the network skills' responses (cache.ts): whether the KV cache answered. */
export const cacheState = z.enum(["hit", "miss"]).meta({ description: "Whether the KV cache answered." });

/** A closed object with one number per key of `table` (score breakdowns keyed by their weight tables). */
export const numberPerKey = (table: object) =>
  z.object(Object.fromEntries(Object.keys(table).map((k) => [k, z.number()])));

export interface SkillSpec<S extends z.ZodType = z.ZodType> {
  /** Underscore id of spec 2.2; slug, endpoint and docs URL are derived from it. */
  id: string;
  name: string;
  category: Category;
  /** Dollars, exactly as spec 2.2 prints them. */
  price_usd: number;
  /** Utility skills are deterministic and offline and answer with `ok: true`. */
  kind: "utility" | "analytic";
  /** Under 500 characters: it is also the x402 bazaar description. */
  description: string;
  /**
   * The request body's schema, built when first used (the registry's `Skill.input` is a memoized
   * getter): building every skill's schemas at start-up was the largest part of the Worker's module
   * evaluation (docs/PERFORMANCE.md, "Start-up"), and most requests use one skill's or none.
   */
  input: () => S;
  example_request: z.input<S>;
  /**
   * The fields `run` returns, every one of them (objects are closed): the registry adds `skill` and
   * `ok` and publishes the result as the 200 schema, and a test parses `example_response` with it.
   * Built when first used, like `input`.
   */
  output: () => z.ZodObject;
  /** What `run` returns for `example_request`, with `skill` (and `ok`) included. */
  example_response: SkillOutput;
  /**
   * The skill hands the client's own values back (json_sort, json_flatten): integers past 2^53 reach
   * `run` as `JSON.rawJSON` of the digits the client sent (http/exact-integers.ts), not rounded.
   */
  exactIntegers?: boolean;
  /**
   * The skill loads data tables from the Worker's own static assets on first use (token_count's
   * BPE tables): it answers 504, not charged, when they do not arrive in time, and the OpenAPI
   * document lists that answer.
   */
  readsAssets?: true;
  /** Pure logic: the fields of the response other than `skill` and `ok`. */
  run(input: z.output<S>, ctx: SkillContext): SkillOutput | Promise<SkillOutput>;
}

export interface Skill<S extends z.ZodType = z.ZodType> extends Omit<SkillSpec<S>, "input" | "output"> {
  /** The request body's schema (built on first read, then kept). */
  readonly input: S;
  /** The fields `run` returns (built on first read, then kept). */
  readonly output: z.ZodObject;
  slug: string;
  endpoint: string;
  /** USDC atomic units (6 decimals): 0.003 → 3000. */
  price_atomic: bigint;
  /** The whole 200 body: `skill`, `ok` for utilities, then `output`'s fields (built on first read). */
  readonly response: z.ZodObject;
}

/** Identity function that keeps the input type of `run` tied to the schema. */
export function defineSkill<S extends z.ZodType>(spec: SkillSpec<S>): SkillSpec<S> {
  return spec;
}
