import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createWalletClient, custom, type EIP1193Provider, getAddress, numberToHex } from "viem";

/** The injected EIP-1193 wallet (MetaMask, Coinbase Wallet, Rabby…), if the browser has one. */
export const injectedWallet = (): EIP1193Provider | undefined =>
  (window as unknown as { ethereum?: EIP1193Provider }).ethereum;

/**
 * Signs the x402 v2 `exact` payment for a 402 with the browser wallet: the wallet shows the
 * EIP-712 TransferWithAuthorization (EIP-3009) built by @x402/evm from the 402's requirements and
 * signs it; nothing is sent on chain by the wallet. Returns the PAYMENT-SIGNATURE header.
 */
export async function signPayment(provider: EIP1193Provider, required: PaymentRequired) {
  const offer = required.accepts[0];
  if (!offer) throw new Error("The 402 offers no way to pay");
  const [account] = await provider.request({ method: "eth_requestAccounts" });
  if (!account) throw new Error("The wallet shared no account");
  // Wallets refuse typed data whose domain names another chain than the active one.
  const chainId = Number(offer.network.split(":")[1]);
  if (Number(await provider.request({ method: "eth_chainId" })) !== chainId) {
    await provider.request({
      method: "wallet_switchEthereumChain",
      params: [{ chainId: numberToHex(chainId) }],
    });
  }
  const wallet = createWalletClient({ account: getAddress(account), transport: custom(provider) });
  const client = registerExactEvmScheme(new x402Client(), {
    signer: {
      address: wallet.account.address,
      signTypedData: (typed) =>
        wallet.signTypedData({ ...typed, account: wallet.account } as Parameters<
          typeof wallet.signTypedData
        >[0]),
    },
    networks: [offer.network],
  });
  const http = new x402HTTPClient(client);
  return http.encodePaymentSignatureHeader(await http.createPaymentPayload(required));
}

export const paymentRequired = (res: Response): PaymentRequired =>
  new x402HTTPClient(new x402Client()).getPaymentRequiredResponse((name) => res.headers.get(name));

/** The settlement receipt of a paid answer (PAYMENT-RESPONSE), if it carries one. */
export function settlement(res: Response): SettleResponse | undefined {
  if (!res.headers.get("payment-response")) return undefined;
  return new x402HTTPClient(new x402Client()).getPaymentSettleResponse((name) => res.headers.get(name));
}
