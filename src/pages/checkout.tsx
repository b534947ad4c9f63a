import { raw } from "hono/html";
import { mailtoAddress } from "../contact-email";
import { shQuote } from "../discovery/identity";
import { firstCallState } from "../payments/checkout-first-call";
import type { SessionRow } from "../payments/checkout-sessions";
import type { PackStanding } from "../payments/credits";
import type { RemoteSession } from "../payments/stripe";
import type { Skill } from "../skills/types";
import { Layout } from "./layout";
import { CodeBlock } from "./scroll-box";

/**
 * Where the one-time key stands: `ready` (a Reveal button), `just_shown` (this POST consumed it),
 * `already_shown` (a second POST), `shown` (a later GET).
 */
export type RevealState = "ready" | "just_shown" | "already_shown" | "shown";

interface SuccessProps {
  sessionId: string;
  session: SessionRow | null;
  /** Stripe's view while D1 has not granted yet (late webhook). */
  remote: RemoteSession | undefined;
  /** Stripe was not asked: this client IP's budget of Stripe reads is spent (payments/quotas.ts). */
  stripeCheckPostponed?: boolean;
  skill: Skill | undefined;
  apiKey: string | undefined;
  reveal: RevealState;
  revealToken: string | undefined;
  /** The granted pack as refunds and disputes left it (api_keys), once there is one. */
  standing: PackStanding | undefined;
  baseUrl: string;
  /** The answer to a POST (the reveal): it never refreshes itself, the GET page does. */
  posted: boolean;
  /** Seconds after which this GET page checks again (successRefresh), or undefined: it is final. */
  refresh?: number;
  /** The first call's stored answer as shown (storedAnswerView), once there is one. */
  firstAnswer?: { status: number; text: string; free?: boolean };
  /** FREE_BETA now: a first call still to run will take no credit (runFirstPayload reads it as it runs). */
  freeBeta?: boolean;
  /** Where a buyer with a lost key or an unknown checkout writes (CONTACT_EMAIL). */
  contactEmail: string;
}

/**
 * "support" as a mail link: "contact support" named no address anywhere on these pages. Plain
 * "support" when CONTACT_EMAIL is no address a mailto: link can carry (mailtoAddress).
 */
function Support({ email }: { email: string }) {
  const address = mailtoAddress(email);
  if (!address) return <>support</>;
  return (
    <>
      support (<a href={`mailto:${address}`}>{address}</a>)
    </>
  );
}

/**
 * What became of a granted pack after its payment, when it can make no call: `refunded` (all of
 * it), `charged_back` (a lost dispute revoked it, for good) or `disputed` (frozen until the dispute
 * is decided). A partial refund leaves a pack that stands, with fewer calls.
 */
type PackEnd = "refunded" | "charged_back" | "disputed";
export function packEnd(s: PackStanding | undefined): PackEnd | undefined {
  if (!s) return undefined;
  // A lost dispute revokes the whole pack too (calls_revoked = calls_total): it is named first.
  if (s.dispute_status === "lost") return "charged_back";
  if (s.calls_revoked >= s.calls_total) return "refunded";
  if (s.dispute_status === "open") return "disputed";
  return undefined;
}
const ENDED: Record<PackEnd, { heading: string; payment: string }> = {
  refunded: { heading: "Payment refunded", payment: "was refunded" },
  charged_back: { heading: "Payment charged back", payment: "was charged back" },
  disputed: { heading: "Payment disputed", payment: "is disputed" },
};

/** The "Calls left" figure, or what took the calls away instead of a figure no call can spend. */
function callsLeftText(s: PackStanding | undefined): string {
  if (!s) return "…";
  switch (packEnd(s)) {
    case "refunded":
      return "none: the payment was refunded";
    case "charged_back":
      return "none: the payment was charged back";
    case "disputed":
      return `frozen while the payment is disputed (${s.calls_left} come back if it is decided in our favour)`;
  }
  return s.calls_revoked > 0
    ? `${s.calls_left} (${s.calls_revoked} of the pack taken back by a partial refund)`
    : String(s.calls_left);
}

const successPath = (sessionId: string) => `/checkout/success?session_id=${encodeURIComponent(sessionId)}`;

/**
 * A POST of the page's reveal token back to the success page (reveal the key, or take over a
 * stalled first call). A plain form: it works without JavaScript, and prefetchers and scanners
 * never submit it; with JavaScript, buy.js sends it once (data-once) and shows `working`.
 */
