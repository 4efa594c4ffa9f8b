#include "app/dashboard_page.h"

namespace clm {

namespace {

constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>clmcache dashboard</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 1rem 1.5rem; color: #222; }
  header { display: flex; gap: 1rem; align-items: baseline; flex-wrap: wrap; }
  h1 { font-size: 1.4rem; margin: 0; } h2 { font-size: 1rem; margin: 0 0 0.3rem; }
  #status { color: #666; font-size: 0.85rem; } #status.error { color: #a00; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(22rem, 1fr)); gap: 0.8rem; margin-top: 0.8rem; }
  .panel { border: 1px solid #ddd; border-radius: 6px; padding: 0.5rem 0.7rem; }
  svg.chart { width: 100%; height: 150px; display: block; }
  svg text { font-size: 10px; fill: #666; }
  .legend { font-size: 0.8rem; display: flex; gap: 0.7rem; flex-wrap: wrap; }
  .legend i { display: inline-block; width: 0.7rem; height: 0.7rem; margin-right: 0.25rem; vertical-align: -1px; }
  table { border-collapse: collapse; font-size: 0.85rem; } td, th { padding: 0.15rem 0.5rem; text-align: right; }
  th:first-child, td:first-child { text-align: left; }
  .request { margin: 0.45rem 0; font-size: 0.8rem; }
  .request svg { width: 100%; height: 10px; display: block; margin: 0.15rem 0; }
  .tokens { font-family: ui-monospace, monospace; font-size: 0.72rem; line-height: 1.45; word-break: break-all; }
  .tok { white-space: pre; border-radius: 2px; } .tok.evicted { text-decoration: line-through; outline: 1px solid #c62828; }
  .prefix { background: #a5d6a7; } .shift { background: #90caf9; } .recomputed { background: #ffe082; } .computed { background: #e0e0e0; }
</style>
</head>
<body>
<header>
  <h1>clmcache dashboard</h1>
  <a href="/">chat</a>
  <input id="key" type="password" placeholder="API key (if the server needs one)">
  <span id="status">waiting for the first update</span>
</header>
<div class="grid">
  <div class="panel"><h2>Token hit rate (prefix cache)</h2><svg class="chart" id="chart-hit-rate"></svg><div class="legend" id="legend-hit-rate"></div></div>
  <div class="panel"><h2>Reuse mix of prompt tokens, per interval</h2><svg class="chart" id="chart-reuse-mix"></svg><div class="legend" id="legend-reuse-mix"></div></div>
  <div class="panel"><h2>KV memory by tier (bytes)</h2><svg class="chart" id="chart-memory"></svg><div class="legend" id="legend-memory"></div></div>
  <div class="panel"><h2>KV blocks in RAM</h2><svg class="chart" id="chart-blocks"></svg><div class="legend" id="legend-blocks"></div></div>
  <div class="panel"><h2>Time to first token (s)</h2><svg class="chart" id="chart-ttft"></svg><div class="legend" id="legend-ttft"></div></div>
  <div class="panel"><h2>Decode tokens per second</h2><svg class="chart" id="chart-tokens-per-second"></svg><div class="legend" id="legend-tokens-per-second"></div></div>
  <div class="panel"><h2>Evicted blocks by cause</h2><svg class="chart" id="chart-evictions"></svg><div class="legend" id="legend-evictions"></div></div>
  <div class="panel"><h2>Tier health</h2><table id="tiers"></table><div id="disk"></div><div id="redis"></div></div>
  <div class="panel"><h2>Sessions</h2><table id="sessions"></table></div>
</div>
<div class="panel" style="margin-top:0.8rem">
  <h2>Reuse map of recent requests (newest first)</h2>
  <div class="legend"><span><i class="prefix"></i>exact prefix</span><span><i class="shift"></i>shifted span</span>
    <span><i class="recomputed"></i>recomputed</span><span><i class="computed"></i>computed</span>
    <span><i style="outline:1px solid #c62828"></i>evicted later (struck through)</span></div>
  <div id="reuse-map"></div>
</div>
<script>
const kPollMs = 1500;
const kColors = {prefix: '#2e7d32', shift: '#1565c0', recomputed: '#f9a825', computed: '#9e9e9e',
  capacity: '#6a1b9a', ttl: '#00838f', budget: '#c62828', pressure: '#ef6c00', used: '#1565c0',
  cached: '#2e7d32', pinned: '#6a1b9a', free: '#bdbdbd', p50: '#1565c0', p95: '#c62828', rate: '#2e7d32'};
const kSources = ['prefix', 'shift', 'recomputed', 'computed'];
const svgNs = 'http://www.w3.org/2000/svg';
let shownRequests = '';

function el(name, attrs = {}, parent = null, ns = null) {
  const e = ns ? document.createElementNS(ns, name) : document.createElement(name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(v) {
  if (Math.abs(v) >= 1e9) return (v / 1e9).toFixed(2) + 'G';
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(2) + 'M';
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}
function color(name) { return kColors[name] || '#' + ((name.length * 2654435761) % 0xffffff).toString(16).padStart(6, '0'); }

// The chart's frame: the time axis from the first to the last time, the
// value axis from 0 to `top`.
function frame(svg, times, top) {
  svg.replaceChildren();
  const w = svg.clientWidth || 360, h = svg.clientHeight || 150, left = 42, bottom = 14;
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  const t0 = times[0], t1 = Math.max(times[times.length - 1], t0 + 1);
  const x = t => left + (w - left - 4) * (t - t0) / (t1 - t0);
  const y = v => (h - bottom) - (h - bottom - 6) * (top > 0 ? v / top : 0);
  el('line', {x1: left, y1: h - bottom, x2: w - 4, y2: h - bottom, stroke: '#ccc'}, svg, svgNs);
  el('line', {x1: left, y1: 6, x2: left, y2: h - bottom, stroke: '#ccc'}, svg, svgNs);
  el('text', {x: 2, y: 12}, svg, svgNs).textContent = fmt(top);
  el('text', {x: 2, y: h - bottom}, svg, svgNs).textContent = '0';
  el('text', {x: left, y: h - 2}, svg, svgNs).textContent = `-${Math.round(t1 - t0)} s`;
  el('text', {x: w - 30, y: h - 2}, svg, svgNs).textContent = 'now';
  return {x, y, w, h};
}

function legend(id, entries) {
  const box = document.getElementById(id);
  box.replaceChildren();
  for (const [name, text] of entries) {
    const s = el('span', {}, box);
    el('i', {style: `background:${color(name)}`}, s);
    s.appendChild(document.createTextNode(text));
  }
}

// Lines: one polyline per series, its latest value on data-latest.
function lineChart(id, times, series, top = null) {
  const svg = document.getElementById('chart-' + id);
  const max = top ?? Math.max(1e-9, ...series.flatMap(s => s.values));
  const f = frame(svg, times, max);
  for (const s of series) {
    const points = s.values.map((v, i) => `${f.x(times[i]).toFixed(1)},${f.y(v).toFixed(1)}`).join(' ');
    el('polyline', {points, fill: 'none', stroke: color(s.name), 'stroke-width': 1.5, 'data-series': s.name,
                    'data-latest': s.values[s.values.length - 1], 'data-points': s.values.length}, svg, svgNs);
  }
  svg.dataset.drawn = series.length;
  legend('legend-' + id, series.map(s => [s.name, `${s.label || s.name} ${fmt(s.values[s.values.length - 1])}`]));
}

// Stacked bars of the increase of cumulative counters between samples; the
// counters' latest totals on data-total.
function stackChart(id, times, series) {
  const svg = document.getElementById('chart-' + id);
  const deltas = series.map(s => s.values.map((v, i) => i === 0 ? 0 : Math.max(0, v - s.values[i - 1])));
  const sums = times.map((_, i) => deltas.reduce((a, d) => a + d[i], 0));
  const f = frame(svg, times, Math.max(1, ...sums));
  const width = Math.max(1, (f.w - 46) / Math.max(1, times.length - 1) - 1);
  series.forEach((s, k) => {
    const g = el('g', {'data-series': s.name, 'data-total': s.values[s.values.length - 1], fill: color(s.name)}, svg, svgNs);
    let drawn = 0;
    for (let i = 1; i < times.length; ++i) {
      if (deltas[k][i] === 0) continue;
      const below = deltas.slice(0, k).reduce((a, d) => a + d[i], 0);
      el('rect', {x: f.x(times[i]) - width, width, y: f.y(below + deltas[k][i]),
                  height: f.y(below) - f.y(below + deltas[k][i]), 'data-value': deltas[k][i]}, g, svgNs);
      drawn += deltas[k][i];
    }
    g.dataset.drawnSum = drawn;
    g.dataset.base = s.values[0];
  });
  svg.dataset.drawn = series.length;
  legend('legend-' + id, series.map(s => [s.name, `${s.name} ${fmt(s.values[s.values.length - 1])} total`]));
}

function drawCharts(d) {
  const c = d.series, now = d.now;
  const times = (c.t_s || []).slice();
  const col = name => (c[name] || []).concat([now[name]]);
  times.push(now.t_s);
  lineChart('hit-rate', times, [{name: 'token_hit_rate', label: 'hit rate', values: col('token_hit_rate')}], 1);
  stackChart('reuse-mix', times, kSources.map(s => ({name: s, values: col(s + '_tokens')})));
  const tiers = Object.keys(now.tier_bytes);
  lineChart('memory', times, [{name: 'ram', values: col('ram_bytes')}].concat(tiers.map(t => (
    {name: t, values: ((c.tier_bytes || {})[t] || []).concat([now.tier_bytes[t]])}))));
  lineChart('blocks', times, ['used', 'cached', 'pinned', 'free'].map(b => ({name: b, values: col('blocks_' + b)})));
  lineChart('ttft', times, [{name: 'p50', values: col('ttft_p50_s')}, {name: 'p95', values: col('ttft_p95_s')}]);
  lineChart('tokens-per-second', times, [{name: 'rate', label: 'tokens/s', values: col('tokens_per_second')}]);
  lineChart('evictions', times, ['capacity', 'ttl', 'budget', 'pressure'].map(e => ({name: e, values: col('evictions_' + e)})));
}

function row(table, cells, attrs = {}, head = false) {
  const tr = el('tr', attrs, table);
  for (const c of cells) el(head ? 'th' : 'td', {}, tr).textContent = c;
}

function drawHealth(d) {
  const t = document.getElementById('tiers');
  t.replaceChildren();
  row(t, ['tier', 'hits', 'misses', 'hit rate', 'stored', 'breaker'], {}, true);
  for (const tier of d.tiers.tiers)
    row(t, [tier.name, tier.hits, tier.misses, fmt(tier.hit_rate), tier.stored_bytes === undefined ? '' : fmt(tier.stored_bytes),
            tier.breaker_state || ''], {'data-tier': tier.name, 'data-hit-rate': tier.hit_rate});
  if (d.tiers.tiers.length === 0) el('td', {colspan: 6}, el('tr', {}, t)).textContent = 'no tier below RAM';
  const disk = document.getElementById('disk'), k = d.tiers.disk;
  disk.textContent = k ? `disk: ${fmt(k.size_gb * 1e9)} bytes (${k.max_gb === null ? 'no size cap' : 'cap ' + fmt(k.max_gb) + ' GB'}); ` +
    `floor ${fmt(k.min_free_gb)} GB free, ${k.free_gb === null ? '?' : fmt(k.free_gb)} GB free now` : 'no disk tier';
  if (k) Object.assign(disk.dataset, {sizeGb: k.size_gb, minFreeGb: k.min_free_gb});
  const redis = document.getElementById('redis'), state = d.tiers.redis_breaker_state;
  redis.textContent = state ? `Redis circuit breaker: ${state}` : 'no Redis tier';
  redis.dataset.state = state || '';
  const s = document.getElementById('sessions');
  s.replaceChildren();
  for (const [name, v] of Object.entries(d.sessions)) row(s, [name.replaceAll('_', ' '), fmt(v)], {'data-field': name, 'data-value': v});
}

function drawRequest(box, r) {
  const div = el('div', {class: 'request', 'data-request-id': r.id, 'data-prompt-tokens': r.prompt_tokens}, box);
  const counts = {prefix: 0, shift: 0, recomputed: 0, computed: 0, evicted: 0};
  for (const run of r.runs) { counts[run.source] += run.length; if (run.evicted) counts.evicted += run.length; }
  for (const [k, v] of Object.entries(counts)) div.dataset[k] = v;
  el('div', {}, div).textContent = `#${r.id} ${r.endpoint}: ${r.prompt_tokens} prompt tokens — ` +
    kSources.map(s => `${s} ${counts[s]}`).join(', ') + (counts.evicted ? `, evicted later ${counts.evicted}` : '');
  // The whole prompt, run by run, to scale.
  const bar = el('svg', {viewBox: `0 0 ${Math.max(1, r.prompt_tokens)} 1`, preserveAspectRatio: 'none'}, div, svgNs);
  for (const run of r.runs)
    el('rect', {x: run.begin, width: run.length, y: 0, height: 1, fill: color(run.source), opacity: run.evicted ? 0.35 : 1,
                'data-source': run.source, 'data-length': run.length, 'data-evicted': run.evicted}, bar, svgNs);
  // Its first tokens one by one, the text on hover.
  const strip = el('div', {class: 'tokens'}, div);
  let i = 0;
  for (const run of r.runs)
    for (let p = run.begin; p < run.begin + run.length && i < r.token_text.length; ++p, ++i) {
      const tok = el('span', {class: `tok ${run.source}${run.evicted ? ' evicted' : ''}`, 'data-source': run.source,
                              title: `${p}: ${JSON.stringify(r.token_text[p])} (${run.source}${run.evicted ? ', evicted later' : ''})`}, strip);
      tok.textContent = r.token_text[p];
    }
  if (r.prompt_tokens > r.token_text.length)
    el('span', {}, strip).textContent = ` … ${r.prompt_tokens - r.token_text.length} more tokens`;
}

function drawReuseMap(d) {
  const ids = d.requests.map(r => r.id).join(',');
  if (ids === shownRequests) return;
  shownRequests = ids;
  const box = document.getElementById('reuse-map');
  box.replaceChildren();
  box.dataset.requests = d.requests.length;
  if (d.requests.length === 0) el('div', {}, box).textContent = 'no request has finished yet';
  for (const r of d.requests.slice().reverse()) drawRequest(box, r);
}

async function update() {
  const status = document.getElementById('status');
  const headers = {};
  const key = document.getElementById('key').value;
  if (key) headers['Authorization'] = 'Bearer ' + key;
  try {
    const res = await fetch('/dashboard/data', {headers});
    const d = await res.json();
    if (!res.ok) throw new Error((d.error && d.error.message) || res.statusText);
    drawCharts(d);
    drawHealth(d);
    drawReuseMap(d);
    status.className = '';
    status.textContent = `updated at ${new Date().toLocaleTimeString()}, server up ${Math.round(d.now.t_s)} s`;
    document.body.dataset.updates = Number(document.body.dataset.updates || 0) + 1;
    document.body.dataset.nowT = d.now.t_s;
  } catch (e) {
    status.className = 'error';
    status.textContent = 'cannot update: ' + e.message;
  }
  setTimeout(update, kPollMs);
}
update();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view dashboard_web_page() { return kPage; }

}  // namespace clm
