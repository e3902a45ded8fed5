// The Evals tab (issue 24 item 4): add the open session to an eval set, run a set, and read
// the results — case, metric, score, threshold, pass/fail, tokens and cost — with each failing
// case's expected-vs-actual response and tool trajectory. It talks only to the eval routes
// google-adk's dev server has (plus rondo's `run-report`, the same run with rondo's report).

import { h, replace } from "./dom.js";

const enc = encodeURIComponent;
const METRICS = [
  { metricName: "tool_trajectory_avg_score", threshold: 1.0 },
  { metricName: "response_match_score", threshold: 0.8 },
];

function score(value) {
  return value === null || value === undefined ? "n/a" : String(Math.round(value * 1000) / 1000);
}

function calls(list) {
  if (!list.length) return "(none)";
  return list.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join(", ");
}

/** The diff of one invocation that fell short: what was expected beside what happened. */
function diff(invocation, index) {
  const row = (label, expected, actual) =>
    h("tr", {}, h("th", {}, label), h("td", { class: "eval-expected" }, expected), h("td", { class: "eval-actual" }, actual));
  return h(
    "table",
    { class: "eval-diff", dataset: { invocation: String(index + 1) } },
    h("thead", {}, h("tr", {}, h("th", {}, `Turn ${index + 1}: ${invocation.prompt}`), h("th", {}, "Expected"), h("th", {}, "Actual"))),
    h("tbody", {}, row("Response", invocation.expected_text, invocation.actual_text), row("Tools", calls(invocation.expected_tool_calls), calls(invocation.actual_tool_calls))),
  );
}

/** rondo's report as a table, failing cases' diffs under it. */
export function reportView(report) {
  const rows = [];
  for (const item of report.cases) {
    const cost = item.usage ? item.usage.cost : "";
    const tokens = item.usage && item.usage.calls ? item.usage.total_tokens.toLocaleString() : "-";
    if (item.error) {
      rows.push(h("tr", { class: "eval-fail" }, h("td", {}, item.eval_id), h("td", {}, "(run)"), h("td", {}, "-"), h("td", {}, "-"), h("td", {}, "ERROR"), h("td", {}, tokens), h("td", {}, cost)));
      continue;
    }
    item.metrics.forEach((m, i) => {
      const verdict = { passed: "PASS", failed: "FAIL", not_evaluated: "N/A" }[m.status];
      rows.push(
        h(
          "tr",
          { class: m.status === "failed" ? "eval-fail" : m.status === "passed" ? "eval-pass" : "", dataset: { case: item.eval_id, metric: m.metric } },
          h("td", {}, item.eval_id),
          h("td", {}, m.metric),
          h("td", {}, score(m.score)),
          h("td", {}, score(m.threshold)),
          h("td", { class: "eval-verdict" }, verdict),
          h("td", {}, i === 0 ? tokens : ""),
          h("td", {}, i === 0 ? cost : ""),
        ),
      );
    });
  }
  const table = h(
    "table",
    { class: "eval-results" },
    h("thead", {}, h("tr", {}, ["Case", "Metric", "Score", "Threshold", "Result", "Tokens", "Cost"].map((c) => h("th", {}, c)))),
    h("tbody", {}, rows),
  );
  const diffs = [];
  for (const item of report.cases) {
    if (item.passed) continue;
    const short = (index) => item.metrics.some((m) => m.per_invocation[index] !== null && m.per_invocation[index] < m.threshold);
    const shown = item.invocations.map((inv, index) => (short(index) ? diff(inv, index) : null)).filter(Boolean);
    diffs.push(h("section", { class: "eval-case", dataset: { failing: item.eval_id } }, h("h4", {}, `${item.eval_id} failed`), item.error ? h("p", {}, item.error) : shown));
  }
  const total = report.usage ? `${report.summary} · ${report.usage.total_tokens.toLocaleString()} tokens · ${report.usage.cost}` : report.summary;
  return h("div", { class: "eval-report" }, h("p", { class: "eval-summary" }, total), table, diffs);
}

