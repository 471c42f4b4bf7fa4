// stateutil's web UI: pages over the JSON API (or, in an inspect --html
// report, over the API's answers embedded in the page). Numbers are shown
// exactly as the API gives them; DOM is built with textContent only.
import Navigo from 'navigo';
import JSONFormatter from 'json-formatter-js';
import * as echarts from 'echarts/core';
import { HeatmapChart, BarChart } from 'echarts/charts';
import { GridComponent, TooltipComponent, VisualMapComponent, MarkLineComponent, TitleComponent } from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([HeatmapChart, BarChart, GridComponent, TooltipComponent, VisualMapComponent, MarkLineComponent, TitleComponent, CanvasRenderer]);

// The JSON tree makes a string that starts with http:// or https:// a link:
// a value in a snapshot is data, not a place to go. Every node of a tree
// is made by the library's own class, so the prototype is where to say so.
Object.defineProperty(JSONFormatter.prototype, 'isUrl', { get: () => false });

const reportData = document.getElementById('report-data');
const REPORT = reportData ? JSON.parse(reportData.textContent) : null;

class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

async function api(path) {
  if (REPORT) {
    if (!(path in REPORT.api)) throw new ApiError('not part of this report: ' + path, 404);
    const v = REPORT.api[path];
    if (v && v.error !== undefined && v.exit_code !== undefined) throw new ApiError(v.error, 422);
    return v;
  }
  const res = await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  const body = await res.json();
  if (!res.ok) throw new ApiError(body.error || res.statusText, res.status);
  return body;
}

// h builds an element: h('td', {class: 'num'}, 'text', child...).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function humanBytes(n) {
  if (n < 1024) return n + ' B';
  const units = 'KMGTPE';
  let div = 1024, exp = 0;
  for (let m = Math.floor(n / 1024); m >= 1024; m = Math.floor(m / 1024)) { div *= 1024; exp++; }
  return (n / div).toFixed(1) + ' ' + units[exp] + 'iB';
}

// num shows an exact integer; bytes adds the human form beside it.
const num = (n) => h('span', { class: 'num' }, String(n));
const bytes = (n) => h('span', {}, num(n), ' ', h('span', { class: 'human' }, '(' + humanBytes(n) + ')'));
const skew = (x) => h('span', { class: 'num skew' }, x.toFixed(2));

function table(headers, rows, attrs) {
  return h('table', attrs || {},
    h('thead', {}, h('tr', {}, headers.map((t) => h('th', {}, t)))),
    h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((c) => h('td', {}, c))))));
}

function jsonTree(value, open) {
  const wrap = h('div', { class: 'json-tree' });
  wrap.append(new JSONFormatter(value, open === undefined ? 1 : open, { animateOpen: false, animateClose: false }).render());
  wrap.dataset.json = JSON.stringify(value);
  return wrap;
}

const jsonText = (v) => JSON.stringify(v);

function label(op) {
  if (op.uid && op.name && op.name !== op.uid) return op.uid + ' (' + op.name + ')';
  return op.uid || op.name || op.id;
}

// Flink's key-group range of subtask i of p over maxP key groups.
function rangeOf(i, p, maxP) {
  return [Math.floor((i * maxP + p - 1) / p), Math.floor(((i + 1) * maxP - 1) / p)];
}

// Invisible format characters (Unicode Cf: bidi controls such as U+202E,
// which shows "user-\u202Egnp.exe" as "user-exe.png", zero-width ones)
// make text read other than it is. Wherever the page shows text (keys,
// values, names, messages; in the JSON trees as they unfold too), each is
// shown as its escape, \u202E, marked; in a list's option, which holds
// text only, as the escape alone.
const FORMAT_CHAR = /\p{Cf}/u;
const FORMAT_CHARS = /\p{Cf}/gu;

function escapeFormat(ch) {
  const hex = ch.codePointAt(0).toString(16).toUpperCase();
  return hex.length > 4 ? '\\u{' + hex + '}' : '\\u' + hex.padStart(4, '0');
}

