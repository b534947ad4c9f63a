/**
 * DNS-rebinding protection (MCP transports: a server MUST validate Origin). Only where the Worker
 * serves a loopback BASE_URL (the local stack, `npm start`): a web page whose name was made to
 * resolve to 127.0.0.1 would otherwise drive the local server from the browser, Host and Origin
 * naming that page's site. On a public BASE_URL the endpoint is meant for any client anywhere
 * and holds no ambient credential a page could borrow (no cookies; CORS `*`, and a card key is a
 * header the caller must write itself), so no Origin is refused there. No SDK import: the router
 * runs this before it loads the MCP server.
 */

const isLoopbackHost = (hostname: string) =>
  hostname === "localhost" || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);

/** The host name of a Host header value or an origin, or undefined when it is no such thing. */
function hostnameOf(value: string, asOrigin: boolean): string | undefined {
  try {
    return new URL(asOrigin ? value : `http://${value}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

const isLoopbackValue = (value: string, asOrigin: boolean) => {
  const hostname = hostnameOf(value, asOrigin);
  return hostname !== undefined && isLoopbackHost(hostname);
};

/**
 * Why a request to /mcp is refused as not local, or undefined. Checked where BASE_URL is a
 * loopback origin only: the request's Host (the header, and the URL the runtime built from it)
 * must be a loopback host, and an Origin, when sent, a loopback origin.
 */
export function notLocal(
  baseUrl: string | undefined,
  url: string,
  host: string | undefined,
  origin: string | undefined,
): string | undefined {
  if (!baseUrl || !isLoopbackValue(baseUrl, true)) return undefined;
  for (const h of [new URL(url).host, host]) {
    if (h !== undefined && !isLoopbackValue(h, false)) {
      return "Forbidden: this local MCP server answers requests for a loopback host only (Host)";
    }
  }
  if (origin !== undefined && !isLoopbackValue(origin, true)) {
    return "Forbidden: this local MCP server answers pages of a loopback origin only (Origin)";
  }
  return undefined;
}