function TokenForm(p: { sessionId: string; token: string; id: string; working: string; children: string }) {
  return (
    <form method="post" action={successPath(p.sessionId)} data-once={p.working}>
      <input type="hidden" name="token" value={p.token} />
      <button type="submit" id={p.id} class="button">
        {p.children}
      </button>
    </form>
  );
}

/** The first call's answer, that it is still running (the GET page updates itself), or that its run died. */
function FirstCall(p: SuccessProps) {
  const state = firstCallState(p.session);
  if (state === "none") return null;
  const end = packEnd(p.standing);
  if (end && (state === "queued" || state === "stalled")) {
    return (
      <section>
        <h2>Your first call</h2>
        <p id="first-call" class="muted">
          Not run: the payment {ENDED[end].payment}.
        </p>
      </section>
    );
  }
  const revealReady = p.reveal === "ready" && p.revealToken;
  if (state !== "done") {
    return (
      <section>
        <h2>Your first call</h2>
        {state === "running" && !p.posted ? (
          <p id="first-call" class="muted">
            Running… this page updates when its answer is here.
          </p>
        ) : state === "running" ? (
          <p id="first-call" class="muted">
            Running… its answer is not here yet. {p.apiKey ? "Copy your key first, then " : ""}
            <a href={successPath(p.sessionId)}>open the success page</a> in a few seconds: it updates when the
            answer is here.
          </p>
        ) : state === "queued" || revealReady ? (
          <p id="first-call" class="muted">
            {state === "queued" ? "Not run yet" : "It has not finished (the server running it stopped)"}: it
            runs when you reveal your key.{" "}
            {p.freeBeta
              ? "It is free during the beta: no credit is spent."
              : "No credit is spent unless it succeeds."}
          </p>
        ) : (
          <>
            <p id="first-call" class="status-err">
              It did not finish: the server running it stopped. No credit was spent for it.
            </p>
            {p.revealToken ? (
              <TokenForm sessionId={p.sessionId} token={p.revealToken} id="rerun" working="Running…">
                Run it now
              </TokenForm>
            ) : (
              <p>
                Contact <Support email={p.contactEmail} /> with the session id above to have it run.
              </p>
            )}
          </>
        )}
      </section>
    );
  }
  const result = p.firstAnswer ?? { status: 500, text: "" };
  return (
    <section>
      <h2>Your first call</h2>
      <p id="first-call" class={result.status === 200 ? "status-ok" : "status-err"}>
        {result.status !== 200
          ? `It failed with ${result.status}; no credit was spent.`
          : result.free
            ? "Ran with the payload you sent (free during the beta: no credit spent)."
            : "Ran with the payload you sent (one credit spent)."}
      </p>
      <CodeBlock>{result.text}</CodeBlock>
    </section>
  );
}

function KeyReveal(p: SuccessProps) {
  if (p.apiKey) {
    return (
      <section>
        <h2>Your API key</h2>
        <p>
          <strong>Shown once.</strong> Copy it now; we keep only its hash.
        </p>
        <CodeBlock id="api-key">{p.apiKey}</CodeBlock>
      </section>
    );
  }
  const end = packEnd(p.standing);
  if (end && p.reveal === "ready") {
    // Refunded or charged back, the key holds no call and never will: it is not handed out. Disputed,
    // it is held too: every call with it is refused (403) until the dispute is decided, and a lost
    // one revokes it for good. Nothing is lost by waiting: the reveal stays stored, and this page
    // offers it again once a dispute is decided in our favour.
    return (
      <p id="key-withheld" class="muted">
        {end === "disputed"
          ? "Your key is held while the card payment is disputed: it could make no call until the dispute is decided. If it is decided in our favour, this page offers it again."
          : `The payment ${ENDED[end].payment}, so this checkout's key holds no calls: it is not shown.`}
      </p>
    );
  }
  if (p.reveal === "ready" && p.revealToken) {
    return (
      <section>
        <h2>Your API key</h2>
        <p>It is shown once, when you ask for it: have somewhere to paste it.</p>
        <TokenForm sessionId={p.sessionId} token={p.revealToken} id="reveal" working="Revealing…">
          Reveal my key
        </TokenForm>
      </section>
    );
  }
  // A buyer back here has usually lost the key: what they can do, not only why it is gone. A pack
  // whose payment was refunded, charged back or is disputed has nothing left to refund.
  return (
    <p id="key-gone" class="muted">
      The API key for this checkout was already shown once and is not stored in clear, so it cannot be shown
      again.{" "}
      {end ? (
        <>
          The payment {ENDED[end].payment}
          {end === "disputed"
            ? ", so its key makes no call until the dispute is decided"
            : ", so its key makes no call"}
          : a new checkout gives a new key.
        </>
      ) : (
        <>
          Lost it? Write to <Support email={p.contactEmail} /> with the session id above: the pack can be
          refunded, and a new checkout gives a new key.
        </>
      )}
    </p>
  );
}

