// The queue page's advice: the settings the service advises from the queue's own history for a
// goal (getQueueAdvice, docs/queue-semantics.md §13), asked for on demand only and never on
// the page's refresh; and auto-tuning's record (whether it is on, its last check, the change
// it proposed and the changes it made).

import { call } from './api.js';
import { badge, h, replace, table, whenChanged } from './dom.js';
import { duration, figure, percent, timeElement } from './format.js';

/** The goals the advice can optimise, as `getQueueAdvice` names them. */
const GOALS = [
  { id: 'mostMerges', label: 'Most merges per hour' },
  { id: 'fewestCiRuns', label: 'Fewest CI runs per merge' },
  { id: 'fastestWithinBudget', label: 'Shortest time to merge within a CI budget' },
];

/** The goal that takes a CI budget (`ciRunsPerHour`). */
const BUDGET_GOAL = 'fastestWithinBudget';

function goalLabel(id) {
  const goal = GOALS.find((g) => g.id === id);
  return goal ? goal.label.toLowerCase() : id;
}

/** Tuned settings (`TunedSettings`) as words, one per setting, to compare two of them:
 * concurrency, batching with its bisection, optimistic merge, pending-failure depth, adaptive
 * pending failure. In one line, settings are their `summary`. */
function settingWords(s) {
  return [
    `concurrency ${s.concurrency}`,
    s.batch ? `batches of ${s.batchingMinSize} with bisection ${s.bisectionConcurrency}` : 'no batching',
    s.canOptimisticallyMerge ? 'optimistic merge' : 'no optimistic merge',
    `depth ${s.pendingFailureDepth}`,
    s.adaptivePendingFailure ? 'adaptive' : 'not adaptive',
  ];
}

/** A change of the tuned settings: each setting that differs, `before → after`. */
function describeChange(before, after) {
  const was = settingWords(before);
  const now = settingWords(after);
  const changed = now.map((w, i) => (w === was[i] ? null : `${was[i]} → ${w}`)).filter(Boolean);
  return changed.length ? changed.join('; ') : 'no setting changed';
}

function sameSettings(a, b) {
  return JSON.stringify(settingWords(a)) === JSON.stringify(settingWords(b));
}

/** The estimates of the window, each with the observations behind it. */
function renderEstimates(e) {
  const rows = [
    ['Arrivals per hour', figure(e.arrivalsPerHour.value), e.arrivalsPerHour.count, 'heads'],
    ['Mean CI minutes', figure(e.ciMinutes.value), e.ciMinutes.count, 'runs'],
    ['Broken rate', percent(e.brokenRate.value, 1), e.brokenRate.count, 'heads'],
    ['Flake rate', percent(e.flakeRate.value, 1), e.flakeRate.count, 'runs'],
    ['Conflict rate', percent(e.conflictRate.value, 1), e.conflictRate.count, 'pull requests'],
    ['Backlog (waiting on average)', figure(e.backlog.value), e.backlog.count, 'entries'],
  ];
  return table('The queue\'s workload, estimated from the window',
    ['Estimate', 'Value', 'Observations'],
    rows.map(([name, value, count, unit]) => h('tr', {},
      h('th', { scope: 'row' }, name),
      h('td', { class: 'num' }, value),
      h('td', { class: 'num' }, `${count} ${unit}`))),
    { id: 'advice-estimates' });
}

/** The candidates: the current settings first, then those the search decided on, the advised
 * one marked (a candidate with the current settings is the current row). */