function markFormatChars(node) {
  const text = node.data;
  if (!FORMAT_CHAR.test(text)) return;
  const parent = node.parentNode;
  if (!parent) return;
  if (parent.closest && parent.closest('option')) {
    node.data = text.replace(FORMAT_CHARS, escapeFormat);
    return;
  }
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(FORMAT_CHARS)) {
    const hex = m[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
    parts.push(text.slice(last, m.index), h('span', { class: 'format-char', title: 'U+' + hex + ': an invisible format character' }, escapeFormat(m[0])));
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  node.replaceWith(...parts);
}

function markFormatCharsIn(root) {
  if (root.nodeType === Node.TEXT_NODE) { markFormatChars(root); return; }
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts = [];
  while (walker.nextNode()) texts.push(walker.currentNode);
  texts.forEach(markFormatChars);
}

const app = document.getElementById('app');
// The observer marks text as it enters the page, before it is drawn.
new MutationObserver((records) => {
  for (const r of records) {
    if (r.type === 'characterData') markFormatChars(r.target);
    else r.addedNodes.forEach(markFormatCharsIn);
  }
}).observe(app, { childList: true, characterData: true, subtree: true });

const main = h('main', { id: 'main' });
const nav = h('nav', {});
app.append(h('header', {}, h('a', { href: '#/', class: 'brand', 'data-navigo': true }, 'stateutil'), nav), main);

let snapshots = [];
let generation = 0;

// page renders one route: it clears main, awaits build, and marks main
// ready (data-ready="NAME") or failed, for people and tests alike.
async function page(name, id, build) {
  const mine = ++generation;
  pendingCharts = [];
  main.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
  main.removeAttribute('data-ready');
  renderNav(id);
  const content = h('div', {});
  try {
    await build(content);
    if (mine !== generation) return;
    main.replaceChildren(content);
    drawPending();
    main.dataset.ready = name;
  } catch (e) {
    if (mine !== generation) return;
    main.replaceChildren(content, errorBox(e));
    main.dataset.ready = name;
  }
  router.updatePageLinks();
}

function errorBox(e) {
  return h('div', { class: 'error', role: 'alert' }, e.message);
}

function renderNav(id) {
  const links = [];
  const link = (href, text) => h('a', { href, 'data-navigo': true, class: location.hash === href ? 'active' : '' }, text);
  if (id !== undefined) {
    links.push(link(`#/s/${id}`, 'Overview'), link(`#/s/${id}/heat`, 'Heat map'), link(`#/s/${id}/operator-state`, 'Operator state'));
    if (!REPORT) links.push(link(`#/s/${id}/rescale`, 'Rescale preview'), link(`#/s/${id}/browse`, 'State browser'));
  }
  if (!REPORT && snapshots.length > 1) links.push(link('#/diff', 'Diff'));
  nav.replaceChildren(...links);
}

function snapshotTitle(id) {
  const s = snapshots[id];
  return h('h1', {}, s ? s.location : 'snapshot ' + id);
}

async function home(content) {
  content.append(h('h1', {}, 'Snapshots'));
  content.append(table(['#', 'LOCATION', 'FORMAT', ''], snapshots.map((s) => [
    num(s.id),
    h('a', { href: `#/s/${s.id}`, 'data-navigo': true }, s.location),
    s.format || '',
    s.error ? h('span', { class: 'error' }, s.error) : '',
  ]), { id: 'snapshots' }));
}

function ttlText(ttl) {
  if (!ttl) return '';
  if (ttl.unknown) return ' (ttl, settings not recorded)';
  return ' (ttl ' + ttl.ttl_ms + ' ms, ' + ttl.update + ', ' + ttl.visibility + ')';
}

async function overview(content, id) {
  content.append(snapshotTitle(id));
  const s = await api(`/api/snapshots/${id}`);
  const t = s.totals;
  content.append(h('dl', { class: 'facts' },
    h('dt', {}, 'Format'), h('dd', {}, s.format),
    h('dt', {}, 'Job'), h('dd', {}, s.job_id || '(not recorded)'),
    h('dt', {}, 'Checkpoint'), h('dd', {}, num(s.checkpoint_id), ' (' + s.kind + ')'),
    h('dt', {}, 'Totals'), h('dd', { id: 'totals' }, num(t.operators), ' operators, ', num(t.subtasks), ' subtasks, ',
      num(t.keyed_entries), ' keyed entries (', bytes(t.keyed_bytes), '), ', num(t.operator_elements), ' operator-state elements (', bytes(t.operator_bytes), ')')));
  for (const u of s.unreadable || []) content.append(h('p', { class: 'warning' }, 'unreadable: ' + jsonText(u)));
  content.append(table(['OPERATOR', 'PARALLELISM', 'MAX PARALLELISM', 'KEYED STATES', 'OPERATOR STATES', 'ENTRIES', 'BYTES'],
    s.operators.map((op) => [
      label(op), num(op.parallelism), num(op.max_parallelism),
      h('ul', {}, op.keyed_states.map((k) => h('li', {}, k.name + ': ' + k.kind + ttlText(k.ttl)))),
      h('ul', {}, op.operator_states.map((o) => h('li', {}, o.name + ': ' + o.mode))),
      num(op.keyed_entries + op.operator_elements), bytes(op.keyed_bytes + op.operator_bytes),
    ]), { id: 'operators' }));
}

// charts are the page's charts by operator id, for the tooltip tests.
window.stateutilCharts = {};

function chartBox(cls) {
  return h('div', { class: 'chart ' + (cls || '') });
}

// mountChart draws once the box is in the page (ECharts measures it):
// at once if it is, else when page() has put the content in place.
let pendingCharts = [];
function mountChart(box, option, key) {
  const draw = () => {
    const chart = echarts.init(box, null, { renderer: 'canvas' });
    chart.setOption(option);
    if (key) window.stateutilCharts[key] = chart;
    box.dataset.drawn = 'true';
  };
  if (box.isConnected) draw();
  else pendingCharts.push(draw);
}

function drawPending() {
  const draws = pendingCharts;
  pendingCharts = [];
  draws.forEach((d) => d());
}

function heatOption(op) {
  const maxP = op.max_parallelism, p = op.parallelism;
  const byGroup = new Map(op.key_groups.map((g) => [g.key_group, g]));
  const xs = Array.from({ length: maxP }, (_, i) => String(i));
  const bytesData = [], entriesData = [];
  let maxB = 0, maxE = 0;
  for (let kg = 0; kg < maxP; kg++) {
    const g = byGroup.get(kg);
    bytesData.push([kg, 0, g ? g.bytes : 0]);
    entriesData.push([kg, 1, g ? g.entries : 0]);
    if (g) { maxB = Math.max(maxB, g.bytes); maxE = Math.max(maxE, g.entries); }
  }
  const boundaries = [];
  for (let i = 1; i < p; i++) boundaries.push({ xAxis: String(rangeOf(i, p, maxP)[0]), name: 'subtask ' + i });
  const tooltip = (params) => {
    const kg = params.data[0];
    const g = byGroup.get(kg);
    const sub = g ? g.subtask : Array.from({ length: p }, (_, i) => i).find((i) => { const r = rangeOf(i, p, maxP); return kg >= r[0] && kg <= r[1]; });
    const r = rangeOf(sub, p, maxP);
    return `<div class="tip" data-key-group="${kg}">key group <b class="tip-kg">${kg}</b><br>subtask <span class="tip-subtask">${sub}</span> (key groups <span class="tip-range">${r[0]}-${r[1]}</span>)<br>bytes <span class="tip-bytes">${g ? g.bytes : 0}</span><br>entries <span class="tip-entries">${g ? g.entries : 0}</span></div>`;
  };
  const series = (name, data, y, vm) => ({
    name, type: 'heatmap', data, progressive: 0, animation: false,
    emphasis: { itemStyle: { borderColor: '#000', borderWidth: 1 } },
    markLine: y === 0 ? { symbol: 'none', silent: true, lineStyle: { color: '#222', type: 'solid', width: 2 }, label: { formatter: '{b}', position: 'end' }, data: boundaries } : undefined,
    visualMapIndex: vm,
  });
  return {
    animation: false,
    tooltip: { trigger: 'item', formatter: tooltip, className: 'heat-tooltip', transitionDuration: 0, renderMode: 'html' },
    grid: { left: 70, right: 20, top: 30, bottom: 40 },
    xAxis: { type: 'category', data: xs, name: 'key group', nameLocation: 'middle', nameGap: 25, splitArea: { show: false } },
    yAxis: { type: 'category', data: ['bytes', 'entries'] },
    visualMap: [
      { seriesIndex: 0, min: 0, max: Math.max(1, maxB), show: false, inRange: { color: ['#f7fbff', '#fdae61', '#d73027'] } },
      { seriesIndex: 1, min: 0, max: Math.max(1, maxE), show: false, inRange: { color: ['#f7fbff', '#74add1', '#313695'] } },
    ],
    series: [series('bytes', bytesData, 0, 0), series('entries', entriesData, 1, 1)],
  };
}

function barOption(names, values, title) {
  return {
    animation: false,
    title: { text: title, textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis', renderMode: 'html', className: 'bar-tooltip' },
    grid: { left: 90, right: 20, top: 35, bottom: 30 },
    xAxis: { type: 'category', data: names },
    yAxis: { type: 'value', name: 'bytes' },
    series: [{ type: 'bar', data: values, itemStyle: { color: '#4575b4' } }],
  };
}

async function heat(content, id) {
  content.append(snapshotTitle(id), h('h2', {}, 'Key groups'));
  const kg = await api(`/api/snapshots/${id}/key-groups`);
  if (kg.operators.length === 0) content.append(h('p', {}, 'No keyed operators.'));
  for (const op of kg.operators) {
    const section = h('section', { class: 'operator', 'data-operator': op.uid || op.id });
    section.append(h('h3', {}, label(op)),
      h('p', { class: 'figures' }, 'parallelism ', num(op.parallelism), ', max parallelism ', num(op.max_parallelism),
        '; skew (max/mean bytes) ', h('span', { class: 'kg-skew' }, skew(op.key_group_skew)), ' over key groups, ',
        h('span', { class: 'subtask-skew' }, skew(op.subtask_skew)), ' over subtasks'));
    const heatBox = chartBox('heat');
    const barBox = chartBox('bars');
    section.append(heatBox, barBox);
    const hottest = [...op.key_groups].sort((a, b) => b.bytes - a.bytes || a.key_group - b.key_group).slice(0, 10);
    section.append(h('div', { class: 'side-by-side' },
      h('div', {}, h('h4', {}, 'Subtasks'), table(['SUBTASK', 'KEY GROUPS', 'ENTRIES', 'BYTES'], op.subtasks.map((s) => {
        const r = rangeOf(s.index, op.parallelism, op.max_parallelism);
        return [num(s.index), r[0] + '-' + r[1], num(s.entries), bytes(s.bytes)];
      }), { class: 'subtasks' })),
      h('div', {}, h('h4', {}, 'Hottest key groups'), table(['KEY GROUP', 'SUBTASK', 'ENTRIES', 'BYTES'],
        hottest.map((g) => [num(g.key_group), num(g.subtask), num(g.entries), bytes(g.bytes)]), { class: 'hottest' }))));
    content.append(section);
    mountChart(heatBox, heatOption(op), op.uid || op.id);
    mountChart(barBox, barOption(op.subtasks.map((s) => 'subtask ' + s.index), op.subtasks.map((s) => s.bytes), 'bytes per subtask'));
  }
}

async function operatorState(content, id) {
  content.append(snapshotTitle(id), h('h2', {}, 'Operator state'));
  const rep = await api(`/api/snapshots/${id}/operator-state`);
  if (rep.operators.length === 0) content.append(h('p', {}, 'No operator state.'));
  for (const op of rep.operators) {
    const section = h('section', { class: 'operator', 'data-operator': op.uid || op.id });
    section.append(h('h3', {}, label(op) + ': parallelism ' + op.parallelism));
    section.append(table(['STATE', 'MODE', 'TYPE', 'ELEMENTS PER SUBTASK'], op.states.map((st) => [
      st.name, st.mode, st.element_type.name, h('span', { class: 'per-subtask' }, st.elements_per_subtask.map((n) => num(n)).flatMap((x, i) => (i ? [' ', x] : [x]))),
    ]), { class: 'states' }));
    const rows = [];
    for (const st of op.states) for (const v of st.values || []) rows.push([st.name, num(v.subtask), jsonTree(v.value)]);
    if (rows.length) section.append(table(['STATE', 'SUBTASK', 'VALUE'], rows, { class: 'values' }));
    content.append(section);
  }
}

function form(fields, submit, onsubmit) {
  const f = h('form', { class: 'inline' }, fields, h('button', { type: 'submit' }, submit));
  f.addEventListener('submit', (e) => { e.preventDefault(); onsubmit(new FormData(f)); });
  return f;
}

const field = (text, input) => h('label', {}, text + ' ', input);

async function rescale(content, id) {
  content.append(snapshotTitle(id), h('h2', {}, 'Rescale preview'));
  const [summary, kg] = await Promise.all([api(`/api/snapshots/${id}`), api(`/api/snapshots/${id}/key-groups`)]);
  const keyed = summary.operators.find((o) => o.keyed_states.length) || summary.operators[0];
  const before = new Map(kg.operators.map((o) => [o.id, o]));
  const result = h('div', { id: 'plan' });
  const f = form([
    field('parallelism', h('input', { name: 'parallelism', type: 'number', min: 1, required: true, value: keyed ? keyed.parallelism : 1 })),
    field('max parallelism', h('input', { name: 'max-parallelism', type: 'number', min: 1, placeholder: 'unchanged' })),
  ], 'Preview', async (data) => {
    const q = new URLSearchParams({ parallelism: data.get('parallelism') });
    if (data.get('max-parallelism')) q.set('max-parallelism', data.get('max-parallelism'));
    result.removeAttribute('data-ready');
    result.replaceChildren(h('p', { class: 'loading' }, 'Planning…'));
    try {
      const plan = await api(`/api/snapshots/${id}/plan?${q}`);
      result.replaceChildren(...planView(plan, before));
      result.dataset.ready = q.toString();
    } catch (e) {
      result.replaceChildren(errorBox(e));
      result.dataset.ready = 'error';
    }
  });
  content.append(f, result);
}

function planView(plan, before) {
  const out = [];
  for (const op of plan.operators) {
    const section = h('section', { class: 'operator', 'data-operator': op.uid || op.id });
    const old = before.get(op.id);
    section.append(h('h3', {}, label(op)), h('p', { class: 'figures' },
      'parallelism ', num(op.old.parallelism), ' → ', h('span', { class: 'new-p' }, num(op.new.parallelism)),
      ', max parallelism ', num(op.old.max_parallelism), ' → ', h('span', { class: 'new-maxp' }, num(op.new.max_parallelism)), ' (' + op.action + ')',
      op.keyed_entries > 0 ? h('span', {}, '; skew (max/mean bytes over subtasks) ', h('span', { class: 'skew-before' }, old ? skew(old.subtask_skew) : '-'),
        ' → ', h('span', { class: 'skew-after' }, skew(op.keyed_skew))) : ''));
    section.append(table(['NEW SUBTASK', 'KEY GROUPS', 'FROM OLD SUBTASKS', 'KEYED ENTRIES', 'KEYED BYTES', 'OPERATOR ELEMENTS'], op.subtasks.map((s) => [
      num(s.index), s.key_groups.start + '-' + s.key_groups.end, s.sources.join(' '), num(s.keyed_entries), bytes(s.keyed_bytes), num(s.operator_elements),
    ]), { class: 'plan-subtasks' }));
    if (op.keyed_entries > 0) {
      const box = chartBox('bars');
      section.append(box);
      mountChart(box, barOption(op.subtasks.map((s) => 'subtask ' + s.index), op.subtasks.map((s) => s.keyed_bytes), 'keyed bytes per new subtask'));
    }
    out.push(section);
  }
  return out;
}

function recordRow(rec) {
  return [num(rec.key_group), num(rec.subtask), h('code', { class: 'key' }, jsonText(rec.key)),
    rec.namespace === undefined ? '' : h('code', {}, jsonText(rec.namespace)), jsonTree(rec.value), rec.ttl ? jsonTree(rec.ttl, 0) : ''];
}

async function browse(content, id, params) {
  content.append(snapshotTitle(id), h('h2', {}, 'State browser'));
  const summary = await api(`/api/snapshots/${id}`);
  const states = [];
  for (const op of summary.operators) for (const st of op.keyed_states) states.push({ op: op.uid || op.id, opLabel: label(op), state: st.name, kind: st.kind });
  if (!states.length) { content.append(h('p', {}, 'No keyed state.')); return; }
  const chosen = states.find((s) => s.op === params.operator && s.state === params.state) || states[0];
  const select = h('select', { name: 'state', id: 'state-select' }, states.map((s, i) =>
    h('option', { value: i, selected: s === chosen }, s.opLabel + ' / ' + s.state + ' (' + s.kind + ')')));
  select.addEventListener('change', () => {
    const s = states[Number(select.value)];
    router.navigate(`/s/${id}/browse?operator=${encodeURIComponent(s.op)}&state=${encodeURIComponent(s.state)}`);
  });
  content.append(h('p', {}, field('state', select)));

  const lookupResult = h('div', { id: 'lookup' });
  content.append(h('h3', {}, 'Look up a key'), form([
    field('key', h('input', { name: 'key', id: 'lookup-key', placeholder: 'text or JSON' })),
    field('namespace', h('input', { name: 'namespace', placeholder: 'none' })),
  ], 'Get', async (data) => {
    const q = new URLSearchParams({ operator: chosen.op, state: chosen.state, key: data.get('key') });
    if (data.get('namespace')) q.set('namespace', data.get('namespace'));
    lookupResult.removeAttribute('data-ready');
    try {
      const rec = await api(`/api/snapshots/${id}/get?${q}`);
      lookupResult.replaceChildren(h('p', { class: 'figures' }, 'key group ', h('span', { class: 'kg' }, num(rec.key_group)), ', subtask ', h('span', { class: 'subtask' }, num(rec.subtask)),
        rec.ttl ? h('span', {}, ', ttl ', h('code', {}, jsonText(rec.ttl))) : ''), jsonTree(rec.value, 2));
      lookupResult.dataset.ready = 'found';
    } catch (e) {
      lookupResult.replaceChildren(e.status === 404 ? h('p', { class: 'not-found' }, e.message) : errorBox(e));
      lookupResult.dataset.ready = e.status === 404 ? 'not-found' : 'error';
    }
  }), lookupResult);

  const pageBox = h('div', { id: 'page' });
  const cursors = [''];
  const load = async (i) => {
    pageBox.removeAttribute('data-ready');
    const q = new URLSearchParams({ operator: chosen.op, state: chosen.state, limit: 50 });
    if (cursors[i]) q.set('after', cursors[i]);
    const pg = await api(`/api/snapshots/${id}/entries?${q}`);
    cursors[i + 1] = pg.next;
    const prev = h('button', { type: 'button', id: 'prev-page', disabled: i === 0, onclick: () => load(i - 1) }, '← Previous');
    const next = h('button', { type: 'button', id: 'next-page', disabled: !pg.next, onclick: () => load(i + 1) }, 'Next →');
    pageBox.replaceChildren(h('p', { class: 'pager' }, prev, ' page ', h('span', { class: 'page-number' }, String(i + 1)), ' ', next),
      pg.records.length ? table(['KEY GROUP', 'SUBTASK', 'KEY', 'NAMESPACE', 'VALUE', 'TTL'], pg.records.map(recordRow), { class: 'records' }) : h('p', {}, 'No keys.'));
    pageBox.dataset.ready = String(i + 1);
  };
  content.append(h('h3', {}, 'Entries, in key-group order'), pageBox);
  await load(0);
}

async function diffPage(content, params) {
  content.append(h('h1', {}, 'Diff'));
  const pick = (name, dflt) => h('select', { name }, snapshots.map((s) => h('option', { value: s.id, selected: String(s.id) === String(params[name] ?? dflt) }, s.id + ': ' + s.location)));
  content.append(form([field('A', pick('a', 0)), field('B', pick('b', 1))], 'Compare', (data) => {
    router.navigate(`/diff?a=${data.get('a')}&b=${data.get('b')}`);
  }));
  if (params.a === undefined || params.b === undefined) return;
  const res = await api(`/api/diff?a=${encodeURIComponent(params.a)}&b=${encodeURIComponent(params.b)}`);
  const out = h('div', { id: 'diff', 'data-equal': String(res.equal) });
  out.append(h('p', { class: 'figures' }, h('b', {}, res.equal ? 'equal' : 'different'), ': A ' + res.a + ' (' + res.format_a + '), B ' + res.b + ' (' + res.format_b + ')'));
  for (const c of res.changes) out.append(h('p', {}, c.field + ': ' + c.a + ' → ' + c.b));
  for (const o of res.operators_removed) out.append(h('p', {}, 'operator removed: ' + label(o)));
  for (const o of res.operators_added) out.append(h('p', {}, 'operator added: ' + label(o)));
  for (const op of res.operators) {
    const section = h('section', { class: 'operator', 'data-operator': op.uid || op.id, 'data-equal': String(op.equal) });
    section.append(h('h3', {}, label(op) + (op.equal ? ': equal' : '')));
    for (const c of op.changes) section.append(h('p', {}, c.field + ': ' + c.a + ' → ' + c.b));
    for (const s of op.states_removed) section.append(h('p', {}, s.scope + ' state removed: ' + s.name));
    for (const s of op.states_added) section.append(h('p', {}, s.scope + ' state added: ' + s.name));
    for (const s of op.states_changed) section.append(h('p', {}, s.scope + ' state ' + s.name + ': ' + s.field + ' ' + s.a + ' → ' + s.b));
    if (op.counts.length) section.append(table(['STATE', 'SCOPE', 'A', 'B', 'B-A'], op.counts.map((n) => [n.name, n.scope, num(n.a), num(n.b), num(n.b - n.a)]), { class: 'counts' }));
    if (op.entries_not_compared) section.append(h('p', {}, 'entries not compared: ' + op.entries_not_compared));
    if (op.elements_differ && op.elements_differ.length) section.append(h('p', {}, 'operator-state elements differ: ' + op.elements_differ.join(', ')));
    if (op.keys && op.keys.length) {
      section.append(table(['STATE', 'KEY GROUP', 'KEY', 'CHANGE', 'OLD', 'NEW'], op.keys.map((k) => [
        k.state, num(k.key_group), h('code', { class: 'key' }, jsonText(k.key)), k.change,
        k.old === undefined ? '-' : jsonTree(k.old, 0), k.new === undefined ? '-' : jsonTree(k.new, 0),
      ]), { class: 'keys' }));
    }
    if (op.keys_omitted) section.append(h('p', {}, '… and ' + op.keys_omitted + ' more keys'));
    out.append(section);
  }
  content.append(out);
}

const router = new Navigo('/', { hash: true });

async function start() {
  try {
    snapshots = await api('/api/snapshots');
  } catch (e) {
    main.replaceChildren(errorBox(e));
    main.dataset.ready = 'error';
    return;
  }
  const query = (match) => match.params || {};
  router
    .on('/', () => page('home', undefined, home))
    .on('/s/:id', (m) => page('overview', m.data.id, (c) => overview(c, m.data.id)))
    .on('/s/:id/heat', (m) => page('heat', m.data.id, (c) => heat(c, m.data.id)))
    .on('/s/:id/operator-state', (m) => page('operator-state', m.data.id, (c) => operatorState(c, m.data.id)))
    .on('/s/:id/rescale', (m) => page('rescale', m.data.id, (c) => rescale(c, m.data.id)))
    .on('/s/:id/browse', (m) => page('browse', m.data.id, (c) => browse(c, m.data.id, query(m))))
    .on('/diff', (m) => page('diff', undefined, (c) => diffPage(c, query(m))))
    .notFound(() => page('not-found', undefined, async (c) => { c.append(h('p', {}, 'No such page.')); }));
  if (REPORT && !location.hash) router.navigate(`/s/0`);
  router.resolve();
}

start();
