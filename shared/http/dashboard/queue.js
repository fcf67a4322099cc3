// One queue: the line as it is tested (each group's test branch, its pull requests, its run
// and CI), the waiting pull requests with their estimated time to merge, the last
// conclusions with their reasons, the last hour's histograms, pause / resume / drain, and the
// advice on its settings with auto-tuning's record.

import { call } from './api.js';
import { badge, ciLinks, h, replace, table, whenChanged } from './dom.js';
import { histogramChart } from './charts.js';
import { adviceSection } from './advice.js';
import { clock, duration, percent, pullHref, repoName, timeElement, words } from './format.js';

export const title = 'Queue';

/** The operator actions: the state each asks for, and when it is offered. */
const ACTIONS = [
  { id: 'pause', label: 'Pause', state: 'paused', when: ['running', 'draining'],
    text: 'Nothing starts testing and nothing merges until the queue is resumed; runs in flight finish and keep their results.' },
  { id: 'resume', label: 'Resume', state: 'running', when: ['paused', 'draining'],
    text: 'The queue starts testing and merging again.' },
  { id: 'drain', label: 'Drain', state: 'draining', when: ['running', 'paused'],
    text: 'New submissions are refused; tests already running finish and what passes merges. Groups in line that must test again, and bisections, still run; pull requests still waiting do not start: they stay until the queue is resumed or they are cancelled.' },
];

