// src/protocol/sdk/answer-blobs.ts: an HTTP answer's placeholders replaced by their content's base64 as the answer is
// read, wherever the SDK's chunks cut it; nothing held back that cannot be a placeholder; nothing sent for a
// placeholder that is not the request's own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { AnswerBlobs, answerBlobsOf, BLOB_CHUNK_BYTES } from '../../src/protocol/sdk/answer-blobs.ts';
import { waitFor } from '../helpers.ts';

/** A Response whose body comes in the chunks given (as the SDK's stream gives them), and whether it was cancelled. */
function chunked(chunks: Uint8Array[], headers: Record<string, string> = {}): { response: Response; cancelled: () => unknown } {
  let reason: unknown;
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]!);
      else controller.close();
    },
    cancel(why) {
      reason = why ?? 'cancelled';
    },
  });
  return { response: new Response(body, { headers }), cancelled: () => reason };
}

/** `text` cut at the given offsets. */
function cut(text: string, at: number[]): Uint8Array[] {
  const bytes = Buffer.from(text);
  const edges = [0, ...at.filter((n) => n > 0 && n < bytes.length).sort((a, b) => a - b), bytes.length];
  return edges.slice(1).map((end, k) => bytes.subarray(edges[k]!, end));
}

const answer = (blob: string, id = 1) => JSON.stringify({ jsonrpc: '2.0', id, result: { contents: [{ uri: 'file:///r/big.bin', blob }] } });

test('a placeholder is valid base64 of whole quanta, and new for each request', () => {
  const placeholder = AnswerBlobs.open(new Request('http://x/mcp')).defer(Buffer.from('abc'));
  assert.equal(placeholder.length % 4, 0);
  assert.doesNotThrow(() => atob(placeholder));
  const another = AnswerBlobs.open(new Request('http://x/mcp')).defer(Buffer.from('abc'));
  assert.notEqual(placeholder.slice(0, -7), another.slice(0, -7));
});

test('the handler finds the placeholders of its own request only', () => {
  const request = new Request('http://x/mcp');
  const blobs = AnswerBlobs.open(request);
  assert.equal(answerBlobsOf(request), blobs);
  assert.equal(answerBlobsOf(new Request('http://x/mcp')), undefined);
  assert.equal(answerBlobsOf(undefined), undefined);
});

test('the answer read is the answer with the base64 in place, wherever the chunks cut the placeholder', async () => {
  const content = randomBytes(1000);
  for (let edge = 0; edge < 120; edge++) {
    const blobs = AnswerBlobs.open(new Request('http://x/mcp'));
    const placeholder = blobs.defer(content);
    const sdk = answer(placeholder);
    // One cut at every offset across the placeholder (and around it), and a second one a few bytes on.
    const start = sdk.indexOf(placeholder);
    const { response } = chunked(cut(sdk, [start - 40 + edge, start - 40 + edge + 7]), { 'content-length': String(sdk.length) });
    const spliced = blobs.splice(response);
    assert.equal(spliced.headers.get('content-length'), null, 'the length changed');
    assert.equal(await spliced.text(), answer(content.toString('base64')), `cut at ${edge - 40} from the placeholder`);
  }
});

test('a batch answer: each placeholder gets its own content, the text between passes as it was', async () => {
  const blobs = AnswerBlobs.open(new Request('http://x/mcp'));
  const contents = [randomBytes(BLOB_CHUNK_BYTES * 2 + 5), randomBytes(3), randomBytes(BLOB_CHUNK_BYTES)];
  const sdk = `[${contents.map((c, i) => answer(blobs.defer(c), i)).join(',')}]`;
  const spliced = await blobs.splice(chunked(cut(sdk, [1, 100, 101, 202])).response).text();
  assert.equal(spliced, `[${contents.map((c, i) => answer(c.toString('base64'), i)).join(',')}]`);
});

test('large content is written in pieces of BLOB_CHUNK_BYTES, not one string', async () => {
  const blobs = AnswerBlobs.open(new Request('http://x/mcp'));
  const content = randomBytes(BLOB_CHUNK_BYTES * 5 + 1);
  const reader = blobs.splice(chunked([Buffer.from(answer(blobs.defer(content)))]).response).body!.getReader();
  const sizes: number[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    sizes.push(value.byteLength);
  }
  assert.ok(Math.max(...sizes) <= (BLOB_CHUNK_BYTES / 3) * 4, `pieces of ${sizes.join(', ')} bytes`);
  assert.ok(sizes.length >= 6, `${sizes.length} pieces`);
});

test('an SSE event without a placeholder is passed on as it comes, before the stream ends', async () => {
  const blobs = AnswerBlobs.open(new Request('http://x/mcp'));
  blobs.defer(randomBytes(10));
  let more!: (chunk: Uint8Array | null) => void;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      more = (chunk) => (chunk ? controller.enqueue(chunk) : controller.close());
    },
  });
  const reader = blobs.splice(new Response(body, { headers: { 'content-type': 'text/event-stream' } })).body!.getReader();
  const event = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n';
  more(Buffer.from(event));
  // Read before the stream ends: an event held back until the next one came would hang here.
  assert.equal(Buffer.from((await reader.read()).value!).toString(), event);
  more(null);
  assert.equal((await reader.read()).done, true);
});