export class EvalView {
  /** `target()` gives `{app, user, session}` of the open conversation (null without one). */
  constructor({ api, target, onError }) {
    this.api = api;
    this.target = target;
    this.onError = onError;
    this.setInput = h("input", { class: "input", placeholder: "eval set id (letters, digits, _)", "aria-label": "Eval set" });
    this.caseInput = h("input", { class: "input", placeholder: "case id", "aria-label": "Case id" });
    this.sets = h("select", { class: "input", "aria-label": "Eval sets" });
    this.results = h("div", { class: "eval-output" });
    this.el = h(
      "div",
      { class: "panel-pad eval-view" },
      h("h3", {}, "Add this session to an eval set"),
      h("div", { class: "eval-row" }, this.setInput, this.caseInput, h("button", { class: "btn btn-sm", type: "button", onClick: () => this.addSession() }, "Add session")),
      h("h3", {}, "Run an eval set"),
      h("div", { class: "eval-row" }, this.sets, h("button", { class: "btn btn-sm btn-primary", type: "button", onClick: () => this.run() }, "Run")),
      this.results,
    );
  }

  base(app) {
    return `/dev/apps/${enc(app)}`;
  }

  async refresh() {
    const target = this.target();
    if (!target) return;
    try {
      const { evalSetIds } = await this.api.json("GET", `${this.base(target.app)}/eval-sets`);
      const chosen = this.sets.value;
      replace(this.sets, evalSetIds.map((id) => h("option", { value: id }, id)));
      if (evalSetIds.includes(chosen)) this.sets.value = chosen;
    } catch (error) {
      this.onError(error.message, "Could not list the eval sets");
    }
  }

  async addSession() {
    const target = this.target();
    const setId = this.setInput.value.trim();
    if (!target || !target.session || !setId) {
      this.onError("Open a session and name an eval set first.", "Add to eval set");
      return;
    }
    const base = this.base(target.app);
    const caseId = this.caseInput.value.trim() || `case_${Date.now()}`;
    try {
      const { evalSetIds } = await this.api.json("GET", `${base}/eval-sets`);
      if (!evalSetIds.includes(setId)) await this.api.json("POST", `${base}/eval-sets`, { evalSet: { eval_set_id: setId, eval_cases: [] } });
      await this.api.json("POST", `${base}/eval-sets/${enc(setId)}/add-session`, { evalId: caseId, sessionId: target.session, userId: target.user });
      replace(this.results, h("p", { class: "eval-note" }, `Added this session to ${setId} as ${caseId}.`));
      await this.refresh();
      this.sets.value = setId;
    } catch (error) {
      this.onError(error.message, "Add to eval set");
    }
  }

  async run() {
    const target = this.target();
    const setId = this.sets.value;
    if (!target || !setId) return;
    replace(this.results, h("p", { class: "eval-note" }, `Running ${setId}…`));
    try {
      const { report } = await this.api.json("POST", `${this.base(target.app)}/eval-sets/${enc(setId)}/run-report`, { evalMetrics: METRICS });
      replace(this.results, reportView(report));
    } catch (error) {
      replace(this.results);
      this.onError(error.message, "Run eval set");
    }
  }
}

/** Add the Evals tab to the inspector (its tabs are built in inspector.js; this joins them). */
export function addEvalsTab(inspector, view) {
  inspector.panes.evals = view.el;
  view.el.hidden = true;
  inspector.body.append(view.el);
  const button = h("button", { class: "tab", type: "button", role: "tab", dataset: { tab: "evals" }, onClick: () => { inspector.selectTab("evals"); view.refresh(); } }, "Evals", h("span", { class: "tab-count" }));
  inspector.tabButtons.evals = button;
  inspector.el.querySelector(".tabs").append(button);
}
