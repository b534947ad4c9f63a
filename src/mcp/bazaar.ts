import {
  type DeclareMcpDiscoveryExtensionConfig,
  declareDiscoveryExtension,
  type McpDiscoveryExtension,
} from "@x402/extensions/bazaar";
import { withInputField } from "../payments/bazaar-input";

/** Tool `_meta` key of the bazaar extension's MCP discovery info (@x402/extensions). */
export const BAZAAR_META = "x402/bazaar";

/**
 * The x402 bazaar's MCP discovery declaration of one tool, for indexers that read tools/list.
 *
 * extensions/bazaar.md names the tool `input.tool`, and an MCP schema "must require tool and
 * inputSchema"; @x402/extensions 2.27.0 writes `input.toolName` instead, and its own checks
 * (validateDiscoveryExtensionSpec) require that. Both are written, with the same name, and the
 * declared schema requires both and stays closed to anything else: an indexer that follows the
 * specification and one built on the library both catalog the tool.
 */
export function bazaarDeclaration(config: DeclareMcpDiscoveryExtensionConfig) {
  const { bazaar } = declareDiscoveryExtension(config) as { bazaar: McpDiscoveryExtension };
  return withInputField(bazaar, "tool", config.toolName, { type: "string" }, true);
}
