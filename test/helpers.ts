import { exports } from "cloudflare:workers";

export const ORIGIN = "https://skills.test";

/** Sends a request to the Worker under test (the real default export, real bindings). */
export function call(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, init));
}

export function postJson(path: string, body: unknown, headers: Record<string, string> = {}) {
  return call(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export interface ErrorItem {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

export async function detailOf(res: Response): Promise<ErrorItem[]> {
  const body = await res.json<{ detail: ErrorItem[] }>();
  return body.detail;
}
