import { MAX_BODY_BYTES } from "../http/limits";

export const MCP_PATH = "/mcp";

/**
 * A tools/call carries the same arguments as the HTTP body of the skill (capped at
 * MAX_BODY_BYTES on /api/*) plus the JSON-RPC envelope and the x402 payment payload (~1 KB);
 * 64 KiB of headroom lets every call the HTTP route accepts through, and nothing much larger.
 */
export const MCP_MAX_BODY_BYTES = MAX_BODY_BYTES + 64 * 1024;

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