function renderCandidates(advice) {
  const rows = [{ candidate: advice.current, current: true, advised: !advice.changesSettings }];
  advice.candidates.forEach((c, i) => {
    if (sameSettings(c.settings, advice.current.settings)) return;
    rows.push({ candidate: c, current: false, advised: i === 0 });
  });
  return table('Settings projected on the estimated workload, current first',
    ['Settings', 'Merges/h', 'Mean min to merge', 'p95 min to merge', 'CI runs per merge',
      'CI runs/h', 'Keeps up'],
    rows.map(({ candidate, current, advised }) => {
      const p = candidate.projection;
      return h('tr', { class: advised ? 'advised' : null, 'data-current': current ? 'true' : null,
        'data-advised': advised ? 'true' : null },
      h('th', { scope: 'row' }, candidate.settings.summary,
        current ? [' ', badge('current')] : null,
        advised ? [' ', badge('advised')] : null),
      h('td', { class: 'num' }, figure(p.mergesPerHour, 2)),
      h('td', { class: 'num' }, figure(p.meanMinutesToMerge)),
      h('td', { class: 'num' }, figure(p.p95MinutesToMerge)),
      h('td', { class: 'num' }, figure(p.ciRunsPerMerge, 2)),
      h('td', { class: 'num' }, figure(p.ciRunsPerHour)),
      h('td', {}, p.keepsUp ? 'yes' : h('strong', { class: 'warn' }, 'no')));
    }),
    { id: 'advice-candidates' });
}

/** An answer of `getQueueAdvice`: its window, its estimates, then the advice or why there is
 * none. */
function renderAnswer(answer) {
  const w = answer.window;
  const budget = answer.goal === BUDGET_GOAL ? ` of ${answer.ciRunsPerHour} CI runs per hour` : '';
  const parts = [
    h('p', { id: 'advice-window' }, `For ${goalLabel(answer.goal)}${budget}, from the history between `,
      timeElement(h, w.from), ' and ', timeElement(h, w.to), ` (${duration(w.hours * 3600)})`,
      w.shortened ? '; the window was shortened to its most recent conclusions and runs.' : '.'),
    renderEstimates(answer.estimates),
  ];
  if (answer.noAdvice) {
    parts.push(h('p', { id: 'advice-none', class: 'conclusion' },
      h('strong', {}, 'No advice: '), answer.noAdvice.message));
    return parts;
  }
  const a = answer.advice;
  parts.push(
    h('p', { id: 'advice-summary' }, h('strong', {}, a.changesSettings ? 'Advised: ' : 'Keep the current settings: '),
      a.summary),
    a.withinBudget ? null
      : h('p', { class: 'warn' }, 'No setting is within the budget: the advised one uses the fewest CI runs.'),
    renderCandidates(a),
    h('p', { class: 'muted' }, `${a.evaluations} projections, ${a.simulatedPrs} simulated pull requests.`));
  return parts;
}

/** Auto-tuning's record: whether it is on, its last check, its proposed change, its changes, an operator's last change. */
function renderTuning({ autoTune, tuning }) {
  const changes = tuning.changes || [];
  const change = (c) => h('span', {}, describeChange(c.before, c.after), h('div', { class: 'muted' }, c.reason));
  return [
    h('dl', { class: 'facts' },
      h('dt', {}, 'Auto-tuning'), h('dd', { id: 'tuning-state' }, autoTune ? badge('running', 'on') : badge('off')),
      h('dt', {}, 'Last check'), h('dd', { id: 'tuning-checked' },
        tuning.checkedAt ? timeElement(h, tuning.checkedAt) : 'never'),
      h('dt', {}, 'Proposed change'), h('dd', { id: 'tuning-proposed' },
        tuning.proposed ? [timeElement(h, tuning.proposed.at), ': ', change(tuning.proposed)] : 'none'),
      tuning.operatorChangedAt ? h('dt', {}, 'Changed by an operator') : null,
      tuning.operatorChangedAt
        ? h('dd', { id: 'tuning-operator' }, timeElement(h, tuning.operatorChangedAt),
          h('div', { class: 'muted' }, 'No automatic change for 7 days after.'))
        : null),
    changes.length
      ? table('Changes made by auto-tuning, oldest first', ['When', 'Before → after', 'Reason'],
        changes.map((c) => h('tr', {},
          h('td', {}, timeElement(h, c.at)),
          h('td', {}, describeChange(c.before, c.after)),
          h('td', {}, c.reason))),
        { id: 'tuning-changes' })
      : h('p', { class: 'muted', id: 'tuning-changes' }, 'No change made yet.'),
  ];
}

