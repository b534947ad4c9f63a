import { Layout } from "./layout";

/**
 * What a dashboard form's refusal says in a browser: the same words the JSON answer carries, and the
 * way back. A maintainer who pressed Mark paid twice, or sent a page read before the ledger changed,
 * was left on a raw `{"detail": ...}` document with no link to the dashboard.
 */
export function AdminRefusalPage(props: { status: number; messages: string[] }) {
  return (
    <Layout title="Form not accepted">
      <h1>Form not accepted</h1>
      <p class="muted">HTTP {props.status}</p>
      <div role="alert" id="refusal">
        {props.messages.map((m) => (
          <p>{m}</p>
        ))}
      </div>
      <p>
        <a href="/admin">Back to the dashboard</a> (read again: it shows the records as they are now).
      </p>
    </Layout>
  );
}
