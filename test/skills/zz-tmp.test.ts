import { it } from "vitest";
import { htmlToMd } from "../../src/skills/lib/html-convert";
it("tables", () => {
  const html = "<table><tr><th>a</th></tr><tr><td>x<br>y &lt;b&gt;</td></tr></table>\n".repeat(6000);
  try { const md = htmlToMd(html); console.log("OK", md.length); } catch (e) { console.log("ERR", String(e), (e as Error).stack?.split("\n").slice(0, 8).join("\n")); }
});
