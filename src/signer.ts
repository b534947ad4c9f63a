// The only account code the Worker runs: signing with a private key (refunds from the operating
// wallet, payments to partners). A dynamic import("viem/accounts") keeps every export of that
// entry in the bundle, BIP-39 wordlists in ten languages among them (~240 KiB never called);
// importing this module instead lets the bundler drop them. The three utilities are what a refund
// needs besides the account: its nonce is derived from the refunded request (payments/refunds.ts).

export { getAddress, keccak256, stringToHex } from "viem";
export { privateKeyToAccount } from "viem/accounts";
