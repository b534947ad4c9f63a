/**
 * Requests the MCP router dispatches into the app for a `tools/call`, with the ledger resource
 * they are sold under (`mcp:<tool>`). Keyed by the Request object itself: only code in this
 * isolate holding that object can name it, so no outside client can make its HTTP call be
 * recorded as an MCP one (a header could be forged).
 *
 * It lives in http/ because it marks a Request, and three peers read it: mcp/ sets it, payments/
 * names the ledger resource from it, stats/ counts the call as an MCP one. Under all three, none
 * of them imports another for it.
 */
const mcpResources = new WeakMap<Request, string>();

export function markMcpRequest(req: Request, tool: string) {
  mcpResources.set(req, `mcp:${tool}`);
}

/** The ledger resource of this request: `mcp:<tool>` when MCP dispatched it, else the route's own. */
export const ledgerResource = (req: Request, routeResource: string) => mcpResources.get(req) ?? routeResource;

/** Whether MCP dispatched this request (call statistics count it as an MCP call). */
export const isMcpRequest = (req: Request) => mcpResources.has(req);
