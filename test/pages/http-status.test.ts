import { describe, expect, it } from "vitest";
import { noAnswer, statusLine } from "../../src/browser/http-status";

describe("what the pages' scripts say about a request", () => {
  it("the status line names the status even when the protocol sent no phrase (HTTP/2, HTTP/3)", () => {
    expect(statusLine(402, "")).toBe("402 Payment Required");
    expect(statusLine(422, "")).toBe("422 Unprocessable Content");
    expect(statusLine(429, "")).toBe("429 Too Many Requests");
    expect(statusLine(200, "OK")).toBe("200 OK");
    // A phrase the server did send wins; an unknown status is just its number.
    expect(statusLine(402, "Payment Needed")).toBe("402 Payment Needed");
    expect(statusLine(599, "")).toBe("599");
  });

  it("a fetch that threw reads as no answer, with the browser's words and what to do", () => {
    expect(`Checkout could not start: ${noAnswer(new TypeError("Failed to fetch"))}`).toBe(
      "Checkout could not start: no answer from the server (Failed to fetch). Check your connection and try again.",
    );
  });
});
