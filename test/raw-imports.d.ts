/** Vite's `?raw` imports (a file's text), for tests that check docs against the code. */
declare module "*?raw" {
  const text: string;
  export default text;
}
