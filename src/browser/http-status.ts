// Words for what the pages' scripts show about a request: no DOM here, so workerd tests can import it.

/**
 * Reason phrases of the statuses this API answers. Over HTTP/2 and HTTP/3 `Response.statusText` is
 * empty (those protocols carry no phrase), and the applet's status line read just "402 ".
 */
const REASONS: Record<number, string> = {
  200: "OK",
  301: "Moved Permanently",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** "402 Payment Required", whether or not the protocol sent the phrase. */
export function statusLine(status: number, statusText: string): string {
  return `${status} ${statusText || REASONS[status] || ""}`.trim();
}

/**
 * A fetch that threw (no answer at all: offline, blocked, connection dropped) in words a person can
 * act on; browsers say only "Failed to fetch" or "NetworkError when attempting to fetch resource.".
 */
export function noAnswer(error: unknown): string {
  const why = error instanceof Error ? error.message : String(error);
  return `no answer from the server (${why}). Check your connection and try again.`;
}
