// A real x402 v2 facilitator for the local chain, speaking the HTTP contract that @x402/core's
// HTTPFacilitatorClient expects, so the Worker talks to it exactly as it would to a hosted one.
import http from "node:http";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { createWalletClient, publicActions, http as viemHttp } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { localBase, NETWORK } from "./chain.mjs";

const debug = (...args) => {
  if (process.env.FACILITATOR_DEBUG) console.error("[facilitator]", ...args);
};

// Bigints from viem must not reach JSON.stringify.
const toJson = (value) => JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v));

function send(res, status, body) {
  const text = toJson(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

export async function startFacilitator({ rpcUrl, privateKey, port = 0 }) {
  const account = privateKeyToAccount(privateKey);
  const client = createWalletClient({
    account,
    chain: localBase(rpcUrl),
    transport: viemHttp(rpcUrl),
  }).extend(publicActions);
  // The x402 signer wants `address`; a short receipt timeout keeps a stuck chain from hanging tests.
  const signer = toFacilitatorEvmSigner(
    { ...client, address: account.address },
    { confirmationTimeoutMs: 30_000 },
  );
  const facilitator = registerExactEvmScheme(new x402Facilitator(), { signer, networks: NETWORK });

  // One wallet, one nonce sequence: settles run strictly one after another, each waiting for its
  // receipt, so concurrent requests never submit two transactions with the same nonce.
  let queue = Promise.resolve();
  const serialized = (fn) => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => {});
    return run;
  };

  const routes = {
    "GET /supported": async () => [200, facilitator.getSupported()],
    "POST /verify": async (body) => {
      try {
        return [200, await facilitator.verify(body.paymentPayload, body.paymentRequirements)];
      } catch (err) {
        debug("verify failed:", err);
        return [
          500,
          {
            isValid: false,
            invalidReason: "unexpected_verify_error",
            invalidMessage: String(err?.message ?? err),
          },
        ];
      }
    },
    "POST /settle": async (body) => {
      try {
        return [
          200,
          await serialized(() => facilitator.settle(body.paymentPayload, body.paymentRequirements)),
        ];
      } catch (err) {
        debug("settle failed:", err);
        const network = body.paymentRequirements?.network ?? NETWORK;
        const errorMessage = String(err?.message ?? err);
        return [
          500,
          { success: false, errorReason: "unexpected_settle_error", errorMessage, transaction: "", network },
        ];
      }
    },
  };

  const server = http.createServer(async (req, res) => {
    const route = routes[`${req.method} ${new URL(req.url, "http://x").pathname.replace(/\/+$/, "")}`];
    if (!route) return send(res, 404, { error: `no route for ${req.method} ${req.url}` });
    let body = {};
    if (req.method === "POST") {
      try {
        body = await readJson(req);
      } catch (err) {
        return send(res, 400, { error: `invalid JSON body: ${err.message}` });
      }
      if (!body?.paymentPayload || !body?.paymentRequirements) {
        return send(res, 400, { error: "body must contain paymentPayload and paymentRequirements" });
      }
    }
    try {
      const [status, result] = await route(body);
      if (status !== 200 || result.isValid === false || result.success === false) {
        debug(req.method, req.url, status, toJson(result));
      }
      send(res, status, result);
    } catch (err) {
      debug(req.method, req.url, err);
      send(res, 500, { error: String(err?.message ?? err) });
    }
  });

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const url = `http://127.0.0.1:${server.address().port}`;
  const stop = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return { url, stop, address: account.address };
}
