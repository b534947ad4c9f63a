// Packages that ship no type declarations.
declare module "stopword" {
  export const eng: string[];
}
// The English list's own file: the package's index imports all 62 lists, and a static import of it
// evaluated them all at start-up once a lazily loaded module used the others (lib/text-language.ts).
declare module "stopword/src/stopwords_eng.js" {
  export const eng: string[];
}

// html-encoding-sniffer 7 (jsdom's) ships no declarations; @types/html-encoding-sniffer is for v3.
declare module "html-encoding-sniffer" {
  export default function sniffEncoding(
    bytes: Uint8Array,
    options?: {
      xml?: boolean;
      transportLayerEncodingLabel?: string;
      defaultEncoding?: string;
      maxPrescanBytes?: number;
    },
  ): string;
}
