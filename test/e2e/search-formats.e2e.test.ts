// The search tool finds what the read tool can show (issue 14, goal 5): the
// text of PDF pages, .docx documents, notebook cells and UTF-16 files, through
// the same converters and budgets as a read, with the page or cell of each hit.
// Real documents in real temp folders, the server in process over the stdio wire.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { makeDocx, makeFlateBombPdf, makeNotebook, makePdf, makePptx, makeXlsx, makeZip } from '../fixtures.ts';
import { connect, serveTree, tempDir, waitFor, writeTree, type Connected, type LooseResult } from '../helpers.ts';

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };
type Hit = { path: string; line: number; text: string; page?: number; cell?: number; sheet?: number; sheetName?: string; slide?: number; mimeType?: string };

const MIB = 1024 * 1024;

function utf16le(text: string): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
}

function utf16be(text: string): Buffer {
  const le = Buffer.from(text, 'utf16le');
  return Buffer.concat([Buffer.from([0xfe, 0xff]), le.swap16()]);
}

const TREE: Record<string, string | Uint8Array> = {
  'plain.txt': 'first line\nthe plainword is here\n',
  'report.pdf': makePdf(['Quarterly report\nintroduction', 'second page\nnothing special', 'third page\nthe zanzibarquux figures']),
  'letter.docx': makeDocx([{ heading: 1, text: 'A letter' }, 'Dear reader,', 'the xylophonic orchestra played on.']),
  'analysis.ipynb': makeNotebook([
    { cell_type: 'markdown', source: '# Analysis' },
    { cell_type: 'code', source: 'import pandas as pd' },
    { cell_type: 'markdown', source: ['Some words\n', 'about the quokkafish population\n'] },
    { cell_type: 'code', source: 'print(1)', outputs: [{ output_type: 'stream', name: 'stdout', text: ['platypoid output\n'] }] },
  ]),
  'wide.txt': utf16le('line one\nthe wombatron of UTF-16 LE\n'),
  'wide-be.txt': utf16be('big endian numbatical text\n'),
  'page.html': '<html><body><p>an ocelotine paragraph</p></body></html>\n',
  'budget.xlsx': makeXlsx([
    { name: 'Summary', rows: [['Total', 3]] },
    { name: 'Q2 costs', rows: [['Item', 'Cost'], ['the armadillian rent', 1200]] },
    // A name that would forge a line or reach a terminal raw (NEL, CSI, LS, DEL), and a quote.
    { name: 'Evil\u0085x\u009b31m\u2028y\u007f"q', rows: [['the gnuhorned row']] },
  ]),
  'deck.pptx': makePptx([{ title: 'Intro', body: ['hello'] }, { title: 'Plan', body: ['ship it'], notes: ['mention the pangolinous roadmap'] }]),
};

async function callTool(conn: Connected, name: string, args: Record<string, unknown>, timeoutMs?: number): Promise<ToolCall> {
  return (await conn.request('tools/call', { name, arguments: args }, timeoutMs === undefined ? undefined : { timeout: timeoutMs })) as ToolCall;
}

const textOf = (result: ToolCall) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const hitsOf = (result: ToolCall) => (result.structuredContent?.results ?? []) as Hit[];

/**
 * A search once the content index is complete (its result says `indexing` until then). The index converts in a
 * process at a lower priority, judged by the CPU it uses: on a loaded machine its wall-clock time is anyone's
 * guess (a PDF's second of CPU took over a minute with two test suites on 2 cores), hence the ceiling.
 */
async function searchComplete(conn: Connected, query: string): Promise<ToolCall> {
  return waitFor(async () => {
    const result = await callTool(conn, 'search', { query });
    return result.structuredContent?.indexing ? null : result;
  }, 180_000, 'the content index') as Promise<ToolCall>;
}

