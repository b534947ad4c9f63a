// A real x402 v2 facilitator for the local chain, speaking the HTTP contract that @x402/core's
// HTTPFacilitatorClient expects, so the Worker talks to it exactly as it would to a hosted one.
import http from "node:http";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { concat, createWalletClient, encodeFunctionData, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { localClientOptions, NETWORK } from "./chain.mjs";

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

/**
 * Runs the given tasks one at a time, each after the one before has settled (either way).
 */
function oneAtATime() {
  let last = Promise.resolve();
  return (task) => {
    const run = last.then(task, task);
    last = run.catch(() => {});
    return run;
  };
}

/**
 * The wallet's sends, sharing one nonce sequence without waiting for each other longer than that
 * needs. Gas, fees and chain id are filled in concurrently; only taking the nonce, signing and
 * broadcasting run one at a time (two sends taking a nonce at once would take the same one, and
 * the node would refuse one). The nonce is read from the node's pending count on every send, not
 * counted here: a broadcast the node later dropped (test/e2e/reconcile.test.ts drops one on
 * purpose) left a counted sequence past a gap, and every later send waited for good.
 */
function oneNonceSequence(client, account) {
  const queued = oneAtATime();
  const serializer = client.chain?.serializers?.transaction;
  const sendTransaction = async (tx) => {
    const { nonce: _unset, ...prepared } = await client.prepareTransactionRequest({
      ...tx,
      account,
      parameters: ["chainId", "fees", "gas", "type"],
    });
    return queued(async () => {
      const nonce = await client.getTransactionCount({ address: account.address, blockTag: "pending" });
      const signed = await account.signTransaction({ ...prepared, nonce }, { serializer });
      return client.sendRawTransaction({ serializedTransaction: signed });
    });
  };
  const writeContract = ({ address, abi, functionName, args, dataSuffix }) => {
    const data = encodeFunctionData({ abi, functionName, args });
    return sendTransaction({ to: address, data: dataSuffix ? concat([data, dataSuffix]) : data });
  };
  return { sendTransaction, writeContract };
}

export async function startFacilitator({ rpcUrl, privateKey, port = 0 }) {
  const account = privateKeyToAccount(privateKey);
  const client = createWalletClient({ account, ...localClientOptions(rpcUrl) }).extend(publicActions);
  // Re-verifying and waiting for the receipt run concurrently, as on a hosted facilitator; only
  // the sends queue (oneNonceSequence). A settle that held one queue until its receipt made every
  // other payer wait for it. Two settles of the same authorization may both pass verification
  // now; the contract lets one through, and the other is refused at its gas estimate
  // (invalid_exact_evm_nonce_already_used) or reverts on chain (invalid_exact_evm_transaction_failed).
  const sender = { ...client, address: account.address, ...oneNonceSequence(client, account) };
  // The x402 signer wants `address`; a short receipt timeout keeps a stuck chain from hanging tests.
  // FACILITATOR_RECEIPT_WAIT_MS (dev stack only, default 30 s) shortens it for the e2e tests that
  // hold a settlement in the mempool on purpose: the library asks /settle twice, so each such call
  // otherwise costs a minute of waiting for a receipt that cannot come.
  const confirmationTimeoutMs = Number(process.env.FACILITATOR_RECEIPT_WAIT_MS) || 30_000;
  const signer = toFacilitatorEvmSigner(sender, { confirmationTimeoutMs });
  const facilitator = registerExactEvmScheme(new x402Facilitator(), { signer, networks: NETWORK });

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
        return [200, await facilitator.settle(body.paymentPayload, body.paymentRequirements)];
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
