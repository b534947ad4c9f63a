import { Layout } from "./layout";

/** An unknown skill under /docs/. */
export function NotFoundPage({ slug }: { slug: string }) {
  return (
    <Layout title="Not found">
      <h1>No skill called “{slug}”</h1>
      <p>
        See <a href="/docs">all skills</a>.
      </p>
    </Layout>
  );
}

/** The 404 page of any unknown address, for requests that accept HTML. */
export function PageNotFound({ path }: { path: string }) {
  return (
    <Layout title="Not found">
      <h1>Nothing at {path}</h1>
      <p>
        See <a href="/">the home page</a>, <a href="/docs">all skills</a> or{" "}
        <a href="/openapi.json">the API description</a>.
      </p>
    </Layout>
  );
}
