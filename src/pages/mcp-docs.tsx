import type { PublicConfig } from "../config";
import { mcpClientConfig, mcpSummary, mcpUrl } from "../discovery/mcp";
import {
  IDEMPOTENCY_KEY_META,
  IDEMPOTENT_REPLAY_META,
  MCP_MAX_BODY_BYTES,
  PAYMENT_ERROR_META,
  PAYMENT_META,
  PAYMENT_RESPONSE_META,
  RECEIPT_META,
  RECEIPT_NOTE_META,
  REQUEST_ID_META,
  V1_PAYMENT_META,
  V1_PAYMENT_RESPONSE_META,
} from "../mcp/limits";
import { Layout } from "./layout";
import { CodeBlock } from "./scroll-box";

/** /docs/mcp: how to connect an MCP client and pay for tool calls (`partners`: listed or not). */
export function McpDocsPage({ cfg, partners }: { cfg: PublicConfig; partners: boolean }) {
  const url = mcpUrl(cfg);
  const summary = mcpSummary(partners);
  const unpaid = {
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "slugify", arguments: { text: "Hello MCP" } },
  };
  const paid = {
    ...unpaid,
    params: {
      ...unpaid.params,
      _meta: {
        [PAYMENT_META]: {
          x402Version: 2,
          resource: "<the PaymentRequired's resource>",
          accepted: "<one of accepts>",
          payload: "<signed>",
        },
      },
    },
  };
  return (
    <Layout title="Connect an MCP client" description={summary}>
      <p class="muted">
        <a href="/docs">Docs</a> / mcp
      </p>
      <h1>Connect an MCP client</h1>
      <p>{summary}</p>
      <ul>
        <li>
          URL: <code id="mcp-url">{url}</code>
        </li>
        <li>
          Transport: Streamable HTTP, stateless: <code>POST</code> only, no session id, JSON answers (no SSE
          stream). <code>GET</code> and <code>DELETE</code> answer <code>405</code>.
        </li>
        <li>
          Tools: one per skill (named by the skill id, e.g. <code>token_count</code>)
          {partners ? (
            <>
              , the refinery skill, and one per paid partner service (
              <code>&lt;partner&gt;__&lt;service&gt;</code>)
            </>
          ) : null}
          . Resources: <code>skills://catalog</code> and <code>skills://docs/&lt;skill_id&gt;</code>.
        </li>
        <li>
          Protocol revisions: <code>2026-07-28</code> (no <code>initialize</code>:{" "}
          <code>server/discover</code>, and the revision in the <code>MCP-Protocol-Version</code> header and
          in <code>_meta["io.modelcontextprotocol/protocolVersion"]</code> of every request) and{" "}
          <code>2024-11-05</code> to <code>2025-11-25</code> (<code>initialize</code> first). Tools, payments
          and results are the same in every revision.
        </li>
        <li>Bodies up to {MCP_MAX_BODY_BYTES} bytes; one JSON-RPC message per request (no batches).</li>
      </ul>
      <h2>Client configuration</h2>
      <p>
        Most MCP clients read this shape (<code>"type": "http"</code> is Claude Code's and VS Code's name for
        Streamable HTTP; clients that name it otherwise, e.g. <code>"streamable-http"</code>, take the same
        URL). Pay with x402 (your client or agent signs):
      </p>
      <CodeBlock>{JSON.stringify(mcpClientConfig(cfg), null, 2)}</CodeBlock>
      <p>
        Or pay skill tools from card credits: buy a key with <code>POST /api/cardpay/checkout</code> and send
        it on every request{partners ? " (partner services and refinery recipes take x402 only)" : ""}. A key
        buys calls of its own skill: those it pays, even beside an x402 payment (one credit, no USDC).{" "}
        {cfg.x402Enabled ? (
          <>
            Any other call on the connection is paid as if the key were not there, by the x402 payment in its{" "}
            <code>_meta</code>, or, unpaid, gets the offer with a note (<code>error</code>) saying why the key
            did not pay: another skill's key, an unknown or malformed key, or one frozen by a dispute.
          </>
        ) : (
          <>
            This deployment takes no x402 payment now (<code>X402_ENABLED</code> is off): any other call on
            the connection is refused without an offer (<code>Payment refused: …</code>, nothing charged),
            saying why the key did not pay (also in <code>note</code>): another skill's key, an unknown or
            malformed key, or one frozen by a dispute.
          </>
        )}{" "}
        A key disputed just as its call starts is refused as over HTTP (<code>403</code>, no offer, nothing
        spent); the next call {cfg.x402Enabled ? "gets the offer" : "is refused"} with why.
      </p>
      <CodeBlock>{JSON.stringify(mcpClientConfig(cfg, true), null, 2)}</CodeBlock>
      <h2>Paying a call with x402</h2>
      <ol>
        <li>
          Call the tool without payment:
          <CodeBlock>{JSON.stringify(unpaid)}</CodeBlock>
          The result has <code>isError: true</code>; its <code>structuredContent</code> (and{" "}
          <code>_meta["{PAYMENT_ERROR_META}"]</code> for payers that read it there) is the x402 v2{" "}
          <code>PaymentRequired</code>, the same offer as the HTTP <code>402</code> of the skill, and{" "}
          <code>content[0].text</code> is it in the x402 MCP transport's wrapper,{" "}
          <code>{'{"x402/error":{"code":402,"message":…,"data":<PaymentRequired>}}'}</code>.
        </li>
        <li>
          Sign it (<code>x402Client</code> of <code>@x402/core</code> with the <code>exact</code> scheme of{" "}
          <code>@x402/evm</code>) and call again with the payment payload in <code>_meta</code>, naming the
          offer's <code>resource</code> or none. A payment made for another tool is refused, nothing charged:
          with <code>reason: "extension_echo_mismatch"</code> when it echoes that tool's offer extensions (as
          the <code>@x402/core</code> client does), else with <code>reason: "resource_mismatch"</code>:
          <CodeBlock>{JSON.stringify(paid)}</CodeBlock>
        </li>
        <li>
          The result carries <code>structuredContent</code> and its JSON text (a result over 1,048,576
          characters of JSON comes once, as <code>structuredContent</code>, with a note as its text), and{" "}
          <code>_meta["{PAYMENT_RESPONSE_META}"]</code> (success, transaction, network, payer). Every paid
          result, x402 or card credits, also carries its signed receipt in{" "}
          <code>_meta["{RECEIPT_META}"]</code>, bound to the bytes of <code>content[0].text</code>, and the
          request id it names in <code>_meta["{REQUEST_ID_META}"]</code> (over 1,048,576 characters, where the
          text is a note, <code>_meta["{RECEIPT_NOTE_META}"]</code> says the receipt can only be checked over
          HTTP; the key is published at <code>/.well-known/did.json</code>). The payment is the{" "}
          <code>PaymentPayload</code> object (or its base64 <code>PAYMENT-SIGNATURE</code> encoding, of UTF-8
          or, as <code>btoa(JSON.stringify(payload))</code> writes it, Latin-1). Any other value (a string,
          object, number or array that is not a payment) is refused with{" "}
          <code>reason: "invalid_payment_header"</code> and the offer to sign again, a payload whose{" "}
          <code>x402Version</code> is not 2 with <code>reason: "invalid_x402_version"</code>. A settlement
          that fails is a tool error carrying the offer, as an unpaid call's does, with{" "}
          <code>{PAYMENT_RESPONSE_META}</code> (<code>success: false</code>, its <code>errorReason</code>) in{" "}
          <code>_meta</code> and <code>structuredContent</code>. One whose outcome is unknown (
          <code>reason: "settlement_unconfirmed"</code>) also names its <code>transaction</code> and{" "}
          <code>request_id</code>: the result is withheld, and if that transfer lands after all it is refunded
          {partners ? " (less the share owed to a partner that served the call)" : ""}, so sign a new payment
          to retry{partners ? " (on a partner's call that share is then paid twice)" : ""}.
        </li>
      </ol>
      <p>
        An x402 v1 payer (Vercel's <code>x402-mcp</code>) finds the v1 offer (<code>x402Version: 1</code>,{" "}
        <code>network: "base"</code>, <code>maxAmountRequired</code>) as the unpaid result's{" "}
        <code>content[1].text</code>, sends its <code>X-PAYMENT</code> value in{" "}
        <code>_meta["{V1_PAYMENT_META}"]</code> and gets <code>_meta["{V1_PAYMENT_RESPONSE_META}"]</code>; it
        pays and is refused as an HTTP v1 client is. A v1 payment carries no payment identifier, so a v1
        result whose answer was lost cannot be fetched again.
      </p>
      <p>
        Charged only for a result: invalid arguments come back as a tool error with the same field errors as
        the HTTP <code>422</code>, and are not settled.{" "}
        {partners ? (
          <>
            The one exception is a partner that must be paid before it answers: your payment settles first,
            and if the partner then fails the result says <code>charged: true</code> with a{" "}
            <code>refund</code> (the price less what the partner can still collect, sent back to the payer).{" "}
          </>
        ) : null}
        A signature pays one call, over MCP or HTTP. Payments land in the same ledger, under the resource{" "}
        <code>mcp:&lt;tool&gt;</code>.
      </p>
      <h2>Retrying a call without paying twice</h2>
      <p>
        A retried call with the same key gets the stored answer, nothing more settled or spent, marked{" "}
        <code>_meta["{IDEMPOTENT_REPLAY_META}"]: true</code> (its <code>_meta</code> is the stored call's: the
        request id and receipt of the call that ran). An x402 payment carries its key itself: the{" "}
        <code>payment-identifier</code> extension every <code>PaymentRequired</code> offers, with a fresh
        signature for each retry. A card-credit call names its key in the call's own{" "}
        <code>params._meta["{IDEMPOTENCY_KEY_META}"]</code> (1 to 255 visible ASCII characters, as the HTTP{" "}
        <code>Idempotency-Key</code>; anything else is a tool error with{" "}
        <code>reason: "invalid_idempotency_key"</code>, not charged); an <code>Idempotency-Key</code> header
        on the MCP request itself is not read. The same key over MCP and over HTTP is the same call, for 24
        hours.
      </p>
    </Layout>
  );
}
