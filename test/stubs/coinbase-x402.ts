// The Workers test pool cannot ship @coinbase/x402's dependency tree over its module socket
// ("message too large"). Tests never hold CDP keys, so that code path is replaced by this stub
// there; deployments bundle the real package (about 20 KB gzip).
export function createCdpAuthHeaders(): never {
  throw new Error("@coinbase/x402 is not loaded in unit tests");
}
