import type { PublicConfig } from "../config";
import { priceLabel } from "../discovery/site";
import { skills } from "../skills/registry";
import { Layout } from "./layout";

/** Try-it page: its script (static/assets/applet.js) only talks to this origin. */
export function AppletPage({ cfg }: { cfg: PublicConfig }) {
  const first = skills[0];
  return (
    <Layout
      title="Try it"
      description="Send a request to any skill and see its price and answer."
      scripts={["/assets/applet.js"]}
    >
      <h1>Try a skill</h1>
      <p>
        Pick a skill, edit the body and send. Without payment you will see the decoded <code>402</code>{" "}
        challenge: the price, the network ({cfg.network}) and who is paid. Paste a card-credit key to make the
        paid call.
      </p>
      <form id="applet" class="applet">
        <label for="skill">Skill</label>
        <select id="skill" name="skill">
          {skills.map((s) => (
            <option value={s.endpoint} data-example={JSON.stringify(s.example_request, null, 2)}>
              {`${s.name} (${priceLabel(s)})`}
            </option>
          ))}
        </select>
        <label for="body">JSON body</label>
        <textarea id="body" name="body" rows={10} spellcheck={false}>
          {JSON.stringify(first?.example_request ?? {}, null, 2)}
        </textarea>
        <label for="key">Card-credit key (optional)</label>
        <input id="key" name="key" type="password" autocomplete="off" placeholder="mk_…" />
        <button id="send" type="submit" class="button">
          Send
        </button>
      </form>
      <section aria-live="polite">
        <h2>Answer</h2>
        <p id="status" class="muted">
          Nothing sent yet.
        </p>
        <div id="challenge" hidden>
          <h3>Payment required</h3>
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
        </div>
        <pre>
          <code id="output" />
        </pre>
      </section>
    </Layout>
  );
}