/** Mounts the advice in `container` for the queue `target` (`{repo, targetBranch}`). `app`'s
 * `failed` handles a refused token. `showTuning` renders auto-tuning's record from the page's
 * regular data (the queue of `getQueueActivity`); until it is called, an advice answer's
 * record is shown. */
export function adviceSection(container, { target, app }) {
  const goal = h('select', { id: 'advice-goal', 'data-focus': 'advice-goal' },
    GOALS.map((g) => h('option', { value: g.id }, g.label)));
  const budget = h('input', { id: 'advice-budget', type: 'number', min: '0', step: 'any',
    inputmode: 'decimal', value: '20', 'aria-describedby': 'advice-status' });
  const budgetField = h('span', { class: 'field', hidden: true },
    h('label', { for: 'advice-budget' }, 'CI runs per hour'), budget);
  const button = h('button', { type: 'submit', id: 'advice-run', class: 'primary' }, 'Advise');
  const form = h('form', { id: 'advice-form', class: 'filters', novalidate: true,
    'aria-label': 'Ask for advice' },
  h('label', { for: 'advice-goal' }, 'Goal'), goal, budgetField, button);
  const status = h('p', { id: 'advice-status', class: 'muted', role: 'status', 'aria-live': 'polite' },
    'Advice reads the last 7 days of the queue\'s history and takes a few seconds.');
  const result = h('div', { id: 'advice-result' });
  const tuningPart = h('div', { id: 'tuning' }, h('p', { class: 'muted' }, 'Loading…'));
  container.append(
    form, status, result,
    h('h3', { id: 'tuning-title' }, 'Auto-tuning'),
    tuningPart);
  let regular = false;
  let busy = false;
  const tuning = whenChanged((record) => replace(tuningPart, renderTuning(record)));

  function setStatus(text, { error = false } = {}) {
    status.textContent = text;
    status.classList.toggle('error', error);
    status.classList.toggle('muted', !error);
  }

  goal.addEventListener('change', () => {
    budgetField.hidden = goal.value !== BUDGET_GOAL;
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (busy) return;
    const body = { ...target, goal: goal.value };
    budget.removeAttribute('aria-invalid');
    if (goal.value === BUDGET_GOAL) {
      const runs = Number(budget.value);
      if (!budget.value.trim() || !Number.isFinite(runs) || runs <= 0) {
        budget.setAttribute('aria-invalid', 'true');
        setStatus('Enter a CI budget: a number of runs per hour greater than 0.', { error: true });
        budget.focus();
        return;
      }
      body.ciRunsPerHour = runs;
    }
    busy = true;
    const hadFocus = document.activeElement === button;
    button.disabled = true;
    button.textContent = 'Advising…';
    result.setAttribute('aria-busy', 'true');
    setStatus('Advising: reading the queue\'s history and projecting settings…');
    try {
      const answer = await call('getQueueAdvice', body);
      replace(result, renderAnswer(answer));
      setStatus(answer.noAdvice
        ? `No advice: ${answer.noAdvice.message}.`
        : `Advice for ${goalLabel(answer.goal)}: ${answer.advice.summary}`);
      if (!regular) tuning(answer);
    } catch (e) {
      if (e.status === 401) app.failed(e);
      else setStatus(`Could not advise: ${e.message}`, { error: true });
    } finally {
      busy = false;
      button.disabled = false;
      button.textContent = 'Advise';
      result.removeAttribute('aria-busy');
      if (hadFocus && (!document.activeElement || document.activeElement === document.body)) button.focus();
    }
  });

  return {
    /** Auto-tuning's record from a queue (`autoTune`, `tuning`), shown when it changed. */
    showTuning(queue) {
      regular = true;
      tuning({ autoTune: queue.autoTune, tuning: queue.tuning || { changes: [] } });
    },
  };
}
