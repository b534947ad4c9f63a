// What the reconciler uses of viem's public client. A dynamic import("viem") needs the whole
// namespace, so the bundler kept and evaluated every module of viem's entry at start-up (its
// actions hash ABI signatures with keccak at module scope); importing this module instead lets it
// keep only these and run them on the reconciler's first use.
export { createPublicClient, http, parseAbi, parseEventLogs } from "viem";
