import { parseKeepingIntegers } from "../http/exact-integers";
import { isRecord } from "../is-record";

/**
 * A tools/call message's arguments, shaped before the SDK reads the message (routes/mcp.ts) and
 * taken back when the call is dispatched (call.ts). No SDK import: the router loads this at
 * start-up.
 */

/**
 * A tools/call's arguments as the client wrote them: their JSON text, a slice of the POST. The
 * router hands the SDK `{ [RAW_ARGUMENTS]: <this> }` in their place (its schema takes only an
 * object there and passes values on as they are) and callTool sends the text as the route's body:
 * the arguments are not held parsed through the whole call beside the route's own parse, nor
 * serialised again (a 4 MiB json_sort held three copies). Here, not in call.ts: the router must not
 * load the MCP SDK at start-up, and only code holding this class can make one (a client's JSON
 * cannot).
 */
export class RawArguments {
  #text: string | undefined;
  constructor(text: string) {
    this.#text = text;
  }
  /** The text, once: the SDK's copy of the message then holds nothing of it while the route runs. */
  take(): string {
    const text = this.#text;
    if (text === undefined) throw new Error("tools/call arguments already taken");
    this.#text = undefined;
    return text;
  }
}

/** The one key of the stand-in arguments object (see RawArguments). */
export const RAW_ARGUMENTS = "marketplace/raw-arguments";

/**
 * A tools/call whose arguments hold integers past 2^53 gets them as written (exact-integers.ts):
 * json_sort and json_flatten hand a client's ids back, and the HTTP route they are run through
 * keeps them exact. Only the arguments: the envelope (a 20-digit JSON-RPC id) stays as JSON.parse
 * reads it, which the SDK's schemas expect.
 */
export function withExactArguments(parsed: unknown, text: string): unknown {
  if (!isRecord(parsed) || parsed.method !== "tools/call" || !isRecord(parsed.params)) return parsed;
  const exact = parseKeepingIntegers(text) as { params: { arguments?: unknown } };
  return { ...parsed, params: { ...parsed.params, arguments: exact.params.arguments } };
}

const isWhitespace = (ch: number) => ch === 0x20 || ch === 0x0a || ch === 0x0d || ch === 0x09;
const skipWhitespace = (text: string, i: number) => {
  while (isWhitespace(text.charCodeAt(i))) i++;
  return i;
};

/** Index just past the JSON string whose opening quote is at `i`. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const ch = text.charCodeAt(j);
    if (ch === 0x5c)
      j++; // a backslash: the next character is escaped
    else if (ch === 0x22) return j + 1;
  }
  return text.length;
}

/** Index just past the JSON value that starts at `i`, in text JSON.parse has accepted. */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === 0x22) return stringEnd(text, i);
  if (first !== 0x7b && first !== 0x5b) {
    // A number, true, false or null: up to the next comma, bracket or whitespace.
    let j = i;
    for (let ch = text.charCodeAt(j); j < text.length; ch = text.charCodeAt(++j)) {
      if (ch === 0x2c || ch === 0x5d || ch === 0x7d || isWhitespace(ch)) break;
    }
    return j;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const ch = text.charCodeAt(j);
    if (ch === 0x22) j = stringEnd(text, j) - 1;
    else if (ch === 0x7b || ch === 0x5b) depth++;
    else if ((ch === 0x7d || ch === 0x5d) && --depth === 0) return j + 1;
  }
  return text.length;
}

/**
 * Where the value of the member `name` of the object opening at `open` lies, in text JSON.parse
 * has accepted: the last such member, as JSON.parse keeps the last of duplicate keys, with keys
 * compared as JSON.parse reads them (escapes decoded).
 */
function memberSpan(text: string, open: number, name: string): [number, number] | undefined {
  let found: [number, number] | undefined;
  let i = skipWhitespace(text, open + 1);
  while (text.charCodeAt(i) === 0x22) {
    const keyEnd = stringEnd(text, i);
    const written = text.slice(i + 1, keyEnd - 1);
    const key = written.includes("\\") ? (JSON.parse(text.slice(i, keyEnd)) as string) : written;
    const start = skipWhitespace(text, skipWhitespace(text, keyEnd) + 1); // past the colon
    const end = valueEnd(text, start);
    if (key === name) found = [start, end];
    i = skipWhitespace(text, end);
    if (text.charCodeAt(i) !== 0x2c) break; // the closing brace
    i = skipWhitespace(text, i + 1);
  }
  return found;
}

/**
 * A tools/call with its arguments object replaced by their JSON text as sent (RawArguments), read
 * from `text`, the message JSON.parse made `parsed` of. The parsed arguments are then dropped before
 * the tool's route runs and parses them itself, and are not written out again for it: the text
 * also keeps integers past 2^53 as written, so exact-integers.ts is not needed for them. Anything
 * else (another method, arguments that are no object) is left as it is.
 */
export function withRawArguments(parsed: unknown, text: string): unknown {
  if (!isRecord(parsed) || parsed.method !== "tools/call" || !isRecord(parsed.params)) return parsed;
  if (!isRecord(parsed.params.arguments)) return parsed;
  const params = memberSpan(text, skipWhitespace(text, 0), "params");
  const args =
    params && text.charCodeAt(params[0]) === 0x7b ? memberSpan(text, params[0], "arguments") : undefined;
  if (!args || text.charCodeAt(args[0]) !== 0x7b) return parsed;
  const raw = new RawArguments(text.slice(args[0], args[1]));
  return { ...parsed, params: { ...parsed.params, arguments: { [RAW_ARGUMENTS]: raw } } };
}
