/**
 * Runs `check`, rethrowing a failure with its message escaped as JSON: a message holding a lone
 * surrogate (an assertion's diff of "\ud800") breaks the channel to the test reporter, and the run
 * ends as "invalid UTF-8 sequence" with no test named.
 */
export function reportable<A extends unknown[]>(check: (...args: A) => void): (...args: A) => void {
  return (...args) => {
    try {
      check(...args);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      throw new Error(message.isWellFormed() ? message : JSON.stringify(message));
    }
  };
}
