// Packages that ship no type declarations.
declare module "stopword" {
  export const eng: string[];
}

// Text modules (wrangler's default rule for *.txt): the file's contents as a string.
declare module "*.txt" {
  const text: string;
  export default text;
}
