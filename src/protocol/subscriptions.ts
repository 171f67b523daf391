import type { IndexChange } from '../index/folder-index.ts';
import type { TurnBudget } from '../turns.ts';

/** URIs releaseInTurns drops at a time (about a twentieth of a millisecond). */
const RELEASE_SLICE = 100;
const NONE: ReadonlySet<string> = new Set();
/** Removed folders matched against the subscriptions one by one; more, in one walk up from each subscription. */
const FEW_FOLDERS = 8;

/** Who holds a subscription: `resources/subscribe` (2025 era), or a `subscriptions/listen` stream by its request id. */
export type Holder = 'subscribe' | { listen: string | number };

interface Subscribed {
  /** Sent in `updated` (path relative to its root). */
  title: string;
  /** Spelling the client used -> the holders that asked for it (listen streams match spellings exactly). */
  spellings: Map<string, Set<string>>;
}

function holderKey(holder: Holder): string {
  return holder === 'subscribe' ? 'subscribe' : `listen:${typeof holder.listen}:${String(holder.listen)}`;
}

/**
 * The URIs one client asked to hear about, by canonical URI: on 2025-11-25 and
 * older through `resources/subscribe`, on 2026-07-28 through the
 * `resourceSubscriptions` of its open `subscriptions/listen` streams. Same
 * meaning on both: a document that changed or vanished, a collection when
 * anything beneath it changed. One instance per connection, never
 * module-level.
 */
export class Subscriptions {
  private readonly byUri = new Map<string, Subscribed>();
  /** Holder key -> the URIs it holds: a stream that ends releases its own, not a walk of everyone's. */
  private readonly byHolder = new Map<string, Set<string>>();

  /** Subscribing twice is one subscription. `spelling` is what `updated` will carry (the canonical URI by default). */
  add(uri: string, title: string, holder: Holder = 'subscribe', spelling: string = uri): void {
    let entry = this.byUri.get(uri);
    if (!entry) this.byUri.set(uri, (entry = { title, spellings: new Map() }));
    let holders = entry.spellings.get(spelling);
    if (!holders) entry.spellings.set(spelling, (holders = new Set()));
    const key = holderKey(holder);
    holders.add(key);
    let held = this.byHolder.get(key);
    if (!held) this.byHolder.set(key, (held = new Set()));
    held.add(uri);
  }

  /** `resources/unsubscribe`: removes the subscription; harmless when there was none. */
  delete(uri: string): void {
    const entry = this.byUri.get(uri);
    if (!entry) return;
    this.byUri.delete(uri);
    for (const holders of entry.spellings.values()) {
      for (const key of holders) {
        const held = this.byHolder.get(key);
        held?.delete(uri);
        if (held?.size === 0) this.byHolder.delete(key);
      }
    }
  }

  /** URIs held by listen streams, each stream's counted (what the SDK matches every change against), but `except`'s. */
  listened(except?: Holder): number {
    const skip = except === undefined ? undefined : holderKey(except);
    let count = 0;
    for (const [key, held] of this.byHolder) if (key !== 'subscribe' && key !== skip) count += held.size;
    return count;
  }

  /** A listen stream ended: what only it asked for goes. Costs its own URIs, not everyone's. */
  release(holder: Holder): void {
    const key = holderKey(holder);
    const held = this.byHolder.get(key);
    if (!held) return;
    this.byHolder.delete(key);
    for (const uri of held) this.drop(uri, key);
  }

  /**
   * release, RELEASE_SLICE URIs at a time within `turns`: 50 streams of 1,000
   * URIs closing together released 50,000 URIs in one turn of the event loop
   * (27 ms in bench attack 7, every other client waiting). The holder is gone
   * at once; its URIs go over the next turns, and until then a change to one
   * of them may still be published for it, to no stream. Only for holders
   * whose key is never used again (an HTTP stream's own id): a new holder of
   * the same key would lose what it was given meanwhile.
   */
  async releaseInTurns(holder: Holder, turns: TurnBudget): Promise<void> {
    const key = holderKey(holder);
    const held = this.byHolder.get(key);
    if (!held) return;
    this.byHolder.delete(key);
    let n = 0;
    for (const uri of held) {
      if (n++ % RELEASE_SLICE === 0) await turns.slice();
      this.drop(uri, key);
    }
  }

