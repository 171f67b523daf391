// One path language (issue 33): every path a tool prints (find, search, read,
// tree, write, edit, mkdir, move; structuredContent.path and the like) is
// accepted back by every tool that takes a path, and names the same entry:
// a table over every tool x {one folder, two folders, two folders with one
// name}. Through the SDK client, on real folders.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { serveTree, waitFor, type LooseResult } from '../helpers.ts';

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };
interface Printed {
  by: string;
  path: string;
  uri: string;
}

const CONFIGS: Array<{ name: string; files: Record<string, string>; roots: string[] }> = [
  { name: 'one folder', files: { 'p/notes.txt': 'findme one\n', 'p/sub/a.md': 'findme a\n' }, roots: ['p'] },
  {
    name: 'two folders',
    files: { 'notes/notes.txt': 'findme n\n', 'notes/sub/a.md': 'findme a\n', 'code/notes.txt': 'findme c\n', 'code/sub/b.md': 'findme b\n' },
    roots: ['notes', 'code'],
  },
  {
    name: 'two folders with one name',
    files: { 'a/same/notes.txt': 'findme 1\n', 'a/same/sub/a.md': 'findme a\n', 'b/same/notes.txt': 'findme 2\n', 'b/same/sub/b.md': 'findme b\n' },
    roots: ['a/same', 'b/same'],
  },
];

for (const config of CONFIGS) {
  describe(`every printed path is accepted back (${config.name})`, () => {
    const tree = serveTree(config.files, ({ root, state }) => [...config.roots.map((r) => join(root, r)), '--db', join(state, 'index.db'), '--write']);
    const call = async (name: string, args: Record<string, unknown>) => (await tree.conn.request('tools/call', { name, arguments: args })) as ToolCall;
    const text = (r: ToolCall) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    const fileUris = () => Object.keys(config.files).map((rel) => tree.uriOf(rel));

    /** What each tool prints, with the URI it means. */
    async function printed(): Promise<Printed[]> {
      const out: Printed[] = [];
      const add = (by: string, path: unknown, uri: unknown) => out.push({ by, path: path as string, uri: uri as string });
      for (const m of (await call('find', { glob: '**' })).structuredContent!.matches as LooseResult[]) add('find', m.path, m.uri);
      for (const e of (await call('tree', {})).structuredContent!.entries as LooseResult[]) add('tree', e.path, e.uri);
      const found = await waitFor(async () => {
        const results = (await call('search', { query: 'findme' })).structuredContent?.results as LooseResult[] | undefined;
        return results && results.length === fileUris().length ? results : undefined;
      }, 20_000, 'every file searchable');
      for (const r of found!) add('search', r.path, r.uri);
      for (const uri of fileUris()) {
        const read = (await call('read', { uri })).structuredContent!;
        add('read', read.path, read.uri);
        const content = readFileSync(new URL(uri), 'utf8');
        const written = (await call('write', { path: uri, content })).structuredContent!;
        add('write', written.path, written.uri);
        const edited = (await call('edit', { path: uri, edits: [{ old_text: 'findme', new_text: 'x' }], dry_run: true })).structuredContent!;
        add('edit', edited.path, edited.uri);
        const moved = (await call('move', { from: uri, to: `${uri}.moved` })).structuredContent!;
        add('move (from)', moved.from, uri);
        const back = (await call('move', { from: `${uri}.moved`, to: uri })).structuredContent!;
        add('move', back.path, back.uri);
      }
      for (const e of out.filter((p) => p.uri.endsWith('/')).slice()) {
        const made = (await call('mkdir', { path: e.uri })).structuredContent;
        if (made) add('mkdir', made.path, made.uri);
      }
      return out;
    }

    test('find, search, read, tree, write, edit, mkdir and move take back what each prints, and mean the same entry', async () => {
      const all = await printed();
      const seen = new Set<string>();
      const failures: string[] = [];
      for (const p of all) {
        const key = `${p.path}\t${p.uri}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const folder = p.uri.endsWith('/');
        const where = `${p.by} printed ${JSON.stringify(p.path)} for ${p.uri}`;
        const expect = (tool: string, result: ToolCall, uri: unknown) => {
          if (result.isError) failures.push(`${tool}: ${where}: ${text(result)}`);
          else if (uri !== p.uri) failures.push(`${tool}: ${where}: named ${String(uri)}`);
        };
        const read = await call('read', { uri: p.path });
        expect('read', read, read.structuredContent?.uri);
        const find = await call('find', { prefix: p.path });
        const matches = ((find.structuredContent?.matches as LooseResult[] | undefined) ?? []).map((m) => m.uri);
        if (!matches.includes(p.uri) && !(folder && matches.some((u) => String(u).startsWith(p.uri)))) failures.push(`find prefix: ${where}: ${text(find)}`);
        if (folder) {
          const outline = await call('tree', { uri: p.path, depth: 1 });
          expect('tree', outline, (outline.structuredContent?.entries as LooseResult[] | undefined)?.[0]?.uri);
          // A served folder is not made or changed (mkdir says so); the write tools' paths are below the folders.
          if (!config.roots.some((r) => `${tree.uriOf(r)}/` === p.uri)) {
            const made = await call('mkdir', { path: p.path });
            expect('mkdir', made, made.structuredContent?.uri);
          }
        } else {
          const search = await call('search', { query: 'findme', prefix: p.path });
          const hits = ((search.structuredContent?.results as LooseResult[] | undefined) ?? []).map((r) => r.uri);
          if (!hits.includes(p.uri)) failures.push(`search prefix: ${where}: ${text(search)}`);
          const edit = await call('edit', { path: p.path, edits: [{ old_text: 'findme', new_text: 'x' }], dry_run: true });
          expect('edit', edit, edit.structuredContent?.uri);
          const write = await call('write', { path: p.path, content: readFileSync(new URL(p.uri), 'utf8') });
          expect('write', write, write.structuredContent?.uri);
          const there = await call('move', { from: p.path, to: `${p.path}.moved` });
          expect('move', there, there.isError ? undefined : (there.structuredContent!.uri as string).replace(/\.moved$/, ''));
          // Back, by the path move printed.
          if (!there.isError) expect('move back', await call('move', { from: there.structuredContent!.path, to: p.path }), p.uri);
        }
      }
      assert.deepEqual(failures, []);
      // The table covered every tool's output.
      assert.deepEqual([...new Set(all.map((p) => p.by))].sort(), ['edit', 'find', 'mkdir', 'move', 'move (from)', 'read', 'search', 'tree', 'write']);
    });
  });
}
