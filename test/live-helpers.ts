// Shared by the live tests: notification capture and listing-vs-disk comparison.
import { connectInProcess, listAll, type Connected, type Connector, type Era } from './helpers.ts';

export interface Notes {
  listChanged: number;
  /** uri -> titles received, in order */
  updated: Array<{ uri: string; title?: string }>;
  reset(): void;
}

/**
 * Connects (in process, or through `options.via`: connect runs the binary)
 * and records every list_changed and updated notification (on the modern
 * era, through a listen stream).
 */
export async function connectWithNotes(
  args: string[],
  options: { era?: Era; env?: Record<string, string>; via?: Connector<Connected> } = {},
): Promise<Connected & { notes: Notes }> {
  const { via = connectInProcess, ...rest } = options;
  const conn = await via(args, rest);
  const notes: Notes = {
    listChanged: 0,
    updated: [],
    reset() {
      this.listChanged = 0;
      this.updated.length = 0;
    },
  };
  conn.onNotification('notifications/resources/list_changed', () => {
    notes.listChanged++;
  });
  conn.onNotification('notifications/resources/updated', (params) => {
    notes.updated.push({ uri: params.uri as string, title: params.title as string | undefined });
  });
  await conn.listenListChanged();
  // notifications/progress is left to the SDK, which routes it to the request's onprogress.
  return Object.assign(conn, { notes });
}

/** Every URI resources/list returns, sorted. */
export async function listedUris(conn: Connected): Promise<string[]> {
  const { items } = await listAll(conn, 'resources/list', 'resources');
  return items.map((item) => item.uri as string).sort();
}

/** Resolves true once the listing equals the disk (compares the whole list each time). */
export async function listingEqualsDisk(conn: Connected, expected: () => string[]): Promise<boolean> {
  const want = expected();
  const got = await listedUris(conn);
  return got.length === want.length && got.every((uri, i) => uri === want[i]);
}

/** Explains a mismatch for an assertion message. */
export async function listingDiff(conn: Connected, expected: () => string[]): Promise<string> {
  const want = new Set(expected());
  const got = new Set(await listedUris(conn));
  const missing = [...want].filter((u) => !got.has(u)).slice(0, 10);
  const extra = [...got].filter((u) => !want.has(u)).slice(0, 10);
  return `missing ${JSON.stringify(missing)}; extra ${JSON.stringify(extra)}`;
}
