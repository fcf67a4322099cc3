// One pull request: its latest submission, its state history, the runs it was part of and,
// when it failed, why.

import { call } from './api.js';
import { badge, ciLinks, h, outLink, replace, table, whenChanged } from './dom.js';
import { duration, queueHref, repoName, timeElement, words } from './format.js';

export const title = 'Pull request';

export function mount(main, params) {
  const { repo, branch, number } = params;
  const queueName = `${repoName(repo)} → ${branch}`;
  document.title = `#${number} · ${queueName} · Merge queue`;
  const heading = h('h1', { tabindex: '-1' }, `Pull request #${number}`);
  const summary = h('div', { id: 'pr-summary' });
  const why = h('div', { id: 'pr-conclusion' });
  const states = h('section', { id: 'pr-states', 'aria-labelledby': 'states-title' });
  const runs = h('section', { id: 'pr-runs', 'aria-labelledby': 'runs-title' });
  main.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/queues' }, 'Queues'), ' / ',
      h('a', { href: queueHref(repo, branch) }, queueName), ` / #${number}`),
    heading, summary, why,
    h('h2', { id: 'states-title' }, 'State history'),
    h('p', { class: 'muted' },
      'Rebuilt from the times the queue records: when the pull request was submitted, became ready, each run started and finished, and when it left the queue.'),
    states,
    h('h2', { id: 'runs-title' }, 'Runs it was part of'),
    runs);
  const show = whenChanged((history) => {
    const pr = history.pullRequest;
    replace(heading, `Pull request #${number}: ${pr.prTitle} `, badge(pr.state));
    replace(summary, h('dl', { class: 'facts' },
      h('dt', {}, 'State'), h('dd', { id: 'pr-state' }, badge(pr.state)),
      h('dt', {}, 'Pull request'), h('dd', {}, outLink(history.prUrl, history.prUrl)),
      h('dt', {}, 'Author'), h('dd', {}, pr.prAuthor),
      h('dt', {}, 'Head'), h('dd', {}, h('code', {}, pr.prSha.slice(0, 12))),
      h('dt', {}, 'Priority'), h('dd', {}, `${pr.priorityName} (${pr.priorityValue})`),
      h('dt', {}, 'Submitted'), h('dd', {}, timeElement(h, history.submittedAt)),
      h('dt', {}, 'Runs'), h('dd', {}, `${history.ciRuns}, restarted ${history.restarts} time(s)`)));
    replace(why, history.conclusion
      ? h('div', { class: `conclusion state-${pr.state}`, role: 'note' },
        h('h2', {}, pr.state === 'failed' ? 'Why it failed' : 'Why it left the queue'),
        h('p', {}, h('strong', { id: 'pr-reason' }, words(history.conclusion.reason))),
        h('p', { id: 'pr-detail' }, history.conclusion.detail))
      : null);
    replace(states, h('ol', { class: 'timeline' }, history.states.map((s) =>
      h('li', {}, timeElement(h, s.at), ' ', badge(s.state),
        s.testRunId ? h('span', { class: 'muted' }, ` run ${s.testRunId}`) : null,
        s.reason ? h('span', {}, ` · ${words(s.reason)}`) : null))));
    replace(runs, history.runs.length
      ? table('Runs that tested this pull request, oldest first',
        ['Run', 'Status', 'Tested with', 'Duration', 'CI'],
        history.runs.map((r) => {
          const start = r.startedAt || r.createdAt;
          const end = r.finishedAt ? new Date(r.finishedAt) : new Date();
          const seconds = (end - new Date(start)) / 1000;
          return h('tr', { 'data-run': r.testRunId },
            h('td', {}, h('code', {}, r.testRunId), h('div', { class: 'muted' }, r.kind)),
            h('td', {}, badge(r.status), r.reason ? ` ${words(r.reason)}` : ''),
            h('td', {}, r.testedPrs.map((n) => `#${n}`).join(', '),
              r.dependentPrs.length ? h('div', { class: 'muted' },
                `on top of ${r.dependentPrs.map((n) => `#${n}`).join(', ')}`) : null),
            h('td', {}, duration(seconds)),
            h('td', {}, ciLinks(r.ci, 'no CI result')));
        }))
      : h('p', { class: 'muted' }, 'No run has tested it yet.'));
  });

  return {
    async refresh() {
      show(await call('getPullRequestHistory', { repo, targetBranch: branch, pr: { number } }));
    },
  };
}
