// The try-it page (/applet). Talks only to this origin; the card key typed here is sent only with
// the request, and the wallet signs in the wallet's own window.
import type { PaymentRequired } from "@x402/core/types";
import { storedAnswerView } from "../pages/stored-answer";
import { wireBuyButton } from "./checkout";
import { noAnswer, statusLine } from "./http-status";
import { checkJsonBody } from "./json-check";
import { injectedWallet, paymentRequired, settlement, signPayment } from "./wallet";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>("applet");
const skill = $<HTMLSelectElement>("skill");
const body = $<HTMLTextAreaElement>("body");
const bodyError = $("body-error");
const key = $<HTMLInputElement>("key");
const sendButton = $<HTMLButtonElement>("send");
const status = $("status");
const credits = $("credits");
const challenge = $("challenge");
const payWallet = $<HTMLButtonElement>("pay-wallet");
const noWallet = $("no-wallet");
const buy = $<HTMLButtonElement>("buy");
const payStatus = $("pay-status");
const receipt = $("receipt");
const raw = $<HTMLDetailsElement>("raw");
const output = $("output");

/** The request that got the 402, repeated as-is with the payment. */
let pending: { endpoint: string; body: string; required: PaymentRequired } | undefined;

const usd = (atomic: string) => `$${(Number(atomic) / 1e6).toFixed(6).replace(/0+$/, "").replace(/\.$/, "")}`;

function selectSkill() {
  const option = skill.selectedOptions[0];
  buy.dataset.skillId = option?.dataset.skillId ?? "";
  buy.textContent = option?.dataset.pack ?? "Buy calls by card";
  buy.hidden = !option?.dataset.pack;
}
function setStatus(text: string, cls: string) {
  status.textContent = text;
  status.className = cls;
}

/** Counts edits of the skill or the body: an answer to a request sent before an edit offers no payment. */
let edits = 0;

/**
 * The challenge on show prices the request as it was sent: once the skill or the body changes, its
 * price, its wallet payment (which would repeat the old request) and its Buy button no longer fit.
 */
function forgetChallenge() {
  edits++;
  if (!pending && challenge.hidden) return;
  pending = undefined;
  challenge.hidden = true;
  setStatus("The request changed: send it to see its price.", "muted");
}

skill.addEventListener("change", () => {
  body.value = skill.selectedOptions[0]?.dataset.example ?? "{}";
  selectSkill();
  forgetChallenge();
});
body.addEventListener("input", forgetChallenge);

/**
 * The request typed before a card checkout, kept in this tab for the way back: Stripe's Cancel
 * leads to /checkout/cancel, whose "Back to the applet" opens /applet?skill=<id>, and the buyer
 * finds the body as they left it rather than the skill's example.
 */
const DRAFT = "applet-draft";

function saveDraft() {
  try {
    sessionStorage.setItem(DRAFT, JSON.stringify({ endpoint: skill.value, body: body.value }));
  } catch {
    // Storage off (a private mode, a policy): the way back shows the example, as it did.
  }
}

function restoreDraft() {
  const wanted = new URLSearchParams(window.location.search).get("skill");
  const option = Array.from(skill.options).find((o) => o.dataset.skillId === wanted);
  if (!option) return;
  let draft: { endpoint?: unknown; body?: unknown } | null = null;
  try {
    draft = JSON.parse(sessionStorage.getItem(DRAFT) ?? "null");
    sessionStorage.removeItem(DRAFT);
  } catch {
    draft = null;
  }
  skill.value = option.value;
  body.value =
    draft?.endpoint === option.value && typeof draft.body === "string"
      ? draft.body
      : (option.dataset.example ?? "{}");
}

restoreDraft();
selectSkill();

/**
 * An answer's JSON text indented as the success page shows a stored one (storedAnswerView indents
 * the text itself). A parse into objects and back rounded integers past 2^53 and moved integer-like
 * keys first, and json_sort's and json_flatten's answers are about exactly those. Text that is not
 * JSON is shown as it came.
 */
async function indented(text: string): Promise<string> {
  try {
    JSON.parse(text);
  } catch {
    return text;
  }
  return (await storedAnswerView(`{"status":200,"body":${text}}`)).text;
}

