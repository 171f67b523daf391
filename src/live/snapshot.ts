import { createHash } from 'node:crypto';
import { chmodSync, closeSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import type { Statement } from 'better-sqlite3';
import type { IndexChange } from '../entry.ts';
import { getMeta, setMeta, type Db } from '../index/db.ts';
import type { Logger } from '../log.ts';
import { uriToPath, type Root } from '../uri.ts';

/** Pruned natively, as the parcel watcher does: never served, often huge. */
const SNAPSHOT_IGNORE = ['**/.git', '**/node_modules'];

/**
 * @parcel/watcher's record of each served tree (its `writeSnapshot`), kept
 * beside the index file, so that a warm start asks parcel what changed since
 * (`getEventsSince`: on Linux a native crawl that compares, about 1 s for
 * 100k files where our stat walk took about 5 s) instead of diffing the whole
 * tree in JavaScript.
 *
 * Why it is safe: a snapshot is taken while a watcher runs, and kept only
 * once the index holds everything that changed before it was taken (the
 * start-up catch-up, and what the watcher reported meanwhile). What changes
 * on the disk after it is reported by the next start; but the index changes
 * after it too, while the server runs, and a change undone while no server
 * ran (a file made, then removed) is no change to parcel. So every path the
 * index changes after the snapshot is taken is recorded (`record`, in the
 * table snapshot_changes), and the next start looks at those as well; both
 * are reconciled path by path (a path that did not change in the index's
 * eyes writes nothing). A kept snapshot drops the records made before it was
 * taken. An older snapshot only reports more. A snapshot is named by its folder, so another folder's never
 * answers. The index records the size and mtime of each snapshot it kept,
 * and a snapshot that does not match is not used: parcel reads a damaged or
 * missing snapshot as an empty tree, which would report every file as new
 * and no deletion at all. Without parcel, without a file for the index, or
 * without a matching snapshot, the caller diffs the whole tree as before.
 */
export class TreeSnapshots {
  private readonly files: readonly { root: Root; file: string }[];
  private readonly recordStmt: Statement;
  /** Order of the last recorded change (snapshot_changes.seq). */
  private seq: number;

  constructor(
    roots: readonly Root[],
    dbFile: string,
    private readonly db: Db,
    private readonly log: Logger,
  ) {
    this.files = roots.map((root) => ({ root, file: snapshotFile(dbFile, root.path) }));
    this.recordStmt = db.prepare('INSERT INTO snapshot_changes (path, seq) VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET seq = excluded.seq');
    this.seq = (db.prepare('SELECT max(seq) FROM snapshot_changes').pluck().get() as number | null) ?? 0;
  }

  /** This run keeps no snapshot: the current ones are no longer trusted (changes from now on are not recorded). */
  forget(): void {
    for (const { file } of this.files) this.db.prepare('DELETE FROM meta WHERE key = ?').run(metaKey(file));
  }

  /** Records the paths of a change the index committed (call it for every change made after take() began). */
  record(change: IndexChange): void {
    this.db.transaction(() => {
      for (const row of change.upserted) this.recordStmt.run(uriToPath(row.uri), ++this.seq);
      for (const uri of change.removed) this.recordStmt.run(uriToPath(uri), ++this.seq);
    })();
  }

  /** Snapshots live beside an index file; an index in memory has none. */
  static for(roots: readonly Root[], dbFile: string, db: Db, log: Logger): TreeSnapshots | null {
    return dbFile === ':memory:' ? null : new TreeSnapshots(roots, dbFile, db, log);
  }

  /** Every path that changed since the snapshots (all roots), or null when any root has no usable one. */
  async changedSince(): Promise<string[] | null> {
    const parcel = await loadParcel();
    if (!parcel) return null;
    const paths: string[] = [];
    for (const { root, file } of this.files) {
      if (getMeta(this.db, metaKey(file)) !== fingerprint(file)) {
        this.log.debug(`no watcher snapshot of ${root.path} that this index kept`);
        return null;
      }
      try {
        const events = await parcel.getEventsSince(root.path, file, { ignore: SNAPSHOT_IGNORE });
        for (const event of events) paths.push(event.path);
      } catch (error) {
        // Missing (first warm start after an upgrade, a crash before it was written) or unreadable: diff instead.
        this.log.debug(`no usable watcher snapshot for ${root.path}: ${(error as Error).message}`);
        return null;
      }
    }
    for (const path of this.db.prepare('SELECT path FROM snapshot_changes').pluck().iterate() as Iterable<string>) paths.push(path);
    return paths;
  }

  /**
   * Records each tree as it is now, beside the current snapshots: they are
   * kept (replace the current ones) only when `keep` is called, which the
   * caller does once everything that changed before now is in the index.
   * Null when parcel or a write failed (the current snapshots stay).
   */
  async take(): Promise<{ keep(): void } | null> {
    const parcel = await loadParcel();
    if (!parcel) return null;
    // Records up to here are of changes the new snapshots already see.
    const takenAt = this.seq;
    const next = this.files.map(({ root, file }) => ({ root, file, taken: `${file}.next` }));
    try {
      for (const { root, taken } of next) {
        // Security: a snapshot names every path, ignored ones too: the owner's alone, like the index.
        // Made 0600 before parcel writes it (a file it truncates keeps its mode), and narrowed after.
        closeSync(openSync(taken, 'w', 0o600));
        chmodSync(taken, 0o600);
        await parcel.writeSnapshot(root.path, taken, { ignore: SNAPSHOT_IGNORE });
        chmodSync(taken, 0o600);
      }
    } catch (error) {
      for (const { taken } of next) rmSync(taken, { force: true });
      this.log.debug(`cannot write a watcher snapshot: ${(error as Error).message}`);
      return null;
    }
    return {
      keep: () => {
        // One rename each: a process killed in between leaves older snapshots, which only report more.
        for (const { file, taken } of next) {
          renameSync(taken, file);
          setMeta(this.db, metaKey(file), fingerprint(file));
        }
        this.db.prepare('DELETE FROM snapshot_changes WHERE seq <= ?').run(takenAt);
      },
    };
  }
}

/** `<index file>.<hash of the folder's path>.snapshot` */
export function snapshotFile(dbFile: string, rootPath: string): string {
  return `${dbFile}.${createHash('sha256').update(rootPath).digest('hex').slice(0, 16)}.snapshot`;
}

const metaKey = (file: string) => `snapshot ${file}`;

/** Size and mtime of a snapshot file, or '' when there is none. */
function fingerprint(file: string): string {
  try {
    const st = statSync(file);
    return `${st.size} ${st.mtimeMs}`;
  } catch {
    return '';
  }
}

type Parcel = typeof import('@parcel/watcher');

async function loadParcel(): Promise<Parcel | null> {
  try {
    return (await import('@parcel/watcher')).default as unknown as Parcel;
  } catch {
    return null; // no native binary for this platform: the caller diffs
  }
}
