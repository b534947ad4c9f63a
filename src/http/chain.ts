import type { Context, MiddlewareHandler, Next } from "hono";
import type { AppEnv } from "../env";

type OnError = (err: Error, c: Context<AppEnv>) => Response | Promise<Response>;

/**
 * Runs `steps` as one Hono handler, the way Hono's compose runs a route's handlers: in order, each
 * step's returned Response becoming `c.res` unless one was set, a step that throws answered by
 * `onError` at that step (so the steps around it see its answer in `c.res`, as a claim or a credit
 * given back after a failure needs), `next()` once per step, and after the last step the route's
 * own `next`. The difference is the cost: Hono wraps every step in an async function of its own,
 * two more promise jobs per step and per request, and a step that only passes the call on
 * (`return next()`) is wrapped here in nothing, since the step after it settled `c.res` already
 * (docs/PERFORMANCE.md, stop 36: the skill chain's 14 steps).
 *
 * Where it differs from Hono's compose, and why no skill step (routes/skills.ts) reaches it:
 * - an `onError` that throws is not caught again at a pass-through step; answerError only builds
 *   an answer and does not throw;
 * - `await next()` resolves to undefined, not the Context; no step uses what next() resolves to;
 * - `c.req.routeIndex` is not set per step; nothing in src reads it;
 * - a step that neither answers nor calls `next()` (the last handler included) leaves the answer
 *   unset, and the route's `next` is not called: Hono then answers as for a handler that returned
 *   nothing, its "Context is not finalized" error, a 500 (the app's middleware make every route a
 *   composed one; a chain that is a route's only handler in an app without middleware would get
 *   Hono's 404 instead). Steps registered as Hono handlers give the same 500; every skill step
 *   returns `next()`, an answer or throws.
 */
export function chain(steps: MiddlewareHandler<AppEnv>[], onError: OnError): MiddlewareHandler<AppEnv> {
  return (c, routeNext) => {
    let index = -1;
    const failed = async (err: unknown) => {
      if (!(err instanceof Error)) throw err;
      c.error = err;
      const res = await onError(err, c);
      if (res) c.res = res;
    };
    const dispatch = (i: number): Promise<void> => {
      if (i <= index) return Promise.reject(new Error("next() called multiple times"));
      index = i;
      const step: MiddlewareHandler<AppEnv> | Next | undefined = i < steps.length ? steps[i] : routeNext;
      if (!step) return Promise.resolve();
      let passedOn: Promise<void> | undefined;
      let out: ReturnType<MiddlewareHandler<AppEnv>> | Response | undefined;
      try {
        out = step(c, () => {
          passedOn = dispatch(i + 1);
          return passedOn;
        });
      } catch (err) {
        return failed(err);
      }
      if (out === passedOn) return out as Promise<void>;
      return Promise.resolve(out).then((res) => {
        if (res && c.finalized === false) c.res = res;
      }, failed);
    };
    return dispatch(0);
  };
}
