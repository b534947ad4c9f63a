// Docs pages: the "Buy N calls for $X" button.
import { wireBuyButton } from "./checkout";

const button = document.getElementById("buy") as HTMLButtonElement | null;
const status = document.getElementById("buy-status");
if (button && status) wireBuyButton(button, status);