/**
 * The Reveal form on a page whose check with Stripe a budget postponed (the session still open in
 * D1): the views' budget is per client IP and anyone on the buyer's network can spend it, so the
 * page could not tell the buyer it was paid and offered no Reveal, whose own budget (per session,
 * payments/quotas.ts) was then out of reach. The POST asks Stripe on that budget and grants only
 * if Stripe says paid.
 */
function CheckAndReveal(p: SuccessProps) {
  if (!p.revealToken || p.session?.status !== "open") return null;
  return (
    <>
      <p>If you have paid, you need not wait: this button checks with Stripe and shows your key once.</p>
      <TokenForm sessionId={p.sessionId} token={p.revealToken} id="check-reveal" working="Checking…">
        Check payment and reveal my key
      </TokenForm>
    </>
  );
}

export function SuccessPage(p: SuccessProps) {
  const s = p.session;
  if (!s && !p.remote?.paid) {
    return (
      <Layout title="Checkout not found">
        <h1>We do not know this checkout</h1>
        <p>
          No checkout session <code class="long-id">{p.sessionId}</code> was created here. If you paid,
          contact <Support email={p.contactEmail} /> with this id.
        </p>
        <p>
          <a href="/docs">Back to the docs</a>
        </p>
      </Layout>
    );
  }
  const paid = s?.status === "complete" || p.remote?.paid === true;
  const expired = s?.status === "expired" || p.remote?.status === "expired";
  const calls = s?.calls ?? Number(p.remote?.metadata.calls);
  const cents = s?.amount_cents ?? p.remote?.amountCents ?? 0;
  const name = p.skill?.name ?? s?.skill_id ?? "";
  const endpoint = p.skill ? `${p.baseUrl}${p.skill.endpoint}` : `${p.baseUrl}/api/skills/…`;
  const example = p.skill ? JSON.stringify(p.skill.example_request) : "{}";
  const end = packEnd(p.standing);
  const curl = `curl -s -X POST ${endpoint} \\\n  -H 'authorization: Bearer ${p.apiKey ?? "mk_your_key"}' \\\n  -H 'content-type: application/json' \\\n  -d ${shQuote(example)}`;
  const heading = paid
    ? end
      ? ENDED[end].heading
      : "Payment received"
    : expired
      ? "This checkout expired"
      : s?.payment_failed_at
        ? "The payment failed"
        : "Waiting for the payment";
  // buy.js also guards the postponed page's Reveal form (sent once: a second POST loses the key).
  return (
    <Layout
      title={paid ? heading : "Checkout"}
      scripts={paid || p.refresh || p.stripeCheckPostponed ? ["/assets/buy.js"] : undefined}
    >
      <h1 id="checkout-heading">{heading}</h1>
      {p.refresh ? <Refreshing seconds={p.refresh} /> : null}
      {/* What an update replaces (buy.js, checkout-refresh.ts), with the heading above. */}
      <div id="checkout-state" data-refresh={p.refresh ? String(p.refresh) : undefined}>
        {paid ? (
          <>
            <p class="lead">
              {calls} calls of {name} for ${(cents / 100).toFixed(2)}.
            </p>
            <dl class="facts">
              <dt>Calls left</dt>
              <dd id="calls-left">{callsLeftText(p.standing)}</dd>
              <dt>Session</dt>
              <dd>
                <code class="long-id">{p.sessionId}</code>
              </dd>
            </dl>
            <KeyReveal {...p} />
            <FirstCall {...p} />
            {end ? null : (
              <>
                <h2>Use it</h2>
                <CodeBlock>{curl}</CodeBlock>
                <p>
                  Check the balance with <code>GET /api/credits</code> and the same <code>Authorization</code>{" "}
                  header.
                </p>
              </>
            )}
          </>
        ) : expired ? (
          <p>
            Nothing was charged. <a href={`/docs/${p.skill?.slug ?? ""}`}>Start again from the docs</a>.
          </p>
        ) : s?.payment_failed_at ? (
          <p>
            Your bank did not complete the payment, so no credits were granted.{" "}
            <a href={`/docs/${p.skill?.slug ?? ""}`}>Start again from the docs</a>.
          </p>
        ) : p.stripeCheckPostponed ? (
          // Not "Stripe has not confirmed": Stripe was not asked, and the payment may well be there.
          <>
            <p>
              We could not check with Stripe just now whether checkout{" "}
              <code class="long-id">{p.sessionId}</code> is paid (too many checks from your network this
              minute).{" "}
              {p.refresh ? (
                "This page keeps checking, and asks Stripe again once your network's checks allow it."
              ) : (
                <>
                  Try again in a minute: <a href={successPath(p.sessionId)}>reload the checkout page</a>
                  {p.revealToken ? " or use the button below" : ""}.
                </>
              )}
            </p>
            <CheckAndReveal {...p} />
          </>
        ) : p.posted ? (
          // A POST never updates itself (CheckAndReveal's answer when Stripe says it is not paid).
          <p>
            Stripe has not confirmed checkout <code class="long-id">{p.sessionId}</code> yet. If you paid just
            now, <a href={successPath(p.sessionId)}>open the checkout page</a>: it keeps checking.
          </p>
        ) : (
          <p>
            Stripe has not confirmed checkout <code class="long-id">{p.sessionId}</code> yet. This page
            updates by itself for a while; reload it later if your payment method takes longer.
          </p>
        )}
      </div>
    </Layout>
  );
}

