// Packages that ship no type declarations.
declare module "stopword" {
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
