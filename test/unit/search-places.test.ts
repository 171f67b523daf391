// Where a converted text's pages and cells start (Converter.convertLocated):
// the same text as a read's alternative, and offsets that point at each part.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { notebookConverter, notebookToMarkdown } from '../../src/content/converters/notebook.ts';
import { pdfConverter } from '../../src/content/converters/pdf.ts';
import { DEFAULT_CONVERSION_LIMITS, placeAt, type ConvertInput } from '../../src/content/converters/types.ts';
import { makeNotebook, makePdf } from '../fixtures.ts';

function input(bytes: Buffer | string): ConvertInput {
  const buffer = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  return {
    name: 'doc',
    bytes: buffer,
    text: typeof bytes === 'string' ? bytes : undefined,
    signal: new AbortController().signal,
    limits: DEFAULT_CONVERSION_LIMITS,
  };
}

describe('convertLocated', () => {
  test('notebook: the read text, each cell at its offset, empty cells counted but not placed', async () => {
    const nb = makeNotebook([
      { cell_type: 'markdown', source: '# Title' },
      { cell_type: 'markdown', source: '' },
      { cell_type: 'code', source: 'x = 1', outputs: [{ output_type: 'stream', name: 'stdout', text: 'one\n\ntwo\n' }] },
      { cell_type: 'raw', source: 'raw text' },
      { cell_type: 'markdown', source: 'para one\n\npara two' },
    ]);
    const located = await notebookConverter.convertLocated!(input(nb));
    assert.equal(located.text, notebookToMarkdown(input(nb)));
    assert.deepEqual(located.places.map((p) => [p.unit, p.number]), [['cell', 1], ['cell', 3], ['cell', 4], ['cell', 5]]);
    const at = (n: number) => located.text.slice(located.places.find((p) => p.number === n)!.offset);
    assert.ok(at(1).startsWith('# Title'));
    assert.ok(at(3).startsWith('```python\nx = 1'));
    assert.ok(at(4).startsWith('```\nraw text'));
    assert.ok(at(5).startsWith('para one'));
    // The output of cell 3, blank line and all, is in cell 3.
    assert.equal(placeAt(located.places, located.text.indexOf('two'))?.number, 3);
    assert.equal(placeAt(located.places, located.text.indexOf('para two'))?.number, 5);
  });

  test('PDF: the read text, each page at its `--- page N ---` line, a page that prints such a line is not a page', async () => {
    const pdf = makePdf(['first', 'second\n--- page 9 ---\nstill two', 'third']);
    const located = await pdfConverter.convertLocated!(input(pdf));
    assert.equal(located.text, await pdfConverter.convert(input(pdf)));
    assert.deepEqual(located.places.map((p) => p.number), [1, 2, 3]);
    for (const p of located.places) assert.ok(located.text.slice(p.offset).startsWith(`--- page ${p.number} ---\n`));
    assert.equal(placeAt(located.places, located.text.indexOf('still two'))?.number, 2);
    assert.equal(placeAt(located.places, 0)?.number, 1);
    assert.equal(placeAt([], 5), undefined);
  });
});
