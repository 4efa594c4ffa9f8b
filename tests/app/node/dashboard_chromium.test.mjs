// The dashboard at `/dashboard` in headless Chromium against the real
// `clmcache serve` with an API key: after a scripted workload (a repeated
// prompt for prefix hits, a span after a new head for shift, a reordered
// prompt for blend) on a server with a disk tier, the link on the chat page opens the dashboard, the key
// is typed in, and every chart and the reuse map must show what /stats and
// GET /dashboard/data report (the page puts each drawn number on its element
// as a data-* attribute). A missing chart, a missing map or any number that
// differs fails. The test leaves a screenshot in CLMCACHE_SCREENSHOT_DIR (the
// build directory under ctest) and prints its path.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { click, kCommandTimeoutMs, launchBrowser, openTab, poll as pollFor } from './chromium.mjs';
import { startServer } from './server.mjs';

const kKey = 'dashboard-test-key';
const kStory = 'The old owl lived in a tall tree at the edge of the forest. At night she flew over the fields ' +
  'and looked for mice, and in the day she slept with one eye open.';
const kOther = 'Tom had a small blue boat. Every morning he took it to the pond and watched it float. ' +
  'One windy day the boat sailed far away, and Tom ran along the shore to catch it.';
const kSources = ['prefix', 'shift', 'recomputed', 'computed'];

let server;
let browser;
let diskDir;

before(async () => {
  diskDir = mkdtempSync(path.join(tmpdir(), 'clmcache-dashboard-disk-'));
  server = await startServer(['--temp', '0', '--reuse', 'shift', '--reuse-lead', '2', '--api-key', kKey,
                              '--disk-cache', diskDir, '--min-free-space-gb', '0.5']);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal(await server.stop(), 0, server.log());
  if (diskDir) rmSync(diskDir, { recursive: true, force: true });
});

const poll = (what, timeoutMs, check) => pollFor(what, timeoutMs, check, () => `browser log:\n${browser.log()}`);

