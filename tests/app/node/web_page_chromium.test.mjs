// The chat page at `/` in headless Chromium against the real `clmcache
// serve`: type a message, click Send, and watch the streamed reply appear; it
// must equal the non-streamed reply to the same request. A second turn must
// report cached prompt tokens (the page keeps a session).
//
// The browser is driven as chromium.mjs says.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { click, kCommandTimeoutMs, launchBrowser, openTab, poll as pollFor } from './chromium.mjs';
import { startServer } from './server.mjs';

const kReplyTimeoutMs = 60_000;

let server;
let browser;

before(async () => {
  server = await startServer(['--temp', '0']);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal(await server.stop(), 0, server.log());
});

const poll = (what, timeoutMs, check) => pollFor(what, timeoutMs, check, () => `browser log:\n${browser.log()}`);

test('the chat page streams a reply typed in and sent with a click', async () => {
  const devtools = browser.devtools;
  const tab = await openTab(devtools);
  const { sessionId, page, evaluate } = tab;

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
    await click(tab, '#send');
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