/**
 * A page that is not final checks again every few seconds. With JavaScript, buy.js fetches this
 * same GET page and replaces #checkout-state (and the heading) only when it changed, saying so in
 * the status line: a reload every 3 s sent a screen reader back to the top and lost the keyboard's
 * place, for up to 30 minutes (WCAG 2.2.1, F41). The line's button stops and resumes it. Without
 * JavaScript the page reloads itself as before: the meta refresh inside <noscript> is read only
 * when scripts are off (with them on, <noscript> holds text, not elements). It sits in the body
 * because Layout renders the head; browsers act on a meta refresh wherever it is. It is written raw:
 * hono/jsx hoists a <meta> element into the head, out of the <noscript>, where it would reload
 * every browser.
 */
function Refreshing({ seconds }: { seconds: number }) {
  return (
    <>
      {raw(`<noscript><meta http-equiv="refresh" content="${Math.trunc(seconds)}"></noscript>`)}
      <p id="refresh-bar" class="actions" hidden>
        <span id="refresh-status" class="muted" role="status" />
        <button type="button" id="refresh-stop" class="button secondary">
          Stop checking
        </button>
      </p>
    </>
  );
}

/** Seconds after which a GET of the success page should check again (SuccessPage), or undefined. */
export function successRefresh(session: SessionRow | null, paid: boolean): number | undefined {
  if (!session) return undefined;
  // A card payment lands within seconds; a bank debit can take days, and nobody watches for that long.
  const recent = Date.now() - session.created_at < 30 * 60_000;
  const waitingForPayment = session.status === "open" && !session.payment_failed_at && !paid && recent;
  // A first call whose run died stops the refresh: its page says what happened and what to do.
  return waitingForPayment || firstCallState(session) === "running" ? 3 : undefined;
}

export function CancelPage({ skill, skillId }: { skill: Skill | undefined; skillId: string }) {
  return (
    <Layout title="Checkout cancelled">
      <h1>Checkout cancelled</h1>
      <p class="lead">Nothing was charged.</p>
      {skill ? (
        <p>
          <a class="button" href={`/docs/${skill.slug}`}>
            Back to {skill.name}
          </a>{" "}
          <a class="button secondary" href={`/applet?skill=${encodeURIComponent(skill.id)}`}>
            Back to the applet
          </a>
        </p>
      ) : (
        <p>
          {skillId ? (
            <>
              We do not sell a skill called <code>{skillId}</code>.{" "}
            </>
          ) : null}
          <a class="button" href="/docs">
            Browse the skills
          </a>
        </p>
      )}
      <p class="muted">You can also pay per call with x402, with no checkout at all.</p>
    </Layout>
  );
}

/**
 * The success page while this deployment cannot read its records (a storage binding missing): the
 * browser Stripe sent back is told its payment is safe and to come back, never why (the JSON
 * refusal names the binding for API clients and /health for the operator). `retry`: this page's own
 * address, the key's Reveal included (its form is shown again there).
 */
export function CheckoutUnavailablePage({ retry }: { retry: string }) {
  return (
    <Layout title="Checkout page unavailable">
      <h1>This page cannot be shown right now</h1>
      <p class="lead">Your payment is safe, and credits already bought are kept.</p>
      <p>
        Our records cannot be read for a moment. Try again in a few minutes: if you were revealing your key,
        press Reveal my key again there.
      </p>
      <p>
        <a class="button" href={retry}>
          Try again
        </a>
      </p>
    </Layout>
  );
}
