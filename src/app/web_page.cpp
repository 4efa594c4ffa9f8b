#include "app/web_page.h"

namespace clm {

namespace {

constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>clmcache chat</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 48rem; margin: 2rem auto; padding: 0 1rem; }
  #log { white-space: pre-wrap; border: 1px solid #ccc; padding: 0.75rem; min-height: 12rem; }
  .user { color: #1a4f8a; } .assistant { color: #222; } .error { color: #a00; }
  textarea { width: 100%; box-sizing: border-box; margin-top: 0.75rem; }
  .row { display: flex; gap: 0.5rem; margin-top: 0.5rem; align-items: center; }
  #stats { color: #666; font-size: 0.85rem; }
</style>
</head>
<body>
<h1>clmcache</h1>
<p><a id="dashboard-link" href="/dashboard">Dashboard</a>: the cache at work (hit rate, reuse map, tiers)</p>
<div id="log"></div>
<textarea id="input" rows="4" placeholder="Type a message; Ctrl+Enter sends"></textarea>
<div class="row">
  <button id="send">Send</button>
  <button id="reset">New chat</button>
  <input id="key" type="password" placeholder="API key (if the server needs one)">
  <span id="stats"></span>
</div>
<script>
const log = document.getElementById('log');
const input = document.getElementById('input');
const send = document.getElementById('send');
const stats = document.getElementById('stats');
let messages = [];
const session = 'web-' + Math.random().toString(36).slice(2);

function line(cls, text) {
  const div = document.createElement('div');
  div.className = cls;
  div.textContent = text;
  log.appendChild(div);
  return div;
}

async function ask() {
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  send.disabled = true;
  messages.push({role: 'user', content: text});
  line('user', 'You: ' + text);
  const out = line('assistant', '');
  let reply = '';
  const headers = {'Content-Type': 'application/json'};
  const key = document.getElementById('key').value;
  if (key) headers['Authorization'] = 'Bearer ' + key;
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST', headers,
      body: JSON.stringify({messages, stream: true, session_id: session,
                            stream_options: {include_usage: true}})});
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      throw new Error((body.error && body.error.message) || res.statusText);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const l of event.split('\n')) {
          if (!l.startsWith('data: ')) continue;
          const data = l.slice(6);
          if (data === '[DONE]') continue;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message);
          if (chunk.usage) {
            stats.textContent = chunk.usage.prompt_tokens + ' prompt tokens (' +
              chunk.usage.prompt_tokens_details.cached_tokens + ' cached), ' +
              chunk.usage.completion_tokens + ' generated';
          }
          const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
          if (delta && delta.content) {
            reply += delta.content;
            out.textContent = 'Assistant: ' + reply;
          }
        }
      }
    }
    messages.push({role: 'assistant', content: reply});
  } catch (e) {
    messages.pop();
    out.className = 'error';
    out.textContent = 'Error: ' + e.message;
  }
  send.disabled = false;
  input.focus();
}

send.onclick = ask;
input.addEventListener('keydown', e => { if (e.key === 'Enter' && e.ctrlKey) ask(); });
document.getElementById('reset').onclick = () => { messages = []; log.textContent = ''; stats.textContent = ''; };
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view chat_web_page() { return kPage; }

}  // namespace clm
