/**
 * ECMAScript names a general category by its long name or an alias as well as its short one
 * (`\p{Letter}`, `\p{Decimal_Number}`, `\p{digit}`, `\p{gc=Lu}`, `\p{General_Category=Mark}`) and a
 * script as `\p{Script=Greek}` / `\p{sc=Greek}`; RE2 knows `\p{L}`, `\p{Nd}` and `\p{Greek}` only,
 * so json_schema_validate refused these valid patterns as "not supported" (the official suite's
 * optional/ecmascript-regex.json: `\p{Letter}cole`, `^\p{digit}+$`). The aliases are Unicode's
 * (PropertyValueAliases.txt, gc), which V8 accepts. What stays unmapped (a binary property re2js
 * lacks such as `\p{ASCII}`, Script_Extensions, four-letter script codes) RE2 still refuses.
 */
const GENERAL_CATEGORY: Record<string, string> = {
  Other: "C",
  Control: "Cc",
  cntrl: "Cc",
  Format: "Cf",
  Unassigned: "Cn",
  Private_Use: "Co",
  Surrogate: "Cs",
  Letter: "L",
  Cased_Letter: "LC",
  Lowercase_Letter: "Ll",
  Modifier_Letter: "Lm",
  Other_Letter: "Lo",
  Titlecase_Letter: "Lt",
  Uppercase_Letter: "Lu",
  Mark: "M",
  Combining_Mark: "M",
  Spacing_Mark: "Mc",
  Enclosing_Mark: "Me",
  Nonspacing_Mark: "Mn",
  Number: "N",
  Decimal_Number: "Nd",
  digit: "Nd",
  Letter_Number: "Nl",
  Other_Number: "No",
  Punctuation: "P",
  punct: "P",
  Connector_Punctuation: "Pc",
  Dash_Punctuation: "Pd",
  Close_Punctuation: "Pe",
  Final_Punctuation: "Pf",
  Initial_Punctuation: "Pi",
  Other_Punctuation: "Po",
  Open_Punctuation: "Ps",
  Symbol: "S",
  Currency_Symbol: "Sc",
  Modifier_Symbol: "Sk",
  Math_Symbol: "Sm",
  Other_Symbol: "So",
  Separator: "Z",
  Line_Separator: "Zl",
  Paragraph_Separator: "Zp",
  Space_Separator: "Zs",
};

const PROPERTY = /^\\([pP])\{(?:(General_Category|gc|Script|sc)=)?([A-Za-z_]+)\}$/;

/** A `\p{…}` / `\P{…}` escape as RE2 spells it (the escape unchanged when it has no RE2 spelling). */
export function re2Property(esc: string): string {
  const m = PROPERTY.exec(esc);
  if (!m) return esc;
  const [, p, key, value] = m as unknown as [string, string, string | undefined, string];
  const script = key === "Script" || key === "sc";
  // `Letter` alone or after gc= is a category; after sc= a script's long name is RE2's own.
  const name = script ? value : (GENERAL_CATEGORY[value] ?? value);
  return `\\${p}{${name}}`;
}

/**
 * `: \p{sc=Grek}`, the property as the caller wrote it, when RE2's complaint quotes the escape
 * re2Property made of it (`\p{Grek}`, a name the caller never wrote); undefined if none matches.
 */
export function writtenProperty(pattern: string, re2Complaint: string): string | undefined {
  for (const [esc] of pattern.matchAll(/\\[pP]\{[^}]*\}/g))
    if (re2Complaint.includes(`\`${re2Property(esc)}\``)) return `: ${esc}`;
  return undefined;
}
