import type { HTTPAdapter } from "@x402/core/server";
import type { Context } from "hono";
import type { AppEnv } from "../env";

/** An HTTP adapter whose payment header can be the lifted form of a v1 payment. */
export class GateAdapter implements HTTPAdapter {
  constructor(
    private readonly c: Context<AppEnv>,
    private readonly payment: string | undefined,
  ) {}
  getHeader(name: string) {
    return name.toLowerCase() === "payment-signature" ? this.payment : this.c.req.header(name);
  }
  getMethod() {
    return this.c.req.method;
  }
  getPath() {
    return this.c.req.path;
  }
  getUrl() {
    return this.c.req.url;
  }
  getAcceptHeader() {
    return this.c.req.header("accept") ?? "";
  }
  getUserAgent() {
    return this.c.req.header("user-agent") ?? "";
  }
  getQueryParams() {
    return this.c.req.queries();
  }
  getQueryParam(name: string) {
    return this.c.req.queries(name);
  }
  async getBody() {
    try {
      return await this.c.req.json();
    } catch {
      return undefined;
    }
  }
}
