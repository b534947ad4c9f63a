// Docs and checkout pages: the "Buy N calls for $X" button, the success page's one-time forms
// ("Reveal my key") and its checking for updates while the payment or the first call is on its way.
import { wireBuyButton } from "./checkout";
import { checkForUpdates } from "./checkout-refresh";
import { guardOnceForms } from "./once-form";

const button = document.getElementById("buy") as HTMLButtonElement | null;
const status = document.getElementById("buy-status");
if (button && status) wireBuyButton(button, status);
guardOnceForms(document);
checkForUpdates(document);