test('only the request\'s own placeholders are replaced: another\'s is text (a file may hold one), one not held cuts', async () => {
  const mine = AnswerBlobs.open(new Request('http://x/mcp'));
  const theirs = AnswerBlobs.open(new Request('http://x/mcp'));
  const own = mine.defer(randomBytes(10));
  const foreign = theirs.defer(randomBytes(10));
  const text = answer(foreign);
  assert.equal(await mine.splice(chunked([Buffer.from(text)]).response).text(), text);
  // Its own nonce with a number it never gave out: the answer is cut, not sent with a placeholder for content.
  const forged = own.slice(0, -7) + 'fffffff';
  const { response, cancelled } = chunked([Buffer.from(answer(forged)), Buffer.from('more'), Buffer.from('and more')]);
  await assert.rejects(mine.splice(response).text(), /does not own/);
  assert.ok(cancelled(), 'the SDK stream was not cancelled');
});

test('the client going away cancels the SDK stream and lets the content go', async () => {
  const blobs = AnswerBlobs.open(new Request('http://x/mcp'));
  const placeholder = blobs.defer(randomBytes(BLOB_CHUNK_BYTES * 4));
  const { response, cancelled } = chunked([Buffer.from(answer(placeholder)), Buffer.from('tail')]);
  const reader = blobs.splice(response).body!.getReader();
  await reader.read();
  await reader.read();
  await reader.cancel('gone');
  assert.equal(cancelled(), 'gone');
  // Released: the same placeholder is no longer this request's.
  await assert.rejects(blobs.splice(chunked([Buffer.from(answer(placeholder))]).response).text(), /does not own/);
});

test('the read budget\'s share of a content is given back once it is written, not when the handler returns', async () => {
  const blobs = AnswerBlobs.open(new Request('http://x/mcp'));
  let given = 0;
  const placeholder = blobs.defer(randomBytes(BLOB_CHUNK_BYTES * 3), () => given++);
  const reader = blobs.splice(chunked([Buffer.from(answer(placeholder)), Buffer.from('tail')]).response).body!.getReader();
  await reader.read(); // the JSON before the blob
  await reader.read(); // its first piece
  assert.equal(given, 0, 'given back before the content was written');
  for (;;) if ((await reader.read()).done) break;
  assert.equal(given, 1);
});

test('a client that takes no piece for the stall time lets the share go; one that goes away too', async () => {
  const stalled = AnswerBlobs.open(new Request('http://x/mcp'), undefined, 20);
  let given = 0;
  const reader = stalled.splice(chunked([Buffer.from(answer(stalled.defer(randomBytes(BLOB_CHUNK_BYTES * 3), () => given++)))]).response).body!.getReader();
  await reader.read();
  await reader.read();
  await waitFor(() => given === 1, 30_000, 'the stalled share to be given back');
  // Reading on afterwards does not give it back twice.
  for (;;) if ((await reader.read()).done) break;
  assert.equal(given, 1);

  const gone = AnswerBlobs.open(new Request('http://x/mcp'));
  let back = 0;
  const never = gone.defer(randomBytes(10), () => back++);
  gone.defer(randomBytes(10), () => back++);
  const cancelled = gone.splice(chunked([Buffer.from(answer(never)), Buffer.from('more')]).response).body!.getReader();
  await cancelled.read();
  await cancelled.cancel();
  assert.equal(back, 2, 'shares of contents never written were kept');
});

test('a content deferred after its answer was let go (its client left while the file was read) gives its share back at once', () => {
  const blobs = AnswerBlobs.open(new Request('http://x/mcp'));
  // The SDK answers an aborted request with no body while the handler still reads; the endpoint splices that, which
  // lets go of the answer. The handler's content comes after: its share was held for good, and every read on the
  // server waited behind it (a red-team pass: one aborted read of a 4 MB binary file).
  assert.equal(blobs.splice(new Response(null, { status: 499 })).status, 499);
  let given = 0;
  blobs.defer(randomBytes(BLOB_CHUNK_BYTES * 3), () => given++);
  assert.equal(given, 1);
});

test('an answer whose client takes none of it lets the share go after the stall time', async () => {
  const blobs = AnswerBlobs.open(new Request('http://x/mcp'), undefined, 20);
  let given = 0;
  const placeholder = blobs.defer(randomBytes(BLOB_CHUNK_BYTES * 3), () => given++);
  // Spliced, never read.
  const body = blobs.splice(chunked([Buffer.from(answer(placeholder))]).response).body!;
  await waitFor(() => given === 1, 30_000, 'the unsent share to be given back');
  // Read at last: the content still goes out whole, and the share is not given back twice.
  const text = await new Response(body).text();
  assert.equal(JSON.parse(text).result.contents[0].blob.length, (BLOB_CHUNK_BYTES * 3 * 4) / 3);
  assert.equal(given, 1);
});
