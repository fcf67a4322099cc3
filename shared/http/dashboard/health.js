// Test health: a repository's unhealthy (flaky, broken) and quarantined tests, filtered, each
// with its recent results as a strip, its codeowners and its ticket.

import { call, organisation } from './api.js';
import { badge, h, outLink, replace, table, whenChanged } from './dom.js';
import { clock, repoName } from './format.js';

export const title = 'Test health';

const LISTS = [
  { id: 'flaky', label: 'Flaky' },
  { id: 'broken', label: 'Broken' },
  { id: 'quarantined', label: 'Quarantined' },
];

const PAGE_SIZE = 50;
/** A filter searches the whole list, read in pages of the API's largest size, up to this
 * many tests. */
const SEARCHED_PAGES = 10;
const SEARCH_PAGE_SIZE = 100;

/** `github.com/acme/rocket` → `{host, owner, name}`, or null. */
function parseRepo(text) {
  const parts = (text || '').trim().split('/');
  if (parts.length !== 3 || parts.some((p) => !p)) return null;
  const [host, owner, name] = parts;
  return { host, owner, name };
}

/** The recent results of a test as a strip of cells, oldest first, and a sentence for
 * screen readers. */
function strip(results) {
  if (!results || !results.length) return h('span', { class: 'muted' }, 'no results');
  const count = (o) => results.filter((r) => r.outcome === o).length;
  const label = `Last ${results.length} results, oldest first: ${count('passed')} passed, `
    + `${count('passed_on_retry')} passed on retry, ${count('failed')} failed`;
  return h('span', { class: 'strip', role: 'img', 'aria-label': label, title: label },
    results.map((r) => h('span', {
      class: `cell outcome-${r.outcome}`,
      title: `${r.outcome.replaceAll('_', ' ')} · ${clock(r.at)} · ${r.commit}${r.stable_branch ? ' (stable branch)' : ''}`,
    })));
}