  /** `key` no longer holds `uri`. */
  private drop(uri: string, key: string): void {
    const entry = this.byUri.get(uri);
    if (!entry) return;
    for (const [spelling, holders] of entry.spellings) {
      holders.delete(key);
      if (holders.size === 0) entry.spellings.delete(spelling);
    }
    if (entry.spellings.size === 0) this.byUri.delete(uri);
  }

  /** The URIs `holder` holds (none: an empty set). */
  heldBy(holder: Holder): ReadonlySet<string> {
    return this.byHolder.get(holderKey(holder)) ?? NONE;
  }

  /** Holders (resources/subscribe, each open listen stream) holding anything: for tests, both return to 0. */
  get holders(): number {
    return this.byHolder.size;
  }

  has(uri: string): boolean {
    return this.byUri.has(uri);
  }

  titleOf(uri: string): string | undefined {
    return this.byUri.get(uri)?.title;
  }

  /** The URIs to put in `updated` for a subscribed canonical URI. */
  spellingsOf(uri: string): string[] {
    return [...(this.byUri.get(uri)?.spellings.keys() ?? [])];
  }

  get size(): number {
    return this.byUri.size;
  }

  clear(): void {
    this.byUri.clear();
    this.byHolder.clear();
  }

  /**
   * Subscribed URIs a committed change concerns: a document that changed or
   * vanished, and every collection with something changed beneath it (or
   * itself changed or vanished).
   */
  affectedBy(change: IndexChange): Set<string> {
    const hit = new Set<string>();
    if (this.byUri.size === 0) return hit;
    const visit = (uri: string) => {
      for (const at of upward(uri)) {
        if (this.byUri.has(at)) hit.add(at);
        // A folder named without its trailing slash, listened to before it was made (so kept as spelled): the
        // folder. It never heard of the folder's making, nor of anything in it (a red-team finding).
        if (at.endsWith('/') && this.byUri.has(at.slice(0, -1))) hit.add(at.slice(0, -1));
      }
    };
    const mtimeOnly = (change as { mtimeOnly?: ReadonlySet<string> }).mtimeOnly;
    for (const row of change.upserted) if (!mtimeOnly?.has(row.uri)) visit(row.uri);
    const removedFolders = new Set<string>();
    for (const uri of change.removed) {
      visit(uri);
      if (uri.endsWith('/')) removedFolders.add(uri);
    }
    // A removed collection takes every subscribed URI beneath it along. One pass over the subscriptions, each
    // walked up its folders: a pass for each removed folder (an `rm -rf` of 3,000 folders, 200,000 URIs listened
    // to) held the event loop 4.9 s (a red-team finding).
    if (removedFolders.size > 0 && removedFolders.size <= FEW_FOLDERS) {
      // A few (the usual one): a prefix test each, which allocates nothing (the walk up was 7 times slower for one).
      for (const sub of this.byUri.keys()) {
        for (const folder of removedFolders) {
          if (!sub.startsWith(folder) && `${sub}/` !== folder) continue;
          hit.add(sub);
          break;
        }
      }
    } else if (removedFolders.size > 0) {
      for (const sub of this.byUri.keys()) {
        const named = sub.endsWith('/') ? sub : `${sub}/`;
        for (const at of upward(named)) {
          if (!removedFolders.has(at)) continue;
          hit.add(sub);
          break;
        }
      }
    }
    return hit;
  }
}

/** `uri`, then each enclosing collection up to `file:///`. */
function* upward(uri: string): Generator<string> {
  for (let at = uri; ; ) {
    yield at;
    const cut = at.lastIndexOf('/', at.length - 2);
    if (cut < 'file://'.length) return;
    at = at.slice(0, cut + 1);
  }
}
