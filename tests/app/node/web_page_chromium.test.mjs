// The chat page at `/` in headless Chromium against the real `clmcache
// serve`: type a message, click Send, and watch the streamed reply appear; it
// must equal the non-streamed reply to the same request. A second turn must
// report cached prompt tokens (the page keeps a session).
//
// Chromium is driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: it reads commands on fd 3 and writes replies on
// fd 4, each a JSON message ended by a NUL byte), so no port is opened and no
// automation package is needed. CHROMIUM names the browser (default:
// `chromium` on PATH); a missing browser fails the test.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { startServer, track, waitExit } from './server.mjs';

const kCommandTimeoutMs = 20_000;
const kReplyTimeoutMs = 60_000;

class DevTools {
  constructor(child) {
    this.out = child.stdio[3];
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Set();
    let buffer = Buffer.alloc(0);
    child.stdio[4].on('data', (data) => {
      buffer = Buffer.concat([buffer, data]);
      for (let end = buffer.indexOf(0); end >= 0; end = buffer.indexOf(0)) {
        const message = JSON.parse(buffer.subarray(0, end).toString('utf8'));
        buffer = buffer.subarray(end + 1);
        this.dispatch(message);
      }
    });
    child.once('exit', () => {
      for (const { reject } of this.pending.values()) reject(new Error('the browser exited'));
      this.pending.clear();
    });
  }

  dispatch(message) {
    if (message.id === undefined) {
      for (const listener of this.listeners) listener(message);
      return;
    }
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    if (message.error) waiter.reject(new Error(`${waiter.method}: ${JSON.stringify(message.error)}`));
    else waiter.resolve(message.result);
  }

  send(method, params = {}, sessionId = undefined) {
    const id = this.nextId++;
    const message = { id, method, params };
    if (sessionId) message.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${kCommandTimeoutMs} ms`));
      }, kCommandTimeoutMs);
      this.pending.set(id, {
        method,
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.out.write(JSON.stringify(message) + '\0');
    });
  }
}

let server;
let browser;
let devtools;
let profileDir;
let browserLog = '';

before(async () => {
  server = await startServer(['--temp', '0']);
  profileDir = mkdtempSync(path.join(tmpdir(), 'clmcache-chromium-'));
  const executable = process.env.CHROMIUM || 'chromium';
  browser = track(
    spawn(
      executable,
      [
        '--headless=new',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-extensions',
        '--no-first-run',
        '--no-default-browser-check',
        '--mute-audio',
        `--user-data-dir=${profileDir}`,
        '--remote-debugging-pipe',
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
    ),
  );
  browser.stderr.on('data', (d) => {
    browserLog = (browserLog + d.toString()).slice(-8000);
  });
  await new Promise((resolve, reject) => {
    browser.once('spawn', resolve);
    browser.once('error', (e) => reject(new Error(`cannot run ${executable}: ${e.message}`)));
  });
  devtools = new DevTools(browser);
});

after(async () => {
  if (browser?.pid !== undefined) {
    if (devtools) await devtools.send('Browser.close').catch(() => {});
    if (!(await waitExit(browser, 10_000))) {
      browser.kill('SIGKILL');
      await waitExit(browser, 5_000);
    }
  }
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  if (server) assert.equal(await server.stop(), 0, server.log());
});

// Polls `check` (which returns a value, or undefined to keep waiting) every
// 100 ms for at most timeoutMs.
async function poll(what, timeoutMs, check) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\nbrowser log:\n${browserLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('the chat page streams a reply typed in and sent with a click', async () => {
  const { targetId } = await devtools.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await devtools.send('Target.attachToTarget', { targetId, flatten: true });
  const page = (method, params) => devtools.send(method, params, sessionId);
  const evaluate = async (expression) => {
    const r = await page('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`${expression}: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value;
  };

