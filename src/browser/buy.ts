// Docs and checkout pages: the "Buy N calls for $X" button, and the success page's one-time forms
// ("Reveal my key").
import { wireBuyButton } from "./checkout";
import { guardOnceForms } from "./once-form";

const button = document.getElementById("buy") as HTMLButtonElement | null;
const status = document.getElementById("buy-status");
if (button && status) wireBuyButton(button, status);
guardOnceForms(document);