function show(res: Response, shown: string) {
  output.textContent = shown;
  setStatus(
    statusLine(res.status, res.statusText),
    res.ok ? "status-ok" : res.status === 402 ? "status-pay" : "status-err",
  );
  const left = res.headers.get("x-credits-remaining");
  credits.hidden = left === null;
  credits.textContent = left === null ? "" : `Calls left on this key: ${left}`;
  const settled = res.ok ? settlement(res) : undefined;
  receipt.hidden = !settled;
  if (settled) {
    $("r-tx").textContent = settled.transaction;
    $("r-network").textContent = settled.network;
    $("r-payer").textContent = settled.payer ?? "";
  }
}

async function send(endpoint: string, text: string, extra: Record<string, string> = {}) {
  const sentAt = edits;
  const headers: Record<string, string> = { "content-type": "application/json", ...extra };
  if (key.value.trim() && !extra["PAYMENT-SIGNATURE"]) headers.authorization = `Bearer ${key.value.trim()}`;
  let res: Response;
  try {
    res = await fetch(endpoint, { method: "POST", headers, body: text });
  } catch (e) {
    throw new Error(noAnswer(e));
  }
  show(res, await indented(await res.text()));
  challenge.hidden = true;
  pending = undefined;
  // The raw 402 is long and mostly for machines: folded behind "details"; other answers open.
  raw.open = res.status !== 402;
  // Edited while this request was on its way: its offer would pay for the old text.
  if (sentAt !== edits) return;
  if (res.status === 402 && res.headers.get("payment-required")) {
    const required = paymentRequired(res);
    const offer = required.accepts[0];
    if (offer) {
      $("c-price").textContent = `${usd(offer.amount)} (${offer.amount} atomic USDC)`;
      $("c-network").textContent = offer.network;
      $("c-payto").textContent = offer.payTo;
      $("c-asset").textContent = offer.asset;
      $("c-why").textContent = (required as { error?: string }).error ?? "";
      payWallet.textContent = `Pay ${usd(offer.amount)} with browser wallet`;
      const wallet = injectedWallet();
      payWallet.hidden = !wallet;
      noWallet.hidden = Boolean(wallet);
      payStatus.textContent = "";
      challenge.hidden = false;
      pending = { endpoint, body: text, required };
    }
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const checked = checkJsonBody(body.value);
  bodyError.hidden = checked.ok;
  body.setAttribute("aria-invalid", String(!checked.ok));
  if (!checked.ok) {
    bodyError.textContent = checked.message;
    body.focus();
    return;
  }
  setStatus("Sending…", "muted");
  try {
    await send(skill.value, body.value);
  } catch (error) {
    setStatus(`Request failed: ${error instanceof Error ? error.message : String(error)}`, "status-err");
  }
});

payWallet.addEventListener("click", async () => {
  const wallet = injectedWallet();
  const signing = pending;
  if (!wallet || !signing) return;
  const { endpoint, body: text, required } = signing;
  payWallet.disabled = true;
  payStatus.className = "muted";
  payStatus.textContent = "Waiting for the wallet's signature…";
  try {
    const headers = await signPayment(wallet, required);
    if (pending !== signing) {
      // Edited (or sent again) while the wallet was open: the signature is for the old request and
      // is dropped unsent, so nothing is paid.
      setStatus("The request changed while the wallet signed; nothing was paid. Send it again.", "muted");
      return;
    }
    payStatus.textContent = "Signed; paying and calling…";
    await send(endpoint, text, headers);
  } catch (error) {
    payStatus.className = "status-err";
    payStatus.textContent = `Wallet payment failed: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    payWallet.disabled = false;
  }
});

buy.addEventListener("click", saveDraft);
wireBuyButton(buy, payStatus, () => {
  const text = body.value;
  // With a valid body, the first credit runs it right after the payment (shown on the success page):
  // its text as typed, not its parse, whose numbers are doubles (startCheckout).
  return checkJsonBody(text).ok ? text : undefined;
});

// The page renders Send disabled: until now a submission would have been the browser's own.
sendButton.disabled = false;
