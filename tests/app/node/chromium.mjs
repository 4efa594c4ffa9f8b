// Headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: it reads commands on fd 3 and writes replies on
// fd 4, each a JSON message ended by a NUL byte), so no port is opened and no
// automation package is needed. CHROMIUM names the browser (default:
// `chromium` on PATH); a missing browser fails the test that launches it.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { track, waitExit } from './server.mjs';

export const kCommandTimeoutMs = 20_000;

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

// Returns {devtools, log(), close()}.
export async function launchBrowser() {
  const profileDir = mkdtempSync(path.join(tmpdir(), 'clmcache-chromium-'));
  const executable = process.env.CHROMIUM || 'chromium';
  const browser = track(
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
  let log = '';
  browser.stderr.on('data', (d) => {
    log = (log + d.toString()).slice(-8000);
  });
  try {
    await new Promise((resolve, reject) => {
      browser.once('spawn', resolve);
      browser.once('error', (e) => reject(new Error(`cannot run ${executable}: ${e.message}`)));
    });
  } catch (e) {
    rmSync(profileDir, { recursive: true, force: true });
    throw e;
  }
  const devtools = new DevTools(browser);
  return {
    devtools,
    log: () => log,
    async close() {
      if (browser.pid !== undefined) {
        await devtools.send('Browser.close').catch(() => {});
        if (!(await waitExit(browser, 10_000))) {
          browser.kill('SIGKILL');
          await waitExit(browser, 5_000);
        }
      }
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

// A new tab attached in flat mode: {sessionId, page(method, params),
// evaluate(expression)}; evaluate returns the value and throws on an
// exception in the page.
export async function openTab(devtools) {
  const { targetId } = await devtools.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await devtools.send('Target.attachToTarget', { targetId, flatten: true });
  const page = (method, params) => devtools.send(method, params, sessionId);
  const evaluate = async (expression) => {
    const r = await page('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`${expression}: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value;
  };
  return { sessionId, page, evaluate };
}

// Clicks the middle of the element `selector` with the mouse.
export async function click(tab, selector) {
  const { x, y } = await tab.evaluate(`(() => {
    const b = document.querySelector(${JSON.stringify(selector)});
    b.scrollIntoView();
    const r = b.getBoundingClientRect();
    return {x: r.left + r.width / 2, y: r.top + r.height / 2};
  })()`);
  for (const type of ['mousePressed', 'mouseReleased']) {
    await tab.page('Input.dispatchMouseEvent', { type, x, y, button: 'left', clickCount: 1 });
  }
}

// Polls `check` (which returns a value, or undefined to keep waiting) every
// 100 ms for at most timeoutMs; `context()` is added to the error.
export async function poll(what, timeoutMs, check, context = () => '') {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${context()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