  // What the page does, seen from outside: its exceptions and its requests.
  const exceptions = [];
  const requests = new Map();  // requestId -> {url, body, mimeType, status}
  devtools.listeners.add((event) => {
    if (event.sessionId !== sessionId) return;
    const p = event.params;
    if (event.method === 'Runtime.exceptionThrown') exceptions.push(JSON.stringify(p.exceptionDetails));
    if (event.method === 'Network.requestWillBeSent' && p.request.url.endsWith('/v1/chat/completions')) {
      requests.set(p.requestId, { id: p.requestId, postData: p.request.postData });
    }
    if (event.method === 'Network.responseReceived' && requests.has(p.requestId)) {
      Object.assign(requests.get(p.requestId), { mimeType: p.response.mimeType, status: p.response.status });
    }
  });
  // The chat requests in order, with their JSON bodies (Chromium leaves the
  // body out of the event when it is large; then it is asked for).
  const sentRequests = async () => {
    const out = [...requests.values()];
    for (const r of out) {
      if (r.body !== undefined) continue;
      const postData = r.postData ?? (await page('Network.getRequestPostData', { requestId: r.id })).postData;
      r.body = JSON.parse(postData);
    }
    return out;
  };
  await page('Runtime.enable');
  await page('Network.enable');
  await page('Page.enable');
  const nav = await page('Page.navigate', { url: `${server.url}/` });
  assert.equal(nav.errorText, undefined, nav.errorText);
  await poll('the page to load', kCommandTimeoutMs, async () =>
    (await evaluate(`document.readyState === 'complete' && !!document.getElementById('send')`)) || undefined);
  assert.equal(await evaluate('document.title'), 'clmcache chat');

  // Types text into the box the way a keyboard would, clicks Send with the
  // mouse, and waits until the page is ready for the next message.
  const sendMessage = async (text, turn) => {
    await evaluate(`document.getElementById('input').focus()`);
    await page('Input.insertText', { text });
    assert.equal(await evaluate(`document.getElementById('input').value`), text);
    const { x, y } = await evaluate(`(() => {
      const b = document.getElementById('send');
      b.scrollIntoView();
      const r = b.getBoundingClientRect();
      return {x: r.left + r.width / 2, y: r.top + r.height / 2};
    })()`);
    for (const type of ['mousePressed', 'mouseReleased']) {
      await page('Input.dispatchMouseEvent', { type, x, y, button: 'left', clickCount: 1 });
    }
    return poll(`reply ${turn}`, kReplyTimeoutMs, async () => {
      const state = await evaluate(`(() => {
        const replies = [...document.querySelectorAll('#log .assistant')].map(d => d.textContent);
        const errors = [...document.querySelectorAll('#log .error')].map(d => d.textContent);
        return {replies, errors, busy: document.getElementById('send').disabled,
                stats: document.getElementById('stats').textContent,
                input: document.getElementById('input').value};
      })()`);
      if (state.errors.length > 0) throw new Error(`the page shows an error: ${state.errors.join('; ')}`);
      if (state.replies.length < turn || state.busy) return undefined;
      return state;
    });
  };

  const prompt = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.';
  const first = await sendMessage(prompt, 1);
  assert.equal(first.input, '', 'the page clears the box once sent');
  assert.equal(first.replies.length, 1);
  assert.ok(first.replies[0].startsWith('Assistant: '), first.replies[0]);
  const reply = first.replies[0].slice('Assistant: '.length);
  assert.ok(reply.length > 0, 'the reply is not empty');
  assert.match(first.stats, /^\d+ prompt tokens \(0 cached\), \d+ generated$/);
  assert.equal(
    await evaluate(`[...document.querySelectorAll('#log .user')].map(d => d.textContent).join('|')`),
    `You: ${prompt}`,
  );

  // The page asked for a stream and got server-sent events.
  const sent = await sentRequests();
  assert.equal(sent.length, 1);
  assert.equal(sent[0].status, 200);
  assert.equal(sent[0].mimeType, 'text/event-stream');
  assert.equal(sent[0].body.stream, true);
  assert.deepEqual(sent[0].body.messages, [{ role: 'user', content: prompt }]);

  // The same request, not streamed and without the session, gives the same
  // greedy text (the server runs at --temp 0).
  const { stream: _s, stream_options: _o, session_id: _id, ...whole } = sent[0].body;
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(whole),
  });
  assert.equal(res.status, 200);
  const expected = (await res.json()).choices[0].message.content;
  assert.equal(reply, expected);

  // Second turn: the session's history comes from the prefix cache.
  const second = await sendMessage('What did Lily find?', 2);
  assert.equal(second.replies.length, 2);
  const cached = second.stats.match(/^\d+ prompt tokens \((\d+) cached\), \d+ generated$/);
  assert.ok(cached, second.stats);
  assert.ok(Number(cached[1]) > 0, second.stats);
  const turns = await sentRequests();
  assert.equal(turns.length, 2);
  assert.deepEqual(turns[1].body.messages.slice(0, 2), [
    { role: 'user', content: prompt },
    { role: 'assistant', content: reply },
  ]);
  assert.equal(turns[1].body.session_id, turns[0].body.session_id);

  assert.deepEqual(exceptions, [], 'no uncaught exceptions on the page');
});
