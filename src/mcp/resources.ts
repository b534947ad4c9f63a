import type { Resource } from "@modelcontextprotocol/server";
import { formatUsd } from "../money";
import { inputJsonSchema, type skills } from "../skills/registry";
import type { McpTool } from "./tools";

type Skill = (typeof skills)[number];

export const CATALOG_URI = "skills://catalog";
export const docsUri = (skill: Skill) => `skills://docs/${skill.id}`;

export function resourceList(all: readonly Skill[]): Resource[] {
  return [
    {
      uri: CATALOG_URI,
      name: "catalog",
      title: "Skill catalog",
      description: "Every skill with price, schema and examples (the JSON of GET /api/catalog).",
      mimeType: "application/json",
    },
    ...all.map((s) => ({
      uri: docsUri(s),
      name: `docs/${s.id}`,
      title: `${s.name}: docs`,
      description: `How to call ${s.id} (${formatUsd(s.price_usd)} per call): input, example, output.`,
      mimeType: "text/markdown",
    })),
  ];
}

/** A skill's docs as markdown, from the registry (the same facts as /docs/<slug>). */
export function skillDocs(skill: Skill, tool: McpTool | undefined, baseUrl: string): string {
  const json = (v: unknown) => `\`\`\`json\n${JSON.stringify(v, null, 2)}\n\`\`\``;
  return [
    `# ${skill.name} (\`${skill.id}\`)`,
    "",
    skill.description,
    "",
    `- Price: ${formatUsd(skill.price_usd)} per call (USDC over x402, or one card credit); charged only for a successful result.`,
    `- MCP tool: \`${tool?.tool.name ?? skill.id}\` on ${baseUrl}/mcp`,
    `- HTTP: POST ${baseUrl}${skill.endpoint}`,
    `- Web docs: ${baseUrl}/docs/${skill.slug}`,
    "",
    "## Arguments (JSON Schema)",
    json(inputJsonSchema(skill)),
    "",
    "## Example arguments",
    json(skill.example_request),
    "",
    "## Example result",
    json(skill.example_response),
    "",
  ].join("\n");
}