describe('search covers the converted formats', () => {
  const tree = serveTree(TREE, ({ root, state }) => [root, '--db', join(state, 'index.db')]);

  test('plain text keeps its path:line format', async () => {
    const result = await searchComplete(tree.conn, 'plainword');
    assert.deepEqual(hitsOf(result).map((h) => [h.path, h.line, h.page, h.cell]), [['plain.txt', 2, undefined, undefined]]);
    assert.match(textOf(result), /^plain\.txt:2: the plainword is here$/m);
  });

  test('a word only inside a PDF page is found, with its page', async () => {
    const result = await searchComplete(tree.conn, 'zanzibarquux');
    const hits = hitsOf(result);
    assert.equal(hits.length, 1, textOf(result));
    assert.equal(hits[0]!.path, 'report.pdf');
    assert.equal(hits[0]!.page, 3);
    assert.equal(hits[0]!.mimeType, 'text/plain');
    assert.match(hits[0]!.text, /zanzibarquux figures/);
    assert.match(textOf(result), /^report\.pdf:\d+ \(page 3\): the zanzibarquux figures$/m);
    // The other pages are placed too.
    assert.equal(hitsOf(await searchComplete(tree.conn, 'introduction'))[0]?.page, 1);
  });

  test('a word inside a .docx is found', async () => {
    const hits = hitsOf(await searchComplete(tree.conn, 'xylophonic'));
    assert.deepEqual(hits.map((h) => [h.path, h.mimeType, h.page, h.cell]), [['letter.docx', 'text/markdown', undefined, undefined]]);
    assert.match(hits[0]!.text, /xylophonic orchestra/);
  });

  test('a word inside a notebook cell is found with its cell (1-based), in sources and outputs', async () => {
    const result = await searchComplete(tree.conn, 'quokkafish');
    const hits = hitsOf(result);
    assert.deepEqual(hits.map((h) => [h.path, h.cell]), [['analysis.ipynb', 3]]);
    assert.equal(hits[0]!.text, 'about the quokkafish population', 'the line of the Markdown form, not of the JSON');
    assert.match(textOf(result), /^analysis\.ipynb:\d+ \(cell 3\): about the quokkafish population$/m);
    assert.equal(hitsOf(await searchComplete(tree.conn, 'platypoid'))[0]?.cell, 4);
    assert.equal(hitsOf(await searchComplete(tree.conn, 'pandas'))[0]?.cell, 2);
    // The notebook's JSON keys are not its text.
    assert.equal(hitsOf(await searchComplete(tree.conn, 'nbformat_minor')).length, 0);
  });

  test('a word inside a workbook is found with its sheet and the sheet\'s name; inside a slide\'s notes, with its slide', async () => {
    const sheet = await searchComplete(tree.conn, 'armadillian');
    assert.deepEqual(hitsOf(sheet).map((h) => [h.path, h.mimeType, h.sheet, h.sheetName, h.text]), [
      ['budget.xlsx', 'text/markdown', 2, 'Q2 costs', '| the armadillian rent | 1200 |'],
    ]);
    assert.match(textOf(sheet), /^budget\.xlsx:\d+ \(sheet 2 "Q2 costs"\): \| the armadillian rent \| 1200 \|$/m);
    const evil = textOf(await searchComplete(tree.conn, 'gnuhorned'));
    assert.match(evil, /^budget\.xlsx:\d+ \(sheet 3 "Evil\\u0085x\\u009b31m\\u2028y\\u007f\\"q"\): \| the gnuhorned row \|$/m);
    assert.doesNotMatch(evil, /[\u0085\u009b\u2028\u007f]/);
    const slide = await searchComplete(tree.conn, 'pangolinous');
    assert.deepEqual(hitsOf(slide).map((h) => [h.path, h.slide, h.text]), [['deck.pptx', 2, 'mention the pangolinous roadmap']]);
    assert.match(textOf(slide), /^deck\.pptx:\d+ \(slide 2\): mention the pangolinous roadmap$/m);
  });

  test('UTF-16 text (both byte orders) is found, on its line', async () => {
    assert.deepEqual(hitsOf(await searchComplete(tree.conn, 'wombatron')).map((h) => [h.path, h.line]), [['wide.txt', 2]]);
    assert.deepEqual(hitsOf(await searchComplete(tree.conn, 'numbatical')).map((h) => [h.path, h.line]), [['wide-be.txt', 1]]);
  });

  test('HTML is found by its text', async () => {
    assert.deepEqual(hitsOf(await searchComplete(tree.conn, 'ocelotine')).map((h) => h.path), ['page.html']);
  });

  test('a changed PDF and .docx are found by their new words, not their old ones', async () => {
    const paths = async (query: string) => hitsOf(await callTool(tree.conn, 'search', { query })).map((h) => h.path);
    await searchComplete(tree.conn, 'zanzibarquux');
    writeFileSync(join(tree.root, 'report.pdf'), makePdf(['rewritten', 'now with the marmosetic numbers']));
    writeFileSync(join(tree.root, 'letter.docx'), makeDocx(['a letter about the capybarine choir']));
    await waitFor(async () => (await paths('marmosetic')).includes('report.pdf'), 180_000, 'the new PDF words');
    await waitFor(async () => (await paths('capybarine')).includes('letter.docx'), 180_000, 'the new .docx words');
    assert.deepEqual(await paths('zanzibarquux'), []);
    assert.deepEqual(await paths('xylophonic'), []);
    assert.equal(hitsOf(await callTool(tree.conn, 'search', { query: 'marmosetic' }))[0]?.page, 2);
  });
});

describe('a hostile or oversize document is skipped; the others are searched', () => {
  const tree = serveTree(
    {
      // Inflates to 3.5 GiB inside pdf.js: the conversion process is killed at its memory budget.
      'a-bomb.pdf': makeFlateBombPdf(3.5 * 1024 * MIB),
      // Declares small entries that inflate past the zip budget.
      'b-bomb.docx': makeZip([
        { name: '[Content_Types].xml', data: '<Types/>' },
        { name: 'word/document.xml', data: Buffer.alloc(80 * MIB), declaredSize: 100 },
      ]),
      // Over --max-read-bytes (4 MiB by default): read would not convert it, so search does not either.
      'c-oversize.pdf': makePdf([`oversizeword ${'x'.repeat(4.5 * MIB)}`]),
      'd-broken.ipynb': '{"cells": [',
      'e-fine.pdf': makePdf(['the gnuplotter survives']),
      'f-fine.txt': 'gnuplotter in text too\n',
    },
    ({ root, state }) => [root, '--db', join(state, 'index.db'), '--log-level', 'debug'],
  );

  test('the build finishes, the good files are found, the bad ones skipped and logged at debug', async () => {
    const result = await searchComplete(tree.conn, 'gnuplotter');
    assert.deepEqual(hitsOf(result).map((h) => h.path).sort(), ['e-fine.pdf', 'f-fine.txt']);
    assert.deepEqual(hitsOf(await searchComplete(tree.conn, 'oversizeword')), []);
    const stderr = tree.conn.stderr();
    // Judged by the memory bound, not by which limit stopped it (see formats.e2e.test.ts): the RSS sampler,
    // V8's heap limit, the address-space limit (SIGABRT, or SIGSEGV from a failed mapping) or, as the content
    // index's conversion process runs at a lower priority, on a loaded machine the time budget.
    assert.match(
      stderr,
      /debug: content index: .*a-bomb\.pdf.* skipped: (converter (used more than \d+ MiB of memory|ran out of memory|aborted \(SIGABRT\), most likely out of memory|process exited \(SIG[A-Z]+\))|conversion took longer than \d+ ms)/,
    );
    assert.match(stderr, /debug: content index: .*b-bomb\.docx.* skipped: zip entr.* (uncompress|zip bomb)/);
    assert.match(stderr, /debug: content index: .*d-broken\.ipynb.* skipped: notebook is not valid JSON/);
    assert.doesNotMatch(stderr, /warn: .*(a-bomb|b-bomb|d-broken)/, 'skipping is not worth a warning: nobody asked to read them');
    // The server still reads and converts.
    const read = await callTool(tree.conn, 'read', { uri: 'e-fine.pdf' });
    assert.match(JSON.stringify(read.content), /gnuplotter survives/);
  });
});

describe('an early search on a small folder waits for the content index', () => {
  test('a search sent at once is answered from the complete index, not "No matches"', async () => {
    const root = tempDir();
    const state = tempDir('folder-mcp-state-');
    // About 900 files: well under the 1,000 a search waits for; the word is in the last one built.
    const files: Record<string, string | Uint8Array> = {};
    for (let i = 0; i < 880; i++) files[`d${i % 20}/f${i}.txt`] = `${'filler words here '.repeat(100)}\nnumber ${i}\n`;
    for (let i = 0; i < 6; i++) files[`docs/p${i}.pdf`] = makePdf([`page of document ${i}`]);
    files['zz/last.pdf'] = makePdf(['cover', 'the lemurian clue']);
    files['zz/last.txt'] = 'a lemurian line\n';
    writeTree(root.path, files);
    // The wait is 5 s by default; a loaded machine (two test runs on two cores) can take longer to build
    // 900 files and start the conversion process, and this test is about waiting, not about 5 s.
    const conn = await connect([root.path, '--db', join(state.path, 'index.db'), '--search-wait-ms', '60000']);
    try {
      const result = await callTool(conn, 'search', { query: 'lemurian' }, 70_000);
      assert.equal(result.structuredContent?.indexing, undefined, textOf(result));
      assert.deepEqual(hitsOf(result).map((h) => [h.path, h.page]).sort(), [['zz/last.pdf', 2], ['zz/last.txt', undefined]], textOf(result));
      assert.doesNotMatch(textOf(result), /No matches|still being built/);
    } finally {
      await conn.close();
      root.cleanup();
      state.cleanup();
    }
  });
});
