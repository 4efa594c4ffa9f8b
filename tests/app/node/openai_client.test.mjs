// The official `openai` npm client against the real `clmcache serve`: model
// list, chat completions whole and streamed (async iteration over chunks),
// completions whole and streamed, prefix-cache hits reported in
// usage.prompt_tokens_details.cached_tokens, scoring a token-id prompt with
// echo + logprobs, and errors as APIError, an oversized body's 413 included.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import OpenAI from 'openai';

import { kModelId, startServer } from './server.mjs';

// Longer than one 32-token KV block, so a repeat finds a cached block.
const kStory =
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. ' +
  'One day, she saw a big red ball in the park.';

let server;
let client;

before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, server.log());
});

function checkUsage(usage) {
  assert.ok(usage.prompt_tokens > 0);
  assert.ok(usage.completion_tokens >= 1);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

test('models.list returns the one model', async () => {
  const ids = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.deepEqual(ids, [kModelId]);
});

test('chat completion, whole and streamed, give the same greedy text', async () => {
  const params = {
    model: kModelId,
    messages: [
      { role: 'system', content: 'Tell stories.' },
      { role: 'user', content: 'Tell me about a cat.' },
    ],
    max_tokens: 24,
    temperature: 0,
  };
  const whole = await client.chat.completions.create(params);
  assert.equal(whole.object, 'chat.completion');
  assert.ok(whole.id.startsWith('chatcmpl-'), whole.id);
  assert.equal(whole.model, kModelId);
  assert.equal(whole.choices.length, 1);
  const choice = whole.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(choice.message.content.length > 0);
  assert.ok(['length', 'stop'].includes(choice.finish_reason), choice.finish_reason);
  checkUsage(whole.usage);

  const stream = await client.chat.completions.create({
    ...params,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let pieces = 0;
  let finishReason = null;
  let usage = null;
  const ids = new Set();
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.content) {
        text += c.delta.content;
        ++pieces;
      }
      if (c.finish_reason) finishReason = c.finish_reason;
    }
  }
  assert.equal(text, choice.message.content);
  assert.ok(pieces > 1, `the reply came in ${pieces} piece(s), not streamed token by token`);
  assert.equal(ids.size, 1, 'every chunk of one stream has the same id');
  assert.equal(finishReason, choice.finish_reason);
  assert.ok(usage, 'stream_options.include_usage gives a usage chunk');
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
});

test('completion, whole then repeated, reports cached prompt tokens', async () => {
  const params = { model: kModelId, prompt: kStory, max_tokens: 12, temperature: 0 };
  const first = await client.completions.create(params);
  assert.equal(first.object, 'text_completion');
  assert.ok(first.id.startsWith('cmpl-'), first.id);
  assert.equal(first.choices.length, 1);
  assert.equal(typeof first.choices[0].text, 'string');
  assert.ok(first.choices[0].text.length > 0);
  checkUsage(first.usage);
  assert.ok(first.usage.prompt_tokens > 32, `${first.usage.prompt_tokens} prompt tokens`);
  // Earlier requests share at most the first token or so with this prompt.
  assert.ok(first.usage.prompt_tokens_details.cached_tokens < 32, JSON.stringify(first.usage));

  const second = await client.completions.create(params);
  assert.ok(second.usage.prompt_tokens_details.cached_tokens >= 32, JSON.stringify(second.usage));
  assert.ok(second.usage.prompt_tokens_details.cached_tokens <= second.usage.prompt_tokens);
  assert.equal(second.choices[0].text, first.choices[0].text);
});

test('legacy completions score token ids with echo + logprobs and max_tokens 0', async () => {
  // The prompt's ids, read back as token_id:N names.
  const score = { model: kModelId, echo: true, logprobs: 2, max_tokens: 0, temperature: 0 };
  const byText = await client.completions.create({
    ...score, prompt: kStory, reuse: 'off', return_tokens_as_token_ids: true,
  });
  const ids = byText.choices[0].logprobs.tokens.map((t) => Number(t.slice('token_id:'.length)));
  assert.equal(ids.length, byText.usage.prompt_tokens);
  const scored = await client.completions.create({ ...score, prompt: ids, reuse: 'off' });
  const choice = scored.choices[0];
  assert.equal(choice.text, kStory);
  assert.equal(choice.finish_reason, 'length');
  assert.equal(scored.usage.completion_tokens, 0);
  const lp = choice.logprobs;
  assert.equal(lp.tokens.length, ids.length);
  assert.equal(lp.token_logprobs.length, ids.length);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  // Nothing was reused, so every later position has its distribution.
  for (let i = 1; i < ids.length; ++i) {
    assert.equal(typeof lp.token_logprobs[i], 'number', `position ${i}`);
    assert.equal(Object.keys(lp.top_logprobs[i]).length, 2, `position ${i}`);
  }
  const reuse = scored.usage.prompt_tokens_details.reuse;
  assert.equal(reuse.prefix + reuse.shift + reuse.recomputed + reuse.computed, scored.usage.prompt_tokens);
  assert.equal(reuse.computed, scored.usage.prompt_tokens);
});

test('streamed completion equals the whole one', async () => {
  const params = { model: kModelId, prompt: 'Once upon a time', max_tokens: 20, temperature: 0 };
  const whole = await client.completions.create(params);
  let text = '';
  let finishReason = null;
  for await (const chunk of await client.completions.create({ ...params, stream: true })) {
    assert.equal(chunk.object, 'text_completion');
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finishReason = c.finish_reason;
    }
  }
  assert.ok(text.length > 0);
  assert.equal(text, whole.choices[0].text);
  assert.equal(finishReason, whole.choices[0].finish_reason);
});

test('errors reach the client as APIError with status and code', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: kModelId, messages: [{ role: 'user', content: 'x' }], n: 3 }),
    (e) => {
      assert.ok(e instanceof OpenAI.UnprocessableEntityError, `${e.constructor.name}: ${e.message}`);
      assert.equal(e.status, 422);
      assert.equal(e.code, 'unsupported_value');
      return true;
    },
  );
  await assert.rejects(
    client.completions.create({ model: 'gpt-4', prompt: 'x' }),
    (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `${e.constructor.name}: ${e.message}`);
      assert.equal(e.code, 'model_not_found');
      return true;
    },
  );
});

// A body over --max-body-bytes (8 MiB by default) sent in one go: the client
// finishes sending, then reads the 413 and its JSON body, where a reset
// connection would surface as a connection error.
test('an oversized request gets its 413 as an APIError', async () => {
  const prompt = 'a'.repeat(12 << 20);
  await assert.rejects(client.completions.create({ model: kModelId, prompt, max_tokens: 1 }), (e) => {
    assert.ok(e instanceof OpenAI.APIError, `${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, 413, e.message);
    assert.equal(e.code, 'request_too_large');
    return true;
  });
});