async function api(pathname, body = undefined) {
  const res = await fetch(`${server.url}${pathname}`, {
    method: body ? 'POST' : 'GET',
    headers: { Authorization: `Bearer ${kKey}`, 'Content-Type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  assert.equal(res.status, 200, `${pathname}: ${res.status}`);
  return res.json();
}

test('the dashboard draws what /stats and its endpoint report', async () => {
  const workload = [
    ['Once upon a time. ' + kStory, 'shift'],
    ['Once upon a time. ' + kStory, 'shift'],
    ['A bird sang in the morning while the sun rose. ' + kStory, 'shift'],
    [kStory + ' ' + kOther, 'prefix'],
    [kOther + ' ' + kStory, 'blend'],
  ];
  const usages = [];
  for (const [prompt, reuse] of workload) {
    const r = await api('/v1/completions', { prompt, reuse, max_tokens: 3, temperature: 0, blend_ratio: 0.5 });
    usages.push(r.usage);
  }
  // The step that ends a request adds its time to the busy time after the
  // reply has gone: /stats is read once two readings agree.
  const stats = await poll('/stats to settle', 30_000, async () => {
    const a = await api('/stats');
    await new Promise((r) => setTimeout(r, 300));
    const b = await api('/stats');
    const figures = (s) => JSON.stringify([s.cache, s.scheduler, s.tiers]);
    return figures(a) === figures(b) ? b : undefined;
  });
  const data = await api('/dashboard/data');
  assert.ok(stats.cache.reused_tokens > 0 && stats.cache.shifted_tokens > 0, JSON.stringify(stats.cache));

  const tab = await openTab(browser.devtools);
  const { page, evaluate } = tab;
  const exceptions = [];
  browser.devtools.listeners.add((event) => {
    if (event.sessionId === tab.sessionId && event.method === 'Runtime.exceptionThrown')
      exceptions.push(JSON.stringify(event.params.exceptionDetails));
  });
  await page('Runtime.enable');
  await page('Page.enable');
  await page('Emulation.setDeviceMetricsOverride', { width: 1280, height: 1500, deviceScaleFactor: 1, mobile: false });
  await page('Page.navigate', { url: `${server.url}/` });
  await poll('the chat page', kCommandTimeoutMs, async () =>
    (await evaluate(`document.readyState === 'complete' && !!document.getElementById('dashboard-link')`)) || undefined);
  await click(tab, '#dashboard-link');
  await poll('the dashboard', kCommandTimeoutMs, async () =>
    (await evaluate(`document.title === 'clmcache dashboard' && document.readyState === 'complete'`)) || undefined);
  // Without the key the page says it cannot update; with it, it draws.
  await poll('the refusal', kCommandTimeoutMs, async () =>
    (await evaluate(`document.getElementById('status').className === 'error'`)) || undefined);
  await evaluate(`document.getElementById('key').focus()`);
  await page('Input.insertText', { text: kKey });
  const drawn = await poll('the charts', 30_000, async () => {
    const state = await evaluate(`(() => {
      const charts = {};
      for (const svg of document.querySelectorAll('svg.chart')) {
        const series = {};
        for (const s of svg.querySelectorAll('[data-series]'))
          series[s.dataset.series] = {latest: s.dataset.latest, total: s.dataset.total, base: s.dataset.base,
                                      drawnSum: s.dataset.drawnSum, points: s.dataset.points,
                                      shapes: s.querySelectorAll('rect').length};
        charts[svg.id] = {drawn: svg.dataset.drawn, series};
      }
      const requests = [...document.querySelectorAll('#reuse-map .request')].map(r => ({
        id: Number(r.dataset.requestId), prompt: Number(r.dataset.promptTokens),
        counts: Object.fromEntries(['prefix', 'shift', 'recomputed', 'computed', 'evicted'].map(k => [k, Number(r.dataset[k])])),
        runs: [...r.querySelectorAll('svg rect')].map(x => ({source: x.dataset.source, length: Number(x.dataset.length)})),
        tokens: [...r.querySelectorAll('.tok')].map(t => ({source: t.dataset.source, cls: t.className, title: t.title,
                                                           text: t.textContent}))}));
      const tiers = [...document.querySelectorAll('#tiers tr[data-tier]')].map(t => [t.dataset.tier, Number(t.dataset.hitRate)]);
      const sessions = Object.fromEntries([...document.querySelectorAll('#sessions tr')].map(t => [t.dataset.field, Number(t.dataset.value)]));
      return {updates: Number(document.body.dataset.updates || 0), status: document.getElementById('status').textContent,
              charts, requests, tiers, sessions, redis: document.getElementById('redis').dataset.state,
              disk: {...document.getElementById('disk').dataset, text: document.getElementById('disk').textContent}};
    })()`);
    return state.updates >= 2 && state.requests.length === workload.length ? state : undefined;
  });

  // Every chart is there and drew its series.
  const charts = drawn.charts;
  const expectLatest = (chart, series, value) => {
    assert.ok(charts[chart], `no chart ${chart}`);
    assert.ok(charts[chart].series[series], `chart ${chart} has no series ${series}`);
    assert.ok(Number(charts[chart].series[series].points) >= 2, `${chart}/${series} has fewer than two points`);
    assert.equal(Number(charts[chart].series[series].latest), value, `${chart}/${series}`);
  };
  const c = stats.cache, s = stats.scheduler;
  expectLatest('chart-hit-rate', 'token_hit_rate', c.token_hit_rate);
  const totals = { prefix: c.reused_tokens, shift: c.shifted_tokens, recomputed: c.recomputed_tokens,
                   computed: c.prompt_tokens - c.reused_tokens - c.shifted_tokens - c.recomputed_tokens };
  for (const src of kSources) {
    const g = charts['chart-reuse-mix']?.series[src];
    assert.ok(g, `the reuse mix has no ${src}`);
    assert.equal(Number(g.total), totals[src], `reuse mix ${src}`);
    assert.equal(Number(g.base) + Number(g.drawnSum), totals[src], `the ${src} bars add up to the total`);
  }
  assert.ok(charts['chart-reuse-mix'].series.prefix.shapes > 0, 'the reuse mix drew bars');
  expectLatest('chart-memory', 'ram', (c.blocks_used + c.blocks_cached) * c.block_bytes);
  for (const b of ['used', 'cached', 'free']) expectLatest('chart-blocks', b, c[`blocks_${b}`]);
  expectLatest('chart-blocks', 'pinned', s.session_pins.blocks);
  expectLatest('chart-ttft', 'p50', s.ttft_p50_s);
  expectLatest('chart-ttft', 'p95', s.ttft_p95_s);
  expectLatest('chart-tokens-per-second', 'rate', s.tokens_per_second);
  expectLatest('chart-evictions', 'capacity', c.evictions_capacity);
  expectLatest('chart-evictions', 'ttl', c.evictions_ttl);
  expectLatest('chart-evictions', 'budget', s.kv_budget.evicted_blocks_by_reason.budget);
  expectLatest('chart-evictions', 'pressure', s.kv_budget.evicted_blocks_by_reason.pressure);

  // The reuse map: newest first, one row per request, each as its usage.
  assert.deepEqual(drawn.requests.map(r => r.id), data.requests.map(r => r.id).reverse());
  drawn.requests.reverse().forEach((r, i) => {
    const usage = usages[i];
    assert.equal(r.prompt, usage.prompt_tokens, `request ${i}`);
    for (const src of kSources) assert.equal(r.counts[src], usage.prompt_tokens_details.reuse[src], `request ${i} ${src}`);
    assert.equal(r.runs.reduce((a, x) => a + x.length, 0), usage.prompt_tokens, `request ${i}: the strip covers the prompt`);
    for (const src of kSources)
      assert.equal(r.runs.filter(x => x.source === src).reduce((a, x) => a + x.length, 0), usage.prompt_tokens_details.reuse[src]);
    assert.equal(r.tokens.length, Math.min(usage.prompt_tokens, data.tokens_shown), `request ${i}: one cell per token`);
    for (const t of r.tokens) {
      assert.ok(t.cls.includes(t.source), t.cls);
      assert.ok(t.title.includes(JSON.stringify(t.text)), `the hover text names the token: ${t.title}`);
    }
    assert.equal(r.counts.evicted, 0);
  });
  assert.ok(drawn.requests[1].counts.prefix > 0, 'the repeated prompt shows an exact prefix');
  assert.ok(drawn.requests[2].counts.shift > 0, 'the new head shows a shifted span');
  assert.ok(drawn.requests[4].counts.recomputed > 0, 'blend shows recomputed tokens');
  assert.ok(drawn.requests[0].tokens.map(t => t.text).join('').includes('owl'));

  // Tier health and sessions.
  assert.deepEqual(drawn.tiers, stats.tiers.tiers.map(t => [t.name, t.hit_rate]));
  assert.equal(drawn.redis, '');
  const disk = stats.tiers.tiers.find(t => t.name === 'disk');
  assert.ok(disk && disk.writes > 0, `the disk tier stored blocks: ${JSON.stringify(stats.tiers)}`);
  expectLatest('chart-memory', 'disk', disk.stored_bytes);
  assert.equal(Number(drawn.disk.sizeGb), stats.tiers.disk_cache_size_gb);
  assert.equal(Number(drawn.disk.minFreeGb), 0.5);
  assert.match(drawn.disk.text, /floor 0\.500 GB free/);
  assert.equal(drawn.sessions.pinned_sessions, s.session_pins.sessions);
  assert.equal(drawn.sessions.pinned_blocks, s.session_pins.blocks);
  assert.equal(drawn.sessions.remembered, stats.server.sessions);

  const dir = process.env.CLMCACHE_SCREENSHOT_DIR || tmpdir();
  mkdirSync(dir, { recursive: true });
  const height = await evaluate('Math.ceil(document.body.getBoundingClientRect().bottom) + 16');
  await page('Emulation.setDeviceMetricsOverride', { width: 1280, height, deviceScaleFactor: 1, mobile: false });
  const shot = await page('Page.captureScreenshot', { format: 'png' });
  const file = path.join(dir, 'dashboard.png');
  writeFileSync(file, Buffer.from(shot.data, 'base64'));
  console.log(`screenshot: ${file}`);
  assert.deepEqual(exceptions, [], 'no uncaught exceptions on the page');
});
