import type { IndexChange } from '../index/folder-index.ts';

/**
 * The URIs one client subscribed to (`resources/subscribe`), with the title
 * to send in `updated`. One instance per server: subscriptions belong to a
 * connection, never to the module.
 */
export class Subscriptions {
  /** canonical URI -> title (path relative to its root) */
  private readonly byUri = new Map<string, string>();

  add(uri: string, title: string): void {
    this.byUri.set(uri, title);
  }

  /** Removes the subscription; harmless when there was none. */
  delete(uri: string): void {
    this.byUri.delete(uri);
  }

  has(uri: string): boolean {
    return this.byUri.has(uri);
  }

  titleOf(uri: string): string | undefined {
    return this.byUri.get(uri);
  }

  get size(): number {
    return this.byUri.size;
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
      // The URI itself, then each enclosing collection up to file:///.
      for (let at = uri; ; ) {
        if (this.byUri.has(at)) hit.add(at);
        const cut = at.lastIndexOf('/', at.length - 2);
        if (cut < 'file://'.length) break;
        at = at.slice(0, cut + 1);
      }
    };
    for (const row of change.upserted) visit(row.uri);
    for (const uri of change.removed) {
      visit(uri);
      // A removed collection takes every subscribed URI beneath it along.
      if (uri.endsWith('/')) for (const sub of this.byUri.keys()) if (sub.startsWith(uri)) hit.add(sub);
    }
    return hit;
  }
}