export function mount(main, params, app) {
  const { repo, branch } = params;
  const target = { repo, targetBranch: branch };
  const name = `${repoName(repo)} → ${branch}`;
  document.title = `${name} · Merge queue`;
  const state = h('span', { id: 'queue-state' });
  const settings = h('p', { id: 'queue-settings', class: 'muted' });
  const controls = h('div', { class: 'controls', role: 'group', 'aria-label': 'Operator actions' });
  const line = h('section', { id: 'line', 'aria-labelledby': 'line-title' });
  const waiting = h('section', { id: 'waiting', 'aria-labelledby': 'waiting-title' });
  const conclusions = h('section', { id: 'conclusions', 'aria-labelledby': 'conclusions-title' });
  const charts = h('div', { class: 'charts' });
  const basis = h('p', { id: 'estimate-basis', class: 'muted' });
  const advicePart = h('section', { id: 'advice', 'aria-labelledby': 'advice-title' });
  main.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/queues' }, 'Queues'), ' / ', name),
    h('h1', { tabindex: '-1' }, name, ' ', state),
    settings,
    controls,
    h('h2', { id: 'line-title' }, 'Testing now'),
    line,
    h('h2', { id: 'waiting-title' }, 'Waiting'),
    basis,
    waiting,
    h('h2', { id: 'conclusions-title' }, 'Last conclusions (1 h)'),
    conclusions,
    h('h2', {}, 'The last hour'),
    charts,
    h('h2', { id: 'advice-title' }, 'Advice'),
    advicePart,
  );
  const wait = histogramChart(charts, { id: 'chart-wait', title: 'Wait: ready to first test' });
  const test = histogramChart(charts, { id: 'chart-test', title: 'Test duration' });
  const inQueue = histogramChart(charts, { id: 'chart-in-queue', title: 'Time in queue' });
  const advice = adviceSection(advicePart, { target, app });
  let queueState = null;
  let acting = false;
  // Each section is rendered again only when its figures changed.
  const showLine = whenChanged((groups) => replace(line, renderLine(groups)));
  const showWaiting = whenChanged((list) => replace(waiting, renderWaiting(list)));
  const showConclusions = whenChanged((list) => replace(conclusions, renderConclusions(list)));

  async function act(action) {
    const confirmed = await app.confirm({
      title: `${action.label} ${name}?`,
      text: action.text,
      action: action.label,
    });
    if (!confirmed) return;
    acting = true;
    try {
      const answer = await call('updateQueue', { ...target, state: action.state }, { mutating: true });
      app.say(`The queue is ${words(answer.state)}.`);
      await refresh();
    } catch (e) {
      app.failed(e);
    } finally {
      acting = false;
    }
  }

  function renderControls(current) {
    if (current === queueState) return;
    queueState = current;
    replace(state, badge(current));
    replace(controls, ACTIONS.filter((a) => a.when.includes(current)).map((a) =>
      h('button', { type: 'button', id: a.id, 'data-focus': a.id, onclick: () => act(a) },
        `${a.label} queue`)));
  }

  function prLink(number, text = `#${number}`) {
    return h('a', { href: pullHref(repo, branch, number), 'data-focus': `pr-${number}` }, text);
  }

  function renderLine(groups) {
    if (!groups.length) return h('p', { class: 'muted' }, 'Nothing is being tested.');
    return table('Groups of the line, front first, then bisection runs',
      ['Run', 'Pull requests', 'State', 'Age', 'CI', 'Reason'],
      groups.map((g) => h('tr', { 'data-run': g.testRunId },
        h('td', {}, h('code', {}, g.testRunId), g.kind === 'bisection' ? h('div', { class: 'muted' }, `bisects ${g.bisectionOf}`) : null,
          h('div', { class: 'muted' }, g.testBranch)),
        h('td', {}, h('ul', { class: 'prs' }, g.pullRequests.map((p) =>
          h('li', { 'data-pr': p.prNumber }, prLink(p.prNumber), ' ', p.prTitle, ' ',
            p.state ? badge(p.state) : null)))),
        h('td', { class: 'run-state' }, g.held ? badge('held', 'held for a slot') : badge(g.status)),
        h('td', {}, duration(g.ageSeconds)),
        h('td', {}, ciLinks(g.ci)),
        h('td', {}, words(g.reason || '')))));
  }

  function renderWaiting(list) {
    if (!list.length) return h('p', { class: 'muted' }, 'No pull request is waiting.');
    return table('Waiting pull requests, in the order the queue takes them',
      ['#', 'Pull request', 'Priority', 'State', 'Waiting', 'Estimated merge'],
      list.map((w) => h('tr', { 'data-pr': w.prNumber },
        h('td', { class: 'num' }, w.position),
        h('td', {}, prLink(w.prNumber), ' ', w.prTitle, h('div', { class: 'muted' }, `by ${w.prAuthor}`)),
        h('td', {}, `${w.priorityName} (${w.priorityValue})`, w.noBatch ? ' · not batched' : ''),
        h('td', {}, badge(w.state), w.stuck ? h('strong', { class: 'warn' }, ' stuck') : null),
        h('td', {}, duration(w.waitingSeconds)),
        h('td', { class: 'estimate' }, w.estimatedMergeSeconds === undefined
          ? h('span', { class: 'muted' }, w.state === 'not_ready' ? 'when ready' : 'no estimate')
          : h('span', { title: w.estimatedMergeAt },
            `in about ${duration(w.estimatedMergeSeconds)} (${clock(w.estimatedMergeAt)})`)))));
  }

  function renderConclusions(list) {
    if (!list.length) return h('p', { class: 'muted' }, 'No pull request left the queue in the last hour.');
    return table('Pull requests that left the queue, newest first',
      ['Pull request', 'Outcome', 'Reason', 'When', 'Time in queue'],
      list.map((c) => h('tr', { 'data-pr': c.prNumber },
        h('td', {}, prLink(c.prNumber), ' ', c.prTitle),
        h('td', {}, badge(c.state)),
        h('td', { class: 'reason' }, c.reason ? h('strong', {}, words(c.reason)) : '',
          c.detail ? h('div', {}, c.detail) : null),
        h('td', {}, timeElement(h, c.concludedAt)),
        h('td', {}, duration(c.timeInQueueSeconds)))));
  }

  async function refresh() {
    const activity = await call('getQueueActivity', target);
    if (!acting) renderControls(activity.queue.state);
    const q = activity.queue;
    settings.textContent = `${q.mode} mode · concurrency ${q.concurrency}`
      + (q.batch ? ` · batches of ${q.batchingMinSize}` : ' · no batching')
      + ` · merge method ${words(q.mergeMethod)}`;
    const e = activity.estimate;
    basis.textContent = e.runs
      ? `Estimates from the last hour's ${e.runs} run(s): ${duration(e.meanTestSeconds)} per run on average, ${percent(e.failureRate)} failed.`
      : 'No run finished in the last hour: no estimate yet.';
    showLine(activity.line);
    showWaiting(activity.waiting);
    showConclusions(activity.conclusions);
    wait.update(activity.histograms.waitSeconds);
    test.update(activity.histograms.testSeconds);
    inQueue.update(activity.histograms.timeInQueueSeconds);
    advice.showTuning(q);
  }

  return {
    refresh,
    unmount() {
      wait.destroy();
      test.destroy();
      inQueue.destroy();
    },
  };
}