export function mount(main, params, app) {
  const org = organisation();
  const state = {
    repo: params.repo || '',
    list: LISTS.some((l) => l.id === params.list) ? params.list : 'flaky',
    query: params.q || '',
    token: '',
  };
  const repoInput = h('input', { id: 'health-repo', list: 'health-repos', value: state.repo,
    placeholder: 'github.com/owner/name', autocomplete: 'off', spellcheck: 'false' });
  const repos = h('datalist', { id: 'health-repos' });
  const listSelect = h('select', { id: 'health-list' },
    LISTS.map((l) => h('option', { value: l.id, selected: l.id === state.list }, l.label)));
  const filter = h('input', { id: 'health-filter', type: 'search', value: state.query,
    placeholder: 'name, file, class or owner', autocomplete: 'off' });
  const results = h('section', { id: 'health-results', 'aria-live': 'off' });
  const pager = h('div', { class: 'pager' });
  const filters = h('div', { class: 'filters', role: 'search' },
    h('label', { for: 'health-repo' }, 'Repository'), repoInput, repos,
    h('label', { for: 'health-list' }, 'Tests'), listSelect,
    h('label', { for: 'health-filter' }, 'Filter'), filter);
  main.append(h('h1', { tabindex: '-1' }, 'Test health'), filters, results, pager);
  let page = null;
  let loads = 0;
  // A page is rendered again only when its answer changed.
  const show = whenChanged((answer) => {
    page = answer;
    render();
  });

  /** Keeps the filters in the address (never the token), so the page can be bookmarked. */
  function remember() {
    const query = new URLSearchParams();
    if (state.repo) query.set('repo', state.repo);
    query.set('list', state.list);
    if (state.query) query.set('q', state.query);
    history.replaceState(null, '', `#/health?${query}`);
  }

  function matches(test) {
    const q = state.query.trim().toLowerCase();
    if (!q) return true;
    const fields = [test.name, test.classname, test.file_path, test.file, test.parent,
      test.variant, ...(test.codeowners || [])];
    return fields.some((f) => f && f.toLowerCase().includes(q));
  }

  function row(test) {
    const quarantinedList = page.list === 'quarantined';
    const id = quarantinedList ? test.test_case_id : test.id;
    const ticket = test.ticket ? outLink(test.ticket.html_url, test.ticket.html_url) : h('span', { class: 'muted' }, 'none');
    return h('tr', { 'data-test': id },
      h('th', { scope: 'row' }, h('div', {}, test.name),
        h('div', { class: 'muted' }, [test.classname, test.file_path || test.file].filter(Boolean).join(' · ')),
        test.variant ? h('div', { class: 'muted' }, `variant ${test.variant}`) : null),
      h('td', {}, quarantinedList
        ? h('span', {}, badge('quarantined'), h('div', { class: 'muted' }, `since ${clock(test.quarantined_at)}`))
        : h('span', {}, badge(page.list), test.quarantined ? [' ', badge('quarantined')] : null,
          h('div', { class: 'muted' }, test.status.reason))),
      h('td', {}, strip(test.recent_results)),
      h('td', {}, test.codeowners.length ? test.codeowners.join(', ') : h('span', { class: 'muted' }, 'none')),
      h('td', {}, ticket),
      h('td', { class: 'num' }, quarantinedList ? '—' : test.pull_requests_impacted_last_7d));
  }

  function testsOf(answer, list) {
    return (list === 'quarantined' ? answer.quarantined_tests : answer.tests) || [];
  }

  function render() {
    if (!page) return;
    const tests = (page.searched ? page.tests : testsOf(page, page.list)).filter(matches);
    const label = LISTS.find((l) => l.id === page.list).label;
    replace(results, tests.length
      ? table(`${label} tests of ${state.repo}`,
        ['Test', 'Status', 'Recent results', 'Codeowners', 'Ticket', 'Pull requests hit (7 days)'],
        tests.map(row), { id: 'health-table' })
      : h('p', { class: 'muted' }, `No ${label.toLowerCase()} test${page.searched ? ' matches the filter' : ''}.`));
    if (page.searched) {
      const of = page.more ? `the first ${page.tests.length} of ${page.total}` : `${page.total}`;
      replace(pager, h('span', { id: 'health-matches' },
        ` ${tests.length} of ${of} tests match the filter `));
      return;
    }
    const info = page.page;
    replace(pager,
      h('button', { type: 'button', id: 'health-prev', disabled: !info.prev_page_token,
        'data-focus': 'prev', onclick: () => { state.token = info.prev_page_token; show.reset(); load(); } }, 'Previous page'),
      h('span', {}, ` page ${info.page_index + 1} of ${Math.max(1, info.total_pages)} (${info.total_rows} tests) `),
      h('button', { type: 'button', id: 'health-next', disabled: !info.next_page_token,
        'data-focus': 'next', onclick: () => { state.token = info.next_page_token; show.reset(); load(); } }, 'Next page'));
  }

  async function load() {
    const serial = ++loads;
    const repo = parseRepo(state.repo);
    if (!repo) {
      page = null;
      replace(results, h('p', { class: 'muted' }, 'Choose a repository (host/owner/name).'));
      replace(pager);
      return;
    }
    const list = state.list;
    const answer = filtering()
      ? await search(repo, list)
      : await pageOf(repo, list, PAGE_SIZE, state.token);
    // An answer to an earlier choice (another list, page or filter) is not shown over a later
    // one's.
    if (serial === loads) show({ ...answer, list });
  }

  function filtering() {
    return state.query.trim() !== '';
  }

  async function pageOf(repo, list, size, token) {
    const body = { repo, org_url_slug: org, page_query: { page_size: size, page_token: token } };
    return list === 'quarantined'
      ? call('flaky-tests/list-quarantined-tests', body)
      : call('flaky-tests/list-unhealthy-tests', { ...body, status: list.toUpperCase() });
  }

  /** The whole list (up to SEARCHED_PAGES pages) for the filter to search, not only the page
   * on screen. */
  async function search(repo, list) {
    const tests = [];
    let token = '';
    let answer;
    for (let i = 0; i < SEARCHED_PAGES; i += 1) {
      answer = await pageOf(repo, list, SEARCH_PAGE_SIZE, token);
      tests.push(...testsOf(answer, list));
      token = answer.page.next_page_token;
      if (!token) break;
    }
    return { searched: true, tests, total: answer.page.total_rows, more: Boolean(token) };
  }

  /** Shows the first page of the chosen repository and list, and remembers the choice. */
  function showFirstPage() {
    state.token = '';
    show.reset();
    remember();
    load().catch(app.failed);
  }

  repoInput.addEventListener('change', () => {
    state.repo = repoInput.value.trim();
    showFirstPage();
  });
  listSelect.addEventListener('change', () => {
    state.list = listSelect.value;
    showFirstPage();
  });
  filter.addEventListener('input', () => {
    const searched = filtering();
    state.query = filter.value;
    if (searched !== filtering()) {
      showFirstPage();
      return;
    }
    remember();
    render();
  });

  let reposKnown = false;
  return {
    async refresh() {
      if (!reposKnown) {
        const list = await call('listQueues', {});
        const names = [...new Set(list.queues.map((q) => repoName(q.repo)))].sort();
        replace(repos, names.map((n) => h('option', { value: n })));
        reposKnown = true;
        if (!state.repo && names.length) {
          state.repo = names[0];
          repoInput.value = state.repo;
          remember();
        }
      }
      await load();
    },
  };
}
