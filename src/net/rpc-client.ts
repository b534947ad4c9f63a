// What the reconciler, the contract-wallet check and the operating wallet's balance read
// (partners/, hence here in net/) use of viem's public client. A dynamic import("viem") needs the
// whole namespace, so the bundler kept and evaluated every module of viem's entry at start-up (its
// actions hash ABI signatures with keccak at module scope); importing this module instead lets it
// keep only these and run them on first use.
export {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  createPublicClient,
  ExecutionRevertedError,
  hashTypedData,
  http,
  parseAbi,
  parseErc6492Signature,
  parseEventLogs,
} from "viem";
