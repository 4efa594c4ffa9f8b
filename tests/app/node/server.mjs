// Starts the real `clmcache serve` on a port it picks itself (--port 0) with
// the stories260K reference model, and stops it again.
//
// CLMCACHE_BINARY: the clmcache executable. CLMCACHE_SHARED (or, when unset,
// CLMCACHE_SHARED_DEFAULT, which the build sets): the shared reference data.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export const kModelId = 'stories260K';

function required(name, value) {
  if (!value) throw new Error(`${name} is not set; run this test through ctest`);
  return value;
}

export function modelPath() {
  const shared = process.env.CLMCACHE_SHARED || required('CLMCACHE_SHARED_DEFAULT', process.env.CLMCACHE_SHARED_DEFAULT);
  const model = path.join(shared, 'models', `${kModelId}.gguf`);
  if (!existsSync(model)) throw new Error(`missing reference file: ${model}`);
  return model;
}

// Everything started here is killed if the test process exits early.
const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

// Resolves once the child has exited, or after timeoutMs with false.
export function waitExit(child, timeoutMs) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

// Returns {url, log(), stop()}; url is like http://127.0.0.1:PORT.
export async function startServer(extraArgs = []) {
  const binary = required('CLMCACHE_BINARY', process.env.CLMCACHE_BINARY);
  const args = ['serve', '--port', '0', '-m', modelPath(), '-c', '512', ...extraArgs];
  const child = track(spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
  let log = '';
  const url = await new Promise((resolve, reject) => {
    // Loading the tiny model takes well under a second; the bound only keeps
    // a broken build from hanging the suite.
    const timer = setTimeout(() => reject(new Error(`the server did not start within 30 s:\n${log}`)), 30_000);
    const onData = (data) => {
      log += data.toString();
      const m = log.match(/ on (http:\/\/[^\s]+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${binary}: ${e.message}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code ?? signal}) before listening:\n${log}`));
    });
  });
  return {
    url,
    log: () => log,
    // SIGTERM, then SIGKILL if it has not exited within 15 s; returns the
    // exit code (null if it had to be killed).
    async stop() {
      child.kill('SIGTERM');
      if (await waitExit(child, 15_000)) return child.exitCode;
      child.kill('SIGKILL');
      await waitExit(child, 5_000);
      return null;
    },
  };
}
