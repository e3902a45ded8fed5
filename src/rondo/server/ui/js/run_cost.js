// A run's tokens and price in its footer (issue 25, SPEC O6), from the `metrics` of its
// `run_end` lifecycle event. A price is shown only as the server gave it: "unpriced" when any
// model call has none (never "$0"), "free (local)" when every call ran on this machine. A run
// rebuilt from stored records (after a reload) gets its price from the session's usage route;
// without that (an older server) it shows tokens only.

const NUMBER = new Intl.NumberFormat("en-US");

/** Tokens for people: "12,345 tokens (10,000 cached, 1,200 written)". */
export function tokensLabel(metrics) {
  const total = metrics?.total_tokens || 0;
  if (!total) return "";
  const notes = [];
  if (metrics.cached_tokens) notes.push(`${NUMBER.format(metrics.cached_tokens)} cached`);
  if (metrics.cache_write_tokens) notes.push(`${NUMBER.format(metrics.cache_write_tokens)} written`);
  return `${NUMBER.format(total)} tokens${notes.length ? ` (${notes.join(", ")})` : ""}`;
}

/** Dollars, with the figures a cheap call needs: "$0.0123", "$1.25". */
export function formatUsd(value) {
  if (value >= 1) return `$${value.toFixed(2)}`;
  if (value >= 0.0001) return `$${value.toFixed(4)}`;
  return `$${value.toPrecision(2)}`;
}

/**
 * What the run cost: `{ kind, text }` with kind "priced", "unpriced" or "free", or null when
 * there is nothing to say (no model call reported usage, or the price was not recorded).
 */
export function costOf(metrics) {
  if (!metrics || !("cost_usd" in metrics)) return null; // rebuilt without the usage route
  const calls = metrics.model_calls || 0;
  const free = metrics.free_calls || 0;
  const unpriced = metrics.unpriced_calls || 0;
  if (metrics.cost_usd === null || metrics.cost_usd === undefined) {
    if (!unpriced) return null; // no call reported usage: nothing was priced or left unpriced
    return { kind: "unpriced", text: unpriced === calls ? "unpriced" : `unpriced (${unpriced} of ${calls} calls)` };
  }
  if (free && free >= calls && metrics.cost_usd === 0) return { kind: "free", text: "free (local)" };
  const text = formatUsd(metrics.cost_usd);
  return { kind: "priced", text: free ? `${text} + ${free} free (local)` : text };
}

/** The footer's cost pieces as nodes: a tokens span and a cost span (either may be absent). */
export function costBits(metrics, h) {
  const bits = [];
  const tokens = tokensLabel(metrics);
  if (tokens) bits.push(h("span", { class: "run-tokens" }, tokens));
  const cost = costOf(metrics);
  if (cost) bits.push(h("span", { class: `run-cost is-${cost.kind}`, dataset: { cost: cost.kind } }, cost.text));
  return bits;
}
