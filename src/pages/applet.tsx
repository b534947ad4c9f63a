import type { PublicConfig } from "../config";
import { priceLabel } from "../discovery/identity";
import { skills } from "../skills/registry";
import { Layout } from "./layout";
import { packLabel } from "./pack";
import { CodeBlock } from "./scroll-box";

/**
 * Try-it page. Its script (static/assets/applet.js, built from src/browser/applet.ts) only talks to
 * this origin; a browser wallet signs in its own window.
 */
export function AppletPage({ cfg }: { cfg: PublicConfig }) {
  const first = skills[0];
  return (
    <Layout
      title="Try it"
      description="Send a request to any skill, see its price, and pay with a browser wallet or card credits."
      scripts={["/assets/applet.js"]}
    >
      <h1>Try a skill</h1>
      <p>
        Pick a skill, edit the body and send. Without payment you see the decoded <code>402</code> challenge:
        the price, the network ({cfg.network}) and who is paid. Then pay that call with a browser wallet
        (x402, USDC), buy a pack of calls by card, or paste a card-credit key to make the paid call.
      </p>
      {/*
        No control has a name, so a native submission (scripts off, or Enter before the deferred
        applet.js runs) carries nothing: the card key and the body can never land in a URL, a history
        entry or a log. Send stays disabled until the script has wired the form.
      */}
      <form id="applet" class="applet">
        <label for="skill">Skill</label>
        <select id="skill">
          {skills.map((s) => (
            <option
              value={s.endpoint}
              data-skill-id={s.id}
              data-pack={cfg.cardpayEnabled ? packLabel(s) : undefined}
              data-example={JSON.stringify(s.example_request, null, 2)}
            >
              {`${s.name} (${priceLabel(s)})`}
            </option>
          ))}
        </select>
        <label for="body">JSON body</label>
        <textarea id="body" rows={10} spellcheck={false} aria-describedby="body-error">
          {JSON.stringify(first?.example_request ?? {}, null, 2)}
        </textarea>
        <p id="body-error" class="status-err" role="alert" hidden />
        <label for="key">Card-credit key (optional)</label>
        <input id="key" type="password" autocomplete="off" placeholder="mk_…" />
        <button id="send" type="submit" class="button" disabled>
          Send
        </button>
      </form>
      <noscript>
        <p class="status-err">This page sends requests with JavaScript; turn it on to try a skill.</p>
      </noscript>
      {/*
        Only the short status lines are live regions: a live section read the whole answer aloud
        (osint-graph's raw JSON is ~5 KB) and announced #pay-status twice. The answer itself is
        read on request, from the Raw answer below.
      */}
      <section aria-labelledby="answer-heading">
        <h2 id="answer-heading">Answer</h2>
        <p id="status" class="muted" role="status">
          Nothing sent yet.
        </p>
        <p id="credits" role="status" hidden />
        <div id="challenge" hidden>
          <h3>Payment required</h3>
          <p id="c-why" class="muted" />
          <dl class="facts">
            <dt>Price</dt>
            <dd id="c-price" />
            <dt>Network</dt>
            <dd id="c-network" />
            <dt>Pay to</dt>
            <dd id="c-payto" />
            <dt>Asset</dt>
            <dd id="c-asset" />
          </dl>
          <p class="actions">
            <button id="pay-wallet" type="button" class="button" hidden>
              Pay with browser wallet
            </button>
            <button id="buy" type="button" class="button secondary" hidden>
              Buy calls by card
            </button>
          </p>
          <p id="no-wallet" class="muted" hidden>
            No browser wallet found. Install one (it signs a USDC authorization; nothing is sent until the
            call succeeds), or pay from code with <code>@x402/fetch</code> as the docs show.
          </p>
          <p id="pay-status" role="status" />
        </div>
        <div id="receipt" hidden>
          <h3>Paid</h3>
          <dl class="facts">
            <dt>Transaction</dt>
            <dd>
              <code id="r-tx" />
            </dd>
            <dt>Network</dt>
            <dd id="r-network" />
            <dt>Payer</dt>
            <dd id="r-payer" />
          </dl>
        </div>
        <details id="raw" open>
          <summary>Raw answer</summary>
          <CodeBlock id="output" />
        </details>
      </section>
    </Layout>
  );
}
