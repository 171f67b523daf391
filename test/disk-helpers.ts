// Trees the ordinary helpers cannot write: names that are not valid UTF-8, paths past PATH_MAX.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

/** Creates a file whose name is `name` bytes (may be invalid UTF-8) in `dir`. */
export function writeRawName(dir: string, name: Buffer, content = 'hi'): void {
  writeFileSync(Buffer.concat([Buffer.from(dir + '/'), name]), content);
}

/** A chain of `depth` folders named 'a' x 200 under `root` (past PATH_MAX at depth 21), with f.txt at the bottom. */
export function deepChain(root: string, depth = 25): void {
  // Each step is a chdir by a relative name: no single path passed to the OS is too long.
  const script = `const fs=require('fs');const n='a'.repeat(200);for(let i=0;i<${depth};i++){fs.mkdirSync(n);process.chdir(n)}fs.writeFileSync('f.txt','hi')`;
  execFileSync(process.execPath, ['-e', script], { cwd: root });
}

/** rm -rf: Node's own recursive rm works on whole paths and fails past PATH_MAX. */
export function removeDeep(path: string): void {
  execFileSync('rm', ['-rf', path]);
}
