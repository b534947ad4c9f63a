import { MAX_BODY_BYTES } from "../http/limits";

export const MCP_PATH = "/mcp";

/**
 * A tools/call carries the same arguments as the HTTP body of the skill (capped at
 * MAX_BODY_BYTES on /api/*) plus the JSON-RPC envelope and the x402 payment payload (~1 KB);
 * 64 KiB of headroom lets every call the HTTP route accepts through, and nothing much larger.
 */
export const MCP_MAX_BODY_BYTES = MAX_BODY_BYTES + 64 * 1024;
