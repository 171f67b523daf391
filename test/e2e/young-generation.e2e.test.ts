// The bin starts itself again with Node 20's young-generation size where
// Node sizes it from the machine's memory (Node >= 22: 128 MiB of
// semi-spaces, 193 MiB more peak RSS at 1M files; scripts/build.mjs, BIN).
// execve keeps the pid, so the new command line is the process's own: read
// from /proc, where there is one.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CLI, tempDir, waitFor } from '../helpers.ts';

const FLAG = '--max-semi-space-size';
/** Where the bin starts itself again: execve is there (Node >= 22.15), and not Windows. */
const REEXECS = typeof (process as { execve?: unknown }).execve === 'function' && process.platform !== 'win32';
const NO_PROC = existsSync('/proc/self/cmdline') ? false : 'no /proc here to read a command line from';

/** The server's command line once it serves `folder` (it says so on stderr), and its exit code once its client goes. */
async function commandLine(folder: string, env: NodeJS.ProcessEnv, through: string[] = []): Promise<{ args: string[]; code: number | null }> {
  const [command, ...args] = [...through, process.execPath, CLI, folder];
  const child = spawn(command!, args, { env, stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    await waitFor(() => stderr.includes(`serving ${folder}`) || child.exitCode !== null, 60_000, 'the serving line');
    assert.ok(stderr.includes(`serving ${folder}`), stderr);
    const args = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    return { args, code: (child.stdin.end(), await exited) };
  } finally {
    child.kill();
  }
}

describe("the bin's young generation", { skip: NO_PROC }, () => {
  const dir = tempDir();
  after(dir.cleanup);
  const folder = join(dir.path, 'a folder, with -- odd "args"');
  mkdirSync(folder);
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: join(dir.path, 'cache') };
  delete env.NODE_OPTIONS;

  test(REEXECS ? 'is 16 MiB a semi-space: the process started itself again, its arguments intact' : 'is left to Node where it cannot start itself again', async () => {
    const { args, code } = await commandLine(folder, env);
    assert.equal(args.includes(`${FLAG}=16`), REEXECS, args.join(' '));
    assert.deepEqual(args.slice(-2), [CLI, folder]);
    assert.equal(code, 0);
  });

  // Before Node 26 a failed execve aborts the process: where a second start could fail or differ, there is none.
  const notAgain: Array<[string, string]> = [
    ['a size given in NODE_OPTIONS wins', `${FLAG}=8`],
    ['a size in V8\'s other spelling wins', '--max_semi_space_size=32'],
    ['a preload would run twice', `--require ${join(dir.path, 'preload.cjs')}`],
  ];
  for (const [why, options] of notAgain) {
    test(`${why}: the process is not started again`, async () => {
      writeFileSync(join(dir.path, 'preload.cjs'), '');
      const { args, code } = await commandLine(folder, { ...env, NODE_OPTIONS: options });
      assert.ok(!args.some((arg) => arg.replaceAll('_', '-').startsWith(FLAG)), args.join(' '));
      assert.equal(code, 0);
    });
  }

  const loader = ['/lib64/ld-linux-x86-64.so.2', '/lib/ld-linux-aarch64.so.1'].find((path) => existsSync(path));
  test('started through the dynamic loader (execPath is ld.so, which takes no node flags): serves, as it was', { skip: loader ? false : 'no dynamic loader at a known path' }, async () => {
    const { args, code } = await commandLine(folder, env, [loader!]);
    assert.equal(args[0], loader);
    assert.ok(!args.includes(`${FLAG}=16`), args.join(' '));
    assert.equal(code, 0);
  });
});
