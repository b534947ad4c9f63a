/**
 * Configuration problems are logged, but not per request: a bad setting is met by every request
 * (crawlers included) and one line per request buried the line a maintainer needs. A setting's
 * problem is logged once per isolate and value (a changed value is a new problem, logged again).
 * The value is kept only in this isolate's memory, never logged (it may be a secret).
 */
const loggedValues = new Map<string, string>();

export function logOncePerValue(
  setting: string,
  value: string | undefined,
  line: { level: "error" | "warn" | "info"; msg: string; [field: string]: unknown },
) {
  if (loggedValues.get(setting) === (value ?? "")) return;
  loggedValues.set(setting, value ?? "");
  const log = { info: console.log, warn: console.warn, error: console.error }[line.level];
  log(JSON.stringify(line));
}

/**
 * A line about something outsiders can repeat at will (a webhook's bad signature): at most one per
 * `windowMs` per isolate, so a flood does not fill the log, while a lasting problem keeps showing.
 * A clock that went back (tests that move Date.now) starts a new window.
 */
export function throttledLog(windowMs: number) {
  let last: number | undefined;
  return (line: { level: "error" | "warn"; msg: string; [field: string]: unknown }) => {
    const now = Date.now();
    if (last !== undefined && now >= last && now - last < windowMs) return;
    last = now;
    (line.level === "warn" ? console.warn : console.error)(JSON.stringify(line));
  };
}
